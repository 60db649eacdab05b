"""``strataflow run`` as a first-hour user meets it: every option checked before any data
is generated (a misspelt level used to be reported after 320 MB of input was written),
``--data NEWDIR`` generating there, ``--no-check`` never claiming a check passed, help
that shows defaults and the workloads, and a heading that does not wrap at 80 columns."""

from __future__ import annotations

import json

import pytest

from strataflow.cli import main

SMALL = ["--points", "400", "--format", "npy", "--quiet", "--backend", "threads", "--parallelism", "1",
         "--iterations", "2"]


def _said(capsys) -> str:
    out = capsys.readouterr()
    return " ".join((out.out + out.err).split())


@pytest.mark.parametrize("bad, named", [
    (["--level", "MEMORY_AND_DISKK"], "unknown level 'MEMORY_AND_DISKK'"),
    (["--policy", "fifo-ish"], "fifo-ish"),
    (["--serializer", "json"], "unknown serializer 'json'"),
    (["--set", "colour=blue"], "colour"),
    (["--json", "no/such/folder/run.json"], "--json"),
    (["--tier", "ssd:/no/such/dir/at/all:1GB", "--memory", "64MB"], "/no/such/dir/at/all"),
    (["--backend", "threads", "--executors", "3"], "executors"),
])
def test_every_option_is_checked_before_any_data_is_generated(tmp_path, monkeypatch, capsys, bad, named):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "kmeans", "--quiet", *bad]) == 2
    assert named in _said(capsys)
    assert not (tmp_path / "data").exists()  # nothing generated (320 MB by default)


def test_data_names_a_new_directory_to_generate_into(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    new = tmp_path / "fresh" / "km"
    assert main(["run", "kmeans", "--data", str(new), *SMALL]) == 0
    assert json.loads((new / "manifest.json").read_text())["points"] == 400
    assert not (tmp_path / "data").exists()
    assert "result check: ok" in _said(capsys)
    # again: the generated data are read, not generated anew
    before = (new / "manifest.json").stat().st_mtime_ns
    assert main(["run", "kmeans", "--data", str(new), *SMALL]) == 0
    assert (new / "manifest.json").stat().st_mtime_ns == before
    # a directory that holds something else is refused, not written into
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["run", "kmeans", "--data", str(other), *SMALL]) == 2
    assert "no manifest.json" in _said(capsys) and sorted(p.name for p in other.iterdir()) == ["notes.txt"]


def test_no_check_says_skipped_and_never_ok(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.json"
    assert main(["run", "kmeans", "--data", str(tmp_path / "km"), *SMALL, "--no-check", "--json", str(out)]) == 0
    said = _said(capsys)
    assert "result check: skipped" in said and "result check: ok" not in said
    assert json.loads(out.read_text())["result_check"] == "skipped"


def test_run_help_shows_defaults_and_what_each_workload_is(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    said = _said(capsys)
    assert "(default: MEMORY_AND_DISK)" in said and "(default: 320MB)" in said and "(default: 0)" in said
    assert "(default: None)" not in said
    assert "kmeans K-means clustering" in said and "wordcount word count" in said


def test_the_heading_fits_80_columns(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "kmeans", "--data", "km", *SMALL]) == 0
    lines = capsys.readouterr().out.splitlines()
    heading = next(line for line in lines if line.startswith("kmeans (batches"))
    assert heading.rstrip().endswith("MiB")  # "319 MiB" no longer split over two lines


def test_the_check_is_announced_and_timed(tmp_path, monkeypatch):
    """A check that re-reads the whole input can take longer than the run: the runner
    announces it (``strataflow run`` shows a status line) and times it apart."""
    from contextlib import nullcontext

    from strataflow.workloads.runner import run_workload

    monkeypatch.chdir(tmp_path)
    assert main(["gen", "kmeans", "--points", "400", "--format", "npy", "--out", "km"]) == 0
    said: list[str] = []
    report = run_workload("kmeans", "km", memory="64MB", parallelism=1, iterations=2,
                          context_options={"backend": "threads"},
                          announce_check=lambda what: (said.append(what), nullcontext())[1])
    assert report["result_check"] == "ok" and report["check_s"] > 0
    assert said == ["checking the result against an independent run over the whole input"]
    said.clear()
    report = run_workload("kmeans", "km", memory="64MB", parallelism=1, iterations=2, check=False,
                          context_options={"backend": "threads"}, announce_check=lambda what: said.append(what))
    assert report["result_check"] == "skipped" and said == []
