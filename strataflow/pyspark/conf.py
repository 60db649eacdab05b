"""``SparkConf``: key-value settings for a ``SparkContext`` (PySpark's names).

Spark's keys are kept as given (``getAll``, ``toDebugString`` show them); those strataflow
has a meaning for are turned into :class:`~strataflow.Context` arguments by
:func:`context_options`, and any Context argument can be set as ``strataflow.<name>``
(``SparkConf().set("strataflow.memory", "4GB").set("strataflow.backend", "threads")``).
"""

from __future__ import annotations

import inspect
from typing import Any, Iterable

__all__ = ["SparkConf", "context_options"]


class SparkConf:
    """Settings as string pairs, set with chained calls:
    ``SparkConf().setMaster("local[4]").setAppName("app")``. ``loadDefaults`` is accepted
    (there are no JVM system properties to load)."""

    def __init__(self, loadDefaults: bool = True, _jvm: Any = None, _jconf: Any = None) -> None:
        self._conf: dict[str, str] = {}

    def set(self, key: str, value: Any) -> "SparkConf":
        self._conf[key] = str(value)
        return self

    def setIfMissing(self, key: str, value: Any) -> "SparkConf":
        if key not in self._conf:
            self.set(key, value)
        return self

    def setMaster(self, value: str) -> "SparkConf":
        return self.set("spark.master", value)

    def setAppName(self, value: str) -> "SparkConf":
        return self.set("spark.app.name", value)

    def setSparkHome(self, value: str) -> "SparkConf":
        return self.set("spark.home", value)

    def setExecutorEnv(self, key: str | None = None, value: str | None = None,
                       pairs: Iterable[tuple[str, str]] | None = None) -> "SparkConf":
        if (key is not None and pairs is not None) or (key is None and pairs is None):
            raise ValueError("setExecutorEnv: give either key and value or pairs")
        for k, v in ([(key, value)] if key is not None else pairs):
            self.set("spark.executorEnv." + k, v)
        return self

    def setAll(self, pairs: Iterable[tuple[str, Any]]) -> "SparkConf":
        for k, v in pairs:
            self.set(k, v)
        return self

    def get(self, key: str, defaultValue: str | None = None) -> str | None:
        return self._conf.get(key, defaultValue)

    def getAll(self) -> list[tuple[str, str]]:
        return list(self._conf.items())

    def contains(self, key: str) -> bool:
        return key in self._conf

    def toDebugString(self) -> str:
        return "\n".join(f"{k}={v}" for k, v in self._conf.items())

    def copy(self) -> "SparkConf":
        out = SparkConf()
        out._conf = dict(self._conf)
        return out


def _value(text: str) -> Any:
    """A Context argument from its string form: bool, int, float, or the string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# Spark keys with a strataflow meaning: key -> (Context argument, conversion)
_SPARK_KEYS = {
    "spark.default.parallelism": ("default_parallelism", int),
    "spark.task.maxFailures": ("task_max_failures", int),  # user errors; see retries.py
    "spark.stage.maxConsecutiveAttempts": ("max_stage_attempts", int),
    "spark.local.dir": ("local_dirs", lambda s: [d for d in s.split(",") if d]),
    "spark.memory.storageFraction": ("storage_fraction", float),
    "spark.locality.wait": ("locality_wait", lambda s: float(s.rstrip("s"))),
    "spark.executor.cores": ("cores_per_executor", int),
    "spark.executor.instances": ("executors", int),
}


def context_options(conf: SparkConf) -> dict[str, Any]:
    """The Context arguments a SparkConf sets (Spark keys above and ``strataflow.*``);
    an unknown ``strataflow.*`` name fails here, naming the valid ones."""
    from ..context import Context

    valid = set(inspect.signature(Context.__init__).parameters) - {"self"}
    out: dict[str, Any] = {}
    for key, text in conf.getAll():
        if key in _SPARK_KEYS:
            name, convert = _SPARK_KEYS[key]
            out[name] = convert(text)
        elif key.startswith("strataflow."):
            name = key[len("strataflow."):]
            if name not in valid:
                raise ValueError(f"SparkConf: {key!r} is not a strataflow Context option; "
                                 f"choose one of {', '.join(sorted(valid))}")
            out[name] = _value(text)
    return out
