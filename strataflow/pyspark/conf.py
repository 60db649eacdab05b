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
        """Sets ``key`` to ``str(value)``; returns the conf, so calls chain.

        >>> SparkConf().set("spark.executor.cores", 2).get("spark.executor.cores")
        '2'
        """
        self._conf[key] = str(value)
        return self

    def setIfMissing(self, key: str, value: Any) -> "SparkConf":
        """Sets ``key`` only when it has no value yet.

        >>> SparkConf().set("spark.app.name", "etl").setIfMissing("spark.app.name", "other").get("spark.app.name")
        'etl'
        """
        if key not in self._conf:
            self.set(key, value)
        return self

    def setMaster(self, value: str) -> "SparkConf":
        """Sets ``spark.master``: ``local``, ``local[N]``, ``local[*]``, ``ray`` or ``ray://host:port``.

        >>> SparkConf().setMaster("local[4]").get("spark.master")
        'local[4]'
        """
        return self.set("spark.master", value)

    def setAppName(self, value: str) -> "SparkConf":
        """Sets ``spark.app.name`` (the Context's ``app_name``).

        >>> SparkConf().setAppName("nightly").get("spark.app.name")
        'nightly'
        """
        return self.set("spark.app.name", value)

    def setSparkHome(self, value: str) -> "SparkConf":
        """Sets ``spark.home``, kept for ``sc.sparkHome``: strataflow needs no Spark installation.

        >>> SparkConf().setSparkHome("/opt/spark").get("spark.home")
        '/opt/spark'
        """
        return self.set("spark.home", value)

    def setExecutorEnv(self, key: str | None = None, value: str | None = None,
                       pairs: Iterable[tuple[str, str]] | None = None) -> "SparkConf":
        """Sets ``spark.executorEnv.<key>`` for one variable (``key``, ``value``) or for each of
        ``pairs``. Unlike PySpark's, only recorded: strataflow's executors get no variables from it.

        >>> SparkConf().setExecutorEnv(pairs=[("TZ", "UTC")]).get("spark.executorEnv.TZ")
        'UTC'
        """
        if (key is not None and pairs is not None) or (key is None and pairs is None):
            raise ValueError("setExecutorEnv: give either key and value or pairs")
        for k, v in ([(key, value)] if key is not None else pairs):
            self.set("spark.executorEnv." + k, v)
        return self

    def setAll(self, pairs: Iterable[tuple[str, Any]]) -> "SparkConf":
        """Sets every ``(key, value)`` of ``pairs``.

        >>> SparkConf().setAll([("a", 1), ("b", "x")]).getAll()
        [('a', '1'), ('b', 'x')]
        """
        for k, v in pairs:
            self.set(k, v)
        return self

    def get(self, key: str, defaultValue: str | None = None) -> str | None:
        """The value of ``key`` (a string), else ``defaultValue``.

        >>> conf = SparkConf().setMaster("local[2]")
        >>> conf.get("spark.master"), conf.get("spark.local.dir", "/tmp")
        ('local[2]', '/tmp')
        """
        return self._conf.get(key, defaultValue)

    def getAll(self) -> list[tuple[str, str]]:
        """Every ``(key, value)``, in the order they were first set.

        >>> SparkConf().setMaster("local").setAppName("a").getAll()
        [('spark.master', 'local'), ('spark.app.name', 'a')]
        """
        return list(self._conf.items())

    def contains(self, key: str) -> bool:
        """Whether ``key`` has a value.

        >>> conf = SparkConf().setAppName("a")
        >>> conf.contains("spark.app.name"), conf.contains("spark.master")
        (True, False)
        """
        return key in self._conf

    def toDebugString(self) -> str:
        """The settings as ``key=value`` lines.

        >>> print(SparkConf().setMaster("local[2]").setAppName("a").toDebugString())
        spark.master=local[2]
        spark.app.name=a
        """
        return "\n".join(f"{k}={v}" for k, v in self._conf.items())

    def copy(self) -> "SparkConf":
        """An independent copy: setting a key on one does not change the other.

        >>> conf = SparkConf().setAppName("a")
        >>> twin = conf.copy().setAppName("b")
        >>> conf.get("spark.app.name"), twin.get("spark.app.name")
        ('a', 'b')
        """
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
    from strataflow.context import Context

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
