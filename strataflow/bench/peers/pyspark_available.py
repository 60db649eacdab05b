"""Whether the PySpark peer can run here: pyspark (>= 3.5) installed and a Java it
supports (17+ for PySpark 4) found in ``JAVA_HOME`` or on the PATH, and if not, why.

Apart from ``pyspark_peer.py`` because ``bench`` and the tests ask it before any run, and
the answer (cached for the process) needs neither the run's code nor a JVM start.
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["available"]

_AVAILABLE: tuple[bool, str] | None = None


def _java_version(java: str) -> tuple[int | None, str]:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run {java}: {exc}"
    text = (out.stderr or out.stdout).strip()
    first = text.splitlines()[0] if text else ""
    if out.returncode != 0 or '"' not in first:
        return None, f"{java} -version failed: {first or out.returncode}"
    ver = first.split('"')[1]
    major = ver.split(".")[1] if ver.startswith("1.") else ver.split(".")[0].split("-")[0]
    try:
        return int(major), first
    except ValueError:
        return None, f"cannot read the Java version from {first!r}"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def available() -> tuple[bool, str]:
    """Whether pyspark (>= 3.5) and a Java it supports are usable here, and if not, why."""
    global _AVAILABLE
    if _AVAILABLE is not None:
        return _AVAILABLE
    from importlib import metadata, util

    if util.find_spec("pyspark") is None:
        _AVAILABLE = (False, "pyspark is not installed (pip install 'strataflow[peers]')")
        return _AVAILABLE
    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        import pyspark

        version = pyspark.__version__
    nums = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    if nums < (3, 5):
        _AVAILABLE = (False, f"pyspark {version} is older than 3.5")
        return _AVAILABLE
    java = _java()
    if java is None:
        _AVAILABLE = (False, "no java on PATH or in JAVA_HOME (PySpark needs Java 17)")
        return _AVAILABLE
    major, info = _java_version(java)
    if major is None:
        _AVAILABLE = (False, info)
        return _AVAILABLE
    need = 17 if nums >= (4, 0) else 8
    if major < need:
        _AVAILABLE = (False, f"pyspark {version} needs Java {need}+, found {info}")
        return _AVAILABLE
    _AVAILABLE = (True, f"pyspark {version}, {info}")
    return _AVAILABLE

