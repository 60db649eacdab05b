"""Packaging promises: ``make run`` installs only the core dependencies, so the main job
must run without any extra (matplotlib, pandas, PySpark, Ray, the test tools); the
package is typed and licensed; the CLI says its version."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import strataflow

ROOT = Path(__file__).resolve().parents[1]
EXTRAS_ONLY = ["matplotlib", "pandas", "pyspark", "ray", "hypothesis", "pytest", "s3fs", "moto", "boto3"]

_BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is an extra, not installed by make run")
sys.meta_path.insert(0, Block())
from strataflow.cli import main
sys.exit(main(["run", "kmeans", "--size", "4MB", "--quiet", "--parallelism", "1"]))
"""


def test_the_main_job_runs_without_any_extra(tmp_path):
    code = _BLOCK.format(blocked=set(EXTRAS_ONLY))  # data generated under tmp_path/data
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "result check: ok" in done.stdout


def test_core_dependencies_leave_the_extras_out():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    assert not any(name in core for name in EXTRAS_ONLY)
    assert {"dev", "plots", "pandas", "peers", "ray", "s3", "sql"} <= set(project["optional-dependencies"])


def test_the_package_is_typed_and_licensed():
    assert (Path(strataflow.__file__).parent / "py.typed").exists()
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]
    assert (ROOT / "CHANGELOG.md").exists()


def test_the_cli_says_its_version():
    out = subprocess.run([sys.executable, "-m", "strataflow.cli", "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"strataflow {strataflow.__version__}"


def test_metadata_names_authors_urls_and_classifiers():
    """What an index page shows: who, where, and for which Pythons and systems. The
    licence is the SPDX expression alone: setuptools >= 77 (the build requirement)
    refuses a ``License ::`` classifier beside it (PEP 639)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["authors"] == [{"name": "strataflow developers"}]
    assert set(project["urls"]) == {"Homepage", "Documentation", "Issues"}
    assert all(url.startswith("https://") for url in project["urls"].values())
    classifiers = project["classifiers"]
    assert len(set(classifiers)) == len(classifiers)
    least = int(project["requires-python"].removeprefix(">=3."))
    versions = {int(c.rsplit(".", 1)[1]) for c in classifiers if c.startswith("Programming Language :: Python :: 3.")}
    assert min(versions) == least and versions == set(range(least, max(versions) + 1))
    assert "Operating System :: POSIX" in classifiers and any(c.startswith("Topic ::") for c in classifiers)
    assert project["license"] == "Apache-2.0" and not any(c.startswith("License ::") for c in classifiers)
