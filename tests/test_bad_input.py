"""Bad input gets a clear error naming the problem, at once: never a raw traceback from
deep inside, and never four identical retries of an error the input itself causes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from strataflow import ConfigError, Context, TaskFailedError
from strataflow.cli import main
from strataflow.io.sources import InputError


def _said(capsys) -> str:
    """What the CLI printed, its line wrapping undone."""
    got = capsys.readouterr()
    return " ".join((got.out + got.err).split())


@pytest.fixture
def c(tmp_path):
    with Context(backend="threads", parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)]) as ctx:
        yield ctx


@pytest.mark.parametrize("kw,match", [
    ({"memory": float("inf")}, "memory: a size must be a finite number"),
    ({"memory": float("nan")}, "memory: a size must be a finite number"),
    ({"storage_fraction": "x"}, "storage_fraction"),
])
def test_bad_options_are_named(kw, match):
    with pytest.raises(ConfigError, match=match):
        Context(backend="threads", progress=False, **kw)


def test_a_file_that_is_not_npy_or_is_truncated_is_named(c, tmp_path):
    (tmp_path / "text.npy").write_text("hello")
    with pytest.raises(ConfigError, match=r"text\.npy.*5 bytes.*not a readable \.npy"):
        c.npy_file(tmp_path / "text.npy")
    np.save(tmp_path / "whole.npy", np.arange(1000.0))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "whole.npy").read_bytes()[:500])
    with pytest.raises(ConfigError, match=r"cut\.npy.*500 bytes.*truncated"):
        c.npy_file(tmp_path / "cut.npy")


def test_text_that_is_not_utf8_fails_at_once_naming_the_file(c, tmp_path):
    (tmp_path / "in.txt").write_bytes(b"good line\nbad \xff\xfe line\n")
    with pytest.raises(TaskFailedError, match=r"failed 1 time\(s\).*in\.txt.*is not utf-8 text") as info:
        c.text_file(tmp_path / "in.txt").count()
    assert isinstance(info.value.__cause__, InputError)


def test_a_csv_that_does_not_parse_fails_at_once(c, tmp_path):
    (tmp_path / "in.csv").write_text("1,2,3\n4,5\n")
    with pytest.raises(TaskFailedError, match=r"failed 1 time\(s\).*in\.csv.*cannot be parsed"):
        c.csv_file(tmp_path / "in.csv", column_names=["a", "b", "c"]).count()


@pytest.mark.parametrize("argv,option", [
    (["run", "kmeans", "--pressure", "0"], "--pressure"),
    (["run", "kmeans", "--partitions", "0"], "--partitions"),
    (["run", "kmeans", "--iterations", "0"], "--iterations"),
    (["run", "kmeans", "--parallelism", "-2"], "--parallelism"),
    (["gen", "kmeans", "--points", "0", "--out", "x"], "--points"),
    (["run", "kmeans", "--pressure", "nan"], "--pressure"),
])
def test_cli_numbers_that_must_be_positive(argv, option, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert f"argument {option}: must be > 0" in capsys.readouterr().err


def test_cli_gen_into_an_existing_file_and_a_manifest_that_is_not_json(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert main(["gen", "kmeans", "--points", "100", "--out", str(tmp_path / "f")]) == 2
    assert "is an existing file" in _said(capsys)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "manifest.json").write_text("{not json")
    assert main(["run", "kmeans", "--data", str(tmp_path / "d"), "--quiet"]) == 2
    out = _said(capsys)
    assert "manifest.json" in out and "not JSON" in out


def test_a_cli_error_prints_its_path_whole_and_literally(tmp_path, capsys):
    # square brackets are rich markup, and rich used to break a long path across lines
    d = tmp_path / "[2024]" / ("a-directory-name-long-enough-to-pass-any-terminal-width-" * 3)
    d.mkdir(parents=True)
    (d / "manifest.json").write_text("{not json")
    assert main(["run", "kmeans", "--data", str(d), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(d / "manifest.json") in err  # the brackets kept, no newline inside it


def test_kmeans_data_of_the_wrong_shape_is_named(tmp_path, capsys):
    d = tmp_path / "km"
    assert main(["gen", "kmeans", "--points", "500", "--format", "npy", "--out", str(d)]) == 0
    np.save(d / "points.npy", np.ones((500, 7)))
    assert main(["run", "kmeans", "--data", str(d), "--quiet", "--backend", "threads"]) == 2
    out = _said(capsys)
    assert "shape (500, 7)" in out and "20 dimensions" in out
    json.loads((d / "manifest.json").read_text())  # untouched
