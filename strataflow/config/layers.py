"""Where a Context option's value comes from: the argument, ``conf={...}``, a
``STRATAFLOW_*`` environment variable, or the default, in that order of precedence.

Why: a job's code should not have to change to run it with more memory or another
backend on another machine (Spark's ``spark-submit --conf`` and ``spark-defaults.conf``
serve the same need). A value given in code wins over ``conf``, which wins over the
environment (``STRATAFLOW_MEMORY=8GB``, ``STRATAFLOW_BACKEND=threads``...), which wins over
the default. Strings from the environment (or from ``conf``) are converted by the option's
``from_text`` in the options' table (:mod:`strataflow.config.options`), then
:meth:`Config.build` checks them as it checks arguments, so a bad value fails naming the
option and where it came from. The table also gives the wrapped ``Context.__init__`` its
signature (every option, with its default), so ``help(Context)`` lists them.

Lists of directories are separated by ``os.pathsep`` (``:``), pairs by a comma, booleans
are ``1/0``, ``true/false``, ``yes/no``, ``on/off``; ``tiers`` is JSON.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable, Mapping

from strataflow.common.checks import ConfigError
from strataflow.config.options import ENV_PREFIX, NAMES, by_name, parameters

__all__ = ["ENV_PREFIX", "layered_options", "with_layered_options"]


def _convert(name: str, value: Any, source: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return by_name[name].from_text(value)
    except ValueError as exc:
        raise ConfigError(f"{name}: {value!r} from {source} is not valid: {exc}") from None


def layered_options(names: list[str] | tuple[str, ...], given: Mapping[str, Any], conf: Mapping[str, Any] | None,
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


def with_layered_options(init: Callable[..., None]) -> Callable[..., None]:
    """Wraps ``Context.__init__(self, **options)``: its signature becomes ``(self, <every
    option of the table, with its default>, conf=None)``; options its caller did not pass
    come from ``conf``, then the environment; the wrapped constructor gets those given and
    found as keywords (the defaults are ``Config.build``'s) and the instance keeps
    ``config_sources`` (option -> where its value came from)."""
    P = inspect.Parameter
    sig = inspect.Signature([P("self", P.POSITIONAL_OR_KEYWORD), *parameters(),
                             P("conf", P.POSITIONAL_OR_KEYWORD, default=None, annotation="Mapping[str, Any] | None")],
                            return_annotation="None")

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind_partial(self, *args, **kwargs)
        given = {k: v for k, v in bound.arguments.items() if k not in ("self", "conf")}
        values, sources = layered_options(NAMES, given, bound.arguments.get("conf"), os.environ)
        self.config_sources = sources
        init(self, **given, **values)

    wrapper.__signature__ = sig  # type: ignore[attr-defined]
    return wrapper
