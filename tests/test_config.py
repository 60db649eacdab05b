"""One configuration (``strataflow/config/__init__.py``): ``Config.build`` is the single place that
checks every ``Context`` option, keyword-only; the watermark check is one function, so the
Context and the simulator reject the same values with the same message. (The import rules
between layers: ``tests/test_house.py``.)"""

from __future__ import annotations

import inspect
import os

import pytest

from strataflow import Context
from strataflow.cli import main as cli_main
from strataflow.config import Config, ConfigError
from strataflow.common.checks import DEFAULT_WATERMARKS, check_watermarks
from strataflow.simulate import simulate, synthetic
from strataflow.storage.policies import SparkPolicy
from strataflow.storage.disk.tier_spec import TierSpec


def test_build_takes_keywords_only():
    with pytest.raises(TypeError):
        Config.build("1GB")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Config(1 << 30)  # type: ignore[misc]


def test_context_and_build_take_the_same_options_with_the_same_defaults():
    """Context keeps its public signature and hands every option to Config.build (all but
    ``conf``, which only supplies them)."""
    ctx = [p for p in list(inspect.signature(Context.__init__).parameters.values())[1:] if p.name != "conf"]
    build = list(inspect.signature(Config.build).parameters.values())
    assert [(p.name, p.default) for p in ctx] == [(p.name, p.default) for p in build]
    assert all(p.kind is p.KEYWORD_ONLY for p in build)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"memory": "12XB"}, r"^memory: .*'12XB'"),
    ({"storage_fraction": 1.5}, r"^storage_fraction: .*1\.5"),
    ({"storage_fraction": "half"}, r"^storage_fraction: .*'half'"),
    ({"policy": "arc"}, r"^policy: .*'arc'"),
    ({"serializer": "yaml"}, r"^serializer: .*'yaml'"),
    ({"disk_capacity": "lots"}, r"^disk_capacity: .*'lots'"),
    ({"mmap_memory": -1}, r"^mmap_memory: .*-1"),
    ({"blas_threads": 0}, r"^blas_threads: .*0"),
    ({"max_stage_attempts": 0}, r"^max_stage_attempts: .*0"),
    ({"eviction_watermarks": (0.9, 0.5)}, r"^eviction_watermarks: .*\(0\.9, 0\.5\)"),
    ({"tiers": [{"name": "ssd", "dirs": ["/no/such/dir"]}]}, r"^tiers\[0\] \('ssd'\)\.dirs: .*'/no/such/dir'"),
])
def test_build_names_the_option_and_the_value(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        Config.build(**kwargs)


def test_build_fills_in_and_normalizes(tmp_path):
    cfg = Config.build(memory="64MB", parallelism=2, local_dirs=str(tmp_path), policy="SPARK",
                       tiers=[{"name": "ssd", "dirs": [str(tmp_path)], "capacity": "1MB"}])
    assert cfg.memory == 64 << 20 and cfg.local_dirs == [str(tmp_path)]
    assert cfg.policy == "spark" and cfg.serializer.name == "auto"
    assert cfg.blas_threads == max(1, (os.cpu_count() or 1) // 2)
    assert cfg.tiers == [TierSpec("ssd", [str(tmp_path)], capacity=1 << 20)]
    assert cfg.eviction_watermarks == DEFAULT_WATERMARKS and cfg.disk_capacity is None
    mine = SparkPolicy()
    assert Config.build(policy=mine).policy is mine  # an instance is the caller's, kept as given
    with pytest.raises(AttributeError):
        cfg.memory = 1  # type: ignore[misc]  # frozen: what was checked is what is used


def test_context_uses_the_policy_instance_it_is_given(tmp_path):
    mine = SparkPolicy()
    with Context(memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], policy=mine) as c:
        assert c.block_manager.policy is mine and c.config.policy is mine


def test_bad_watermarks_get_one_message_from_the_context_and_the_simulator(tmp_path, capsys):
    with pytest.raises(ConfigError) as from_check:
        check_watermarks((0.9, 0.5))
    with pytest.raises(ConfigError) as from_context:
        Context(memory="8MB", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                shuffle_dirs=[str(tmp_path)], eviction_watermarks=(0.9, 0.5))
    with pytest.raises(ConfigError) as from_simulate:
        simulate(synthetic("hotset", 2.0), ["spark"], watermarks=(0.9, 0.5))
    assert str(from_context.value) == str(from_simulate.value) == str(from_check.value)
    assert str(from_check.value) == "eviction_watermarks: need 0 < low <= high <= 1, got (0.9, 0.5)"
    assert not [n for n in os.listdir(tmp_path) if n.startswith("strataflow-")]  # failed before making dirs
    capsys.readouterr()
    assert cli_main(["simulate", "--synthetic", "hotset", "--async-eviction", "0.9,0.5"]) == 2
    assert "eviction_watermarks: need 0 < low <= high <= 1" in capsys.readouterr().err


def test_bench_reexports_the_storage_probe():
    from strataflow.bench.devices import probe_bandwidth as from_bench
    from strataflow.storage.disk.probe import probe_bandwidth

    assert from_bench is probe_bandwidth


def test_options_come_from_arguments_then_conf_then_the_environment_then_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("STRATAFLOW_MEMORY", "96MB")
    monkeypatch.setenv("STRATAFLOW_BACKEND", "threads")
    monkeypatch.setenv("STRATAFLOW_ASYNC_EVICTION", "yes")
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    monkeypatch.setenv("STRATAFLOW_LOCAL_DIRS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    monkeypatch.setenv("STRATAFLOW_EVICTION_WATERMARKS", "0.7, 0.9")
    with Context(parallelism=1, conf={"memory": "80MB", "mmap_share": "0.1,0.2", "mmap_memory": "auto"}) as c:
        cfg = c.config
        assert (cfg.memory, cfg.backend, cfg.async_eviction) == (80 << 20, "threads", True)
        assert cfg.mmap_share == (0.1, 0.2) and cfg.eviction_watermarks == (0.7, 0.9)
        assert cfg.local_dirs == [str(tmp_path / "a"), str(tmp_path / "b")] and cfg.storage_fraction == 0.5
        assert c.config_sources["memory"] == "conf" and c.config_sources["parallelism"] == "argument"
        assert c.config_sources["backend"] == "env STRATAFLOW_BACKEND"
        assert c.config_sources["storage_fraction"] == "default"
    with Context(memory="70MB", parallelism=1) as c:  # an argument wins over both
        assert c.config.memory == 70 << 20


@pytest.mark.parametrize("env, conf, fragment", [
    ({}, {"memroy": "1GB"}, r"^conf: unknown option\(s\) 'memroy'"),
    ({"STRATAFLOW_PARALLELISM": "two"}, None, r"^parallelism: 'two' from \$STRATAFLOW_PARALLELISM"),
    ({"STRATAFLOW_GC_FREE_CACHE": "maybe"}, None, r"^gc_free_cache: 'maybe' from \$STRATAFLOW_GC_FREE_CACHE"),
    ({}, {"eviction_watermarks": "0.9"}, r"^eviction_watermarks: '0.9' from conf"),
    ({"STRATAFLOW_MEMORY": "12XB"}, None, r"^memory: .*'12XB'"),  # checked by Config.build as an argument is
])
def test_a_bad_option_from_conf_or_the_environment_is_named(monkeypatch, env, conf, fragment):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=fragment):
        Context(backend="threads", conf=conf)
