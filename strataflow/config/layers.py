"""Where a Context option's value comes from: the argument, ``conf={...}``, a
``STRATAFLOW_*`` environment variable, or the default, in that order of precedence.

Why: a job's code should not have to change to run it with more memory or another
backend on another machine (Spark's ``spark-submit --conf`` and ``spark-defaults.conf``
serve the same need). A value given in code wins over ``conf``, which wins over the
environment (``STRATAFLOW_MEMORY=8GB``, ``STRATAFLOW_BACKEND=threads``...), which wins over
the default. Strings from the environment (or from ``conf``) are converted by the option's
kind below, then :meth:`Config.build` checks them as it checks arguments, so a bad value
fails naming the option and where it came from.

Lists of directories are separated by ``os.pathsep`` (``:``), pairs by a comma, booleans
are ``1/0``, ``true/false``, ``yes/no``, ``on/off``; ``tiers`` is JSON.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from typing import Any, Callable, Mapping

from strataflow.common.checks import ConfigError

__all__ = ["ENV_PREFIX", "layered_options", "with_layered_options"]

ENV_PREFIX = "STRATAFLOW_"

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE | _FALSE:
        return t in _TRUE
    raise ValueError(f"expected one of {', '.join(sorted(_TRUE | _FALSE))}")


def _pair(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError("expected two numbers separated by a comma")
    return float(parts[0]), float(parts[1])


def _dirs(text: str) -> list[str]:
    return [d for d in text.split(os.pathsep) if d]


def _none_or(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: None if text.strip().lower() in ("", "none") else convert(text)


#: how a string becomes each option's value (options not named here stay strings:
#: sizes, names and addresses, which Config.build parses itself)
_KINDS: dict[str, Callable[[str], Any]] = {
    "parallelism": _none_or(int), "default_parallelism": _none_or(int), "max_task_attempts": int,
    "max_stage_attempts": int, "task_max_failures": _none_or(int),
    "blas_threads": _none_or(int), "executors": _none_or(int), "cores_per_executor": int,
    "storage_fraction": float, "locality_wait": float,
    "shuffle_sync": _bool, "progress": _none_or(_bool), "live": _bool, "gc_free_cache": _bool, "async_eviction": _bool,
    "local_dirs": _none_or(_dirs), "shuffle_dirs": _none_or(_dirs),
    "eviction_watermarks": _pair, "mmap_share": _pair, "tiers": _none_or(json.loads),
    "disk_capacity": _none_or(str), "mmap_memory": _none_or(str), "executor_memory": _none_or(str),
    "event_log": _none_or(str), "policy": _none_or(str), "serializer": _none_or(str),
    "backend": _none_or(str), "address": _none_or(str), "max_partitions": int,
}


def _convert(name: str, value: Any, source: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return _KINDS.get(name, str)(value)
    except ValueError as exc:
        raise ConfigError(f"{name}: {value!r} from {source} is not valid: {exc}") from None


def layered_options(names: list[str], given: Mapping[str, Any], conf: Mapping[str, Any] | None,
                    environ: Mapping[str, str]) -> tuple[dict, dict]:
    """(values, sources) for the options not ``given`` as arguments: from ``conf``, else
    from ``STRATAFLOW_<NAME>``; options found in neither are left out (their defaults
    apply). ``sources`` names where each option's value came from."""
    conf = dict(conf or {})
    unknown = sorted(k for k in conf if k not in names)
    if unknown:
        raise ConfigError(f"conf: unknown option(s) {', '.join(map(repr, unknown))}; "
                          f"options are the Context's arguments: {', '.join(names)}")
    values, sources = {}, {k: "argument" for k in given}
    for name in names:
        if name in given:
            continue
        env = ENV_PREFIX + name.upper()
        if name in conf:
            values[name], sources[name] = _convert(name, conf[name], "conf"), "conf"
        elif env in environ:
            values[name], sources[name] = _convert(name, environ[env], f"${env}"), f"env {env}"
        else:
            sources[name] = "default"
    return values, sources


def with_layered_options(init: Callable) -> Callable:
    """Wraps ``Context.__init__``: options its caller did not pass come from ``conf``, then
    the environment; the wrapped constructor gets them as arguments and the instance keeps
    ``config_sources`` (option -> where its value came from)."""
    sig = inspect.signature(init)
    names = [p for p in sig.parameters if p not in ("self", "conf")]

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind_partial(self, *args, **kwargs)
        given = {k: v for k, v in bound.arguments.items() if k not in ("self", "conf")}
        values, sources = layered_options(names, given, bound.arguments.get("conf"), os.environ)
        self.config_sources = sources
        init(self, **given, **values)

    return wrapper
