"""The options' table (``strataflow/config/options.py``) is the one place an option is
declared: every option in it is in ``Context``'s signature with its default and in its
docstring, is a field of ``Config``, is settable by argument, by ``conf=`` and by
``STRATAFLOW_<NAME>`` with that precedence, and, when the table gives it a flag, by
``strataflow run``. A new option added to the table is held to all of this by these tests
(they ask for a sample value of it below, and fail naming the option until it has one)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import pickle

import pytest

from strataflow import Context
from strataflow.cli import _context_options, build_parser
from strataflow.config import Config, ConfigError
from strataflow.config.layers import layered_options
from strataflow.config.options import NAMES, OPTIONS, by_name

_MORE = (os.cpu_count() or 1) + 1

#: option -> (a value as text, other options it needs to mean something, the field Config then
#: holds, as a function of the checked value when the value is not plain)
SAMPLES: dict[str, tuple] = {
    "memory": ("96MB", {}, 96 << 20),
    "parallelism": (str(_MORE), {}, _MORE),  # the default is the cores
    "local_dirs": ("{tmp}/a" + os.pathsep + "{tmp}/b", {}, ["{tmp}/a", "{tmp}/b"]),
    "shuffle_dirs": ("{tmp}/s", {}, ["{tmp}/s"]),
    "event_log": ("{tmp}/log/events.jsonl", {}, "{tmp}/log/events.jsonl"),
    "shuffle_sync": ("yes", {}, True),
    "max_task_attempts": ("7", {}, 7),
    "max_stage_attempts": ("2", {}, 2),
    "task_max_failures": ("3", {}, 3),
    "progress": ("false", {}, False),
    "app_name": ("mine", {}, "mine"),
    "blas_threads": (str(_MORE), {}, _MORE),  # the default is at most the cores
    "storage_fraction": ("0.25", {}, 0.25),
    "policy": ("SPARK", {}, "spark"),
    "serializer": ("pickle", {}, lambda s: s.name == "pickle"),
    "disk_capacity": ("2MB", {}, 2 << 20),
    "mmap_memory": ("8MB", {}, 8 << 20),
    "mmap_share": ("0.1,0.3", {}, (0.1, 0.3)),
    "gc_free_cache": ("off", {}, False),
    "tiers": ('[{"name": "ssd", "dirs": ["{tmp}/t"]}]', {}, lambda t: t is not None and [(s.name, s.dirs) for s in t]
              == [("ssd", [os.path.join(os.environ["SF_TMP"], "t")])]),
    "async_eviction": ("on", {}, True),
    "eviction_watermarks": ("0.5,0.8", {}, (0.5, 0.8)),
    "backend": ("threads", {"parallelism": 2}, "threads"),
    "executors": ("2", {"backend": "processes", "parallelism": 1}, 2),
    "cores_per_executor": ("2", {"backend": "processes", "parallelism": 4}, 2),
    "executor_memory": ("32MB", {}, 32 << 20),
    "locality_wait": ("0.5", {}, 0.5),
    "address": ("auto", {"backend": "ray"}, "auto"),
    "default_level": ("DISK_ONLY", {}, lambda level: level.name == "DISK_ONLY"),
    "live": ("1", {}, True),
    "max_partitions": ("50", {}, 50),
    "default_parallelism": ("5", {}, 5),
    "store": ("{tmp}/store", {}, "{tmp}/store"),
    "input_cache": ("OFF", {}, "off"),
}


def _sample(name: str, tmp: str) -> tuple[str, dict, object]:
    assert name in SAMPLES, f"option {name!r} has no sample value in tests/test_option_table.py: add one"
    text, extra, want = SAMPLES[name]
    fill = (lambda v: v.replace("{tmp}", tmp)) if "{tmp}" in text else (lambda v: v)
    text = fill(text)
    if isinstance(want, list):
        want = [fill(w) for w in want]
    elif isinstance(want, str):
        want = fill(want)
    return text, extra, want


def _holds(value: object, want: object) -> bool:
    return want(value) if callable(want) else value == want


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    for d in ("a", "b", "s", "t"):
        (tmp_path / d).mkdir()
    monkeypatch.setenv("SF_TMP", str(tmp_path))
    # options of this test's own only: nothing from the machine's environment
    for name in NAMES:
        monkeypatch.delenv(by_name[name].env, raising=False)
    return str(tmp_path)


def test_every_option_has_a_sample_and_the_table_no_duplicate():
    assert len(set(NAMES)) == len(NAMES)
    assert sorted(SAMPLES) == sorted(NAMES)
    for opt in OPTIONS:
        assert set(opt.needs) <= set(NAMES) - {opt.name}, opt.name


def test_context_signature_lists_every_option_with_its_default_in_table_order():
    params = list(inspect.signature(Context).parameters.values())
    assert [p.name for p in params] == [*NAMES, "conf"]
    for p, opt in zip(params, OPTIONS):
        assert p.default == opt.default and p.annotation == opt.type, opt.name
    assert list(inspect.signature(Context.__init__).parameters)[0] == "self"
    build = inspect.signature(Config.build).parameters
    assert [(p.name, p.default) for p in build.values()] == [(o.name, o.default) for o in OPTIONS]


def test_every_option_is_documented_in_the_context_docstring():
    doc = " ".join((Context.__doc__ or "").split())
    for opt in OPTIONS:
        assert opt.doc.strip(), f"{opt.name}: empty doc line"
        assert f"{opt.name}: {' '.join(opt.doc.split())}" in doc, opt.name
    assert "conf: any of the options above" in doc


def test_config_fields_are_the_options_and_config_pickles():
    assert [f.name for f in dataclasses.fields(Config)] == list(NAMES)
    cfg = Config.build(memory="64MB", parallelism=1)
    again = pickle.loads(pickle.dumps(cfg))
    assert type(again) is Config
    assert all(getattr(again, n) == getattr(cfg, n) for n in NAMES if n != "serializer")
    assert again.serializer.name == cfg.serializer.name


@pytest.mark.parametrize("name", NAMES)
def test_each_option_by_argument_conf_and_environment_in_that_order(name, tmp):
    text, extra, want = _sample(name, tmp)
    opt = by_name[name]
    argument = opt.from_text(text)
    assert _holds(getattr(Config.build(**extra, **{name: argument}), name), want)
    assert not _holds(getattr(Config.build(**extra), name), want)  # the sample is not the default
    env = {opt.env: text}
    for conf, environ, source in [({name: text}, {}, "conf"), ({}, env, f"env {opt.env}"),
                                  ({name: text}, {opt.env: "<not read: conf wins>"}, "conf")]:
        values, sources = layered_options(NAMES, extra, conf, environ)
        assert sources[name] == source and all(sources[k] == "argument" for k in extra)
        assert _holds(getattr(Config.build(**extra, **values), name), want), (name, source)
    # an argument wins over both: the default given as an argument, garbage in conf and env
    given = {**extra, name: opt.default}
    values, sources = layered_options(NAMES, given, {name: "<not read>"}, {opt.env: "<not read>"})
    assert sources[name] == "argument" and name not in values


def test_a_context_takes_options_by_position_conf_and_environment(tmp, monkeypatch):
    monkeypatch.setenv("STRATAFLOW_APP_NAME", "from-env")
    with Context("64MB", 1, conf={"max_partitions": "40"}, backend="threads", progress=False) as c:
        assert (c.config.memory, c.config.parallelism, c.config.max_partitions) == (64 << 20, 1, 40)
        assert c.config.app_name == "from-env" and c.config_sources["app_name"] == "env STRATAFLOW_APP_NAME"
        assert c.config_sources["memory"] == "argument" and c.config_sources["live"] == "default"


def test_unknown_options_fail_as_before():
    with pytest.raises(TypeError, match="unexpected keyword argument 'memroy'"):
        Context(memroy="1GB")
    with pytest.raises(TypeError, match="unexpected keyword argument 'memroy'"):
        Config.build(memroy="1GB")
    with pytest.raises(ConfigError, match=r"^conf: unknown option\(s\) 'STRATAFLOW_MEMORY'; options are the "
                                          r"Context's arguments: memory, parallelism"):
        Context(conf={"STRATAFLOW_MEMORY": "1GB"})
    with pytest.raises(TypeError):
        Context("64MB", 1, *[None] * len(NAMES))  # more positional arguments than options and conf


def _run_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["run"]


def test_the_run_command_has_a_flag_for_each_option_the_table_marks(tmp):
    run = _run_parser()
    strings = {s for a in run._actions for s in a.option_strings}
    flagged = [o for o in OPTIONS if o.flag is not None]
    assert {"backend", "executors", "address", "live", "tiers", "async_eviction", "mmap_memory"} <= {
        o.name for o in flagged}
    for opt in flagged:
        assert opt.flag.option_string(opt.name) in strings, opt.name
        assert opt.flag.in_cli or opt.flag.help, opt.name
    for opt in flagged:
        if opt.flag.in_cli:
            continue
        text, extra, want = _sample(opt.name, tmp)
        argv = [opt.flag.option_string(opt.name)] + ([] if opt.flag.value == "switch" else [text])
        args = run.parse_args(["kmeans", *argv])
        got = _context_options(args)
        assert list(got) == [opt.name], opt.name
        assert _holds(getattr(Config.build(**extra, **got), opt.name), want), opt.name
    args = run.parse_args(["kmeans", "--backend", "threads", "--tier", f"ssd:{tmp}/t", "--level", "AUTO"])
    assert _context_options(args) == {"backend": "threads", "tiers": [{"name": "ssd", "dirs": [f"{tmp}/t"]}]}
    # one accounting for every level: memory= holds the mapped pages too unless a size is given
    assert Config.build(memory="64MB").mmap_memory == "auto"
    assert Config.build(memory="64MB", default_level="AUTO").mmap_memory == "auto"
    assert _context_options(run.parse_args(["kmeans"])) == {}
    json.dumps(_context_options(run.parse_args(["kmeans", "--live"])))  # plain values only
