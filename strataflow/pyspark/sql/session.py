"""``SparkSession``: how Spark's own RDD examples start, over a :class:`SparkContext`.

    from strataflow.pyspark.sql import SparkSession    # was: from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("app").master("local[2]").config("spark.default.parallelism", 2).getOrCreate()
    sc = spark.sparkContext
    ...
    spark.stop()

The builder's settings become the SparkConf of the session's SparkContext (the active
one when there is one: as in PySpark, a running context keeps its settings, and a
setting that differs is reported in a warning). The DataFrame side (``createDataFrame``,
``read``, ``sql``, ``table``, ``range``) is the mixin :class:`SessionFrames`; what is not
built yet (``udf``, ``catalog``, streams...) raises :class:`UnsupportedOperation` naming
what to use instead.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, ClassVar

from strataflow.pyspark.conf import SparkConf
from strataflow.pyspark.context import SparkContext
from strataflow.pyspark.errors import UnsupportedOperation
from strataflow.pyspark.sql.session_frames import SessionFrames

__all__ = ["SparkSession", "RuntimeConfig"]

#: the DataFrame API of a SparkSession: name -> what to use instead
_DATAFRAME_API = {
    "readStream": "batch RDD jobs",
    "udtf": "plain Python functions in flatMap",
    "streams": "batch RDD jobs",
    "dataSource": "spark.sparkContext.textFile and the strataflow readers",
    "tvf": "RDD transformations",
    "profile": "the status page (spark.sparkContext.uiWebUrl)",
}


def _dataframe_api(name: str) -> UnsupportedOperation:
    return UnsupportedOperation(f"SparkSession.{name} is not supported in strataflow: it belongs to the part of the "
                                f"DataFrame and SQL API that strataflow does not have yet; use "
                                f"{_DATAFRAME_API[name]} instead")


class RuntimeConfig:
    """``spark.conf``: the session's settings, then its SparkContext's. ``set`` records a
    value that ``get`` reads back; there is no SQL engine here for ``spark.sql.*`` keys
    to act on, and the context's own settings are fixed once it runs (as Spark's static
    configuration)."""

    def __init__(self, session: "SparkSession") -> None:
        self._session = session

    def get(self, key: str, default: str | None = None) -> str | None:
        """The session's value of ``key``, else its SparkContext's, else ``default``.

        >>> spark = SparkSession.builder.getOrCreate()
        >>> spark.conf.get("spark.master"), spark.conf.get("spark.sql.shuffle.partitions", "200")
        ('local[2]', '200')
        """
        if key in self._session._options:
            return self._session._options[key]
        return self._session.sparkContext.getConf().get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Records ``str(value)`` for ``key`` in this session only (the context's settings stay).

        >>> spark = SparkSession.builder.getOrCreate().newSession()
        >>> spark.conf.set("spark.sql.shuffle.partitions", 8)
        >>> spark.conf.get("spark.sql.shuffle.partitions")
        '8'
        """
        self._session._options[key] = str(value)

    def unset(self, key: str) -> None:
        """Forgets the session's own value of ``key`` (the context's, if any, shows again).

        >>> spark = SparkSession.builder.getOrCreate().newSession()
        >>> spark.conf.set("spark.master", "elsewhere"); spark.conf.unset("spark.master")
        >>> spark.conf.get("spark.master")
        'local[2]'
        """
        self._session._options.pop(key, None)

    def getAll(self) -> dict[str, str]:
        """Every setting, the context's then the session's own (which win), as a dict.

        >>> spark = SparkSession.builder.getOrCreate().newSession()
        >>> spark.conf.set("team", "search")
        >>> settings = spark.conf.getAll()
        >>> settings["spark.master"], settings["team"]
        ('local[2]', 'search')
        """
        return {**dict(self._session.sparkContext.getConf().getAll()), **self._session._options}


#: what a DataFrame task imports: its functions, DuckDB, and pyarrow.dataset (DuckDB's scan
#: of an Arrow table imports it: a second of a first query's time on this machine)
EXECUTOR_MODULES = ("strataflow.pyspark.sql.tasks", "duckdb", "pyarrow.dataset", "pyarrow.parquet")


class _BuilderProperty:
    """``SparkSession.builder``: a new Builder on each use, so one program's settings do
    not leak into the next builder chain."""

    def __get__(self, obj: Any, owner: type) -> "SparkSession.Builder":
        return SparkSession.Builder()


class SparkSession(SessionFrames):
    """PySpark's entry point for the RDD side: ``SparkSession.builder...getOrCreate()``,
    ``.sparkContext``, ``.version``, ``.conf``, ``.stop()``."""

    class Builder:
        """Collects settings (``appName``, ``master``, ``config``) for ``getOrCreate``; each
        use of ``SparkSession.builder`` starts a new one.

        >>> builder = SparkSession.builder.appName("doctests").master("local[2]")
        >>> builder.getOrCreate().sparkContext is sc
        True
        """

        _lock: ClassVar[threading.RLock] = threading.RLock()

        def __init__(self) -> None:
            self._options: dict[str, str] = {}

        def config(self, key: str | None = None, value: Any = None, conf: SparkConf | None = None, *,
                   map: dict[str, Any] | None = None) -> "SparkSession.Builder":
            """One setting (``key``, ``value``; a bool as ``true``/``false``), every setting of a
            SparkConf, or a dict's (``map=``).

            >>> spark = (SparkSession.builder.config("strataflow.progress", False)
            ...          .config(conf=SparkConf().set("strataflow.backend", "threads"))
            ...          .config(map={"spark.master": "local[2]"}).getOrCreate())
            >>> spark.sparkContext is sc
            True
            """
            if conf is not None:
                self._options.update(conf.getAll())
            if map is not None:
                self._options.update({k: str(v) for k, v in map.items()})
            if key is not None:
                self._options[key] = str(value).lower() if isinstance(value, bool) else str(value)
            return self

        def appName(self, name: str) -> "SparkSession.Builder":
            """Sets ``spark.app.name``.

            >>> SparkSession.builder.appName("doctests").getOrCreate().sparkContext.appName
            'doctests'
            """
            return self.config("spark.app.name", name)

        def master(self, master: str) -> "SparkSession.Builder":
            """Sets ``spark.master``: ``local``, ``local[N]``, ``local[*]``, ``ray`` or ``ray://host:port``.

            >>> SparkSession.builder.master("local[2]").getOrCreate().sparkContext.master
            'local[2]'
            """
            return self.config("spark.master", master)

        def enableHiveSupport(self) -> "SparkSession.Builder":
            """Raises :class:`UnsupportedOperation`: Hive tables (a metastore) are not part of
            strataflow; temporary views are (``createOrReplaceTempView``).

            >>> SparkSession.builder.enableHiveSupport()
            Traceback (most recent call last):
            ...
            strataflow.pyspark.errors.UnsupportedOperation: enableHiveSupport is not supported in strataflow: ...
            """
            raise UnsupportedOperation("enableHiveSupport is not supported in strataflow: Hive tables need a "
                                       "metastore, which strataflow does not have; use temporary views "
                                       "(df.createOrReplaceTempView) and spark.sql")

        def remote(self, url: str) -> "SparkSession.Builder":
            """Raises :class:`UnsupportedOperation`: there is no Spark Connect; give a ``master``.

            >>> SparkSession.builder.remote("sc://localhost")
            Traceback (most recent call last):
            ...
            strataflow.pyspark.errors.UnsupportedOperation: remote('sc://localhost'): Spark Connect is not supported ...
            """
            raise UnsupportedOperation(f"remote({url!r}): Spark Connect is not supported in strataflow; give a "
                                       "master (local[N], ray or ray://host:port) instead")

        def getOrCreate(self) -> "SparkSession":
            """The active session (its context keeps its settings: any that differ from
            these are named in a warning, as PySpark warns), else a new one on the
            active SparkContext or on a new one made from these settings.

            >>> spark = SparkSession.builder.getOrCreate()
            >>> spark.sparkContext is sc, SparkSession.builder.getOrCreate() is spark
            (True, True)
            >>> with warnings.catch_warnings(record=True) as caught:
            ...     warnings.simplefilter("always")
            ...     _ = SparkSession.builder.config("spark.default.parallelism", 8).getOrCreate()
            >>> print(caught[0].message)
            SparkSession.builder.getOrCreate: using the running SparkContext; ... spark.default.parallelism=8
            """
            with self._lock:
                session = SparkSession._active
                if session is not None and (session._stopped or SparkContext._active_spark_context is not session._sc):
                    session = None  # stopped, or its context was stopped on its own
                if session is None:
                    conf = SparkConf().setAll(self._options.items())
                    sc = SparkContext.getOrCreate(conf)
                    session = SparkSession(sc)
                    SparkSession._active = session
                _warn_ignored(session.sparkContext, self._options)
                return session

    builder: ClassVar[_BuilderProperty] = _BuilderProperty()
    _active: ClassVar["SparkSession | None"] = None

    def __init__(self, sparkContext: SparkContext, options: dict[str, str] | None = None) -> None:
        self._sc = sparkContext  # PySpark's name, which Spark's own examples use (transitive_closure.py)
        self._options: dict[str, str] = dict(options or {})
        self._stopped = False
        self._views: dict = {}  # temporary views: lower-case name -> DataFrame
        self._udfs: dict = {}  # spark.udf.register: lower-case name -> UserDefinedFunction
        sparkContext.ctx.fleet.preload(list(EXECUTOR_MODULES))  # the first query need not import them

    @classmethod
    def getActiveSession(cls) -> "SparkSession | None":
        """The active session, or None when there is none (none made yet, or it was stopped).

        >>> spark = SparkSession.builder.getOrCreate()
        >>> SparkSession.getActiveSession() is spark
        True
        """
        session = cls._active
        return None if session is None or session._stopped else session

    @classmethod
    def active(cls) -> "SparkSession":
        """The active session; RuntimeError when there is none (``getActiveSession`` gives None).

        >>> SparkSession.active() is SparkSession.builder.getOrCreate()
        True
        """
        session = cls.getActiveSession()
        if session is None:
            raise RuntimeError("No active SparkSession; create one with SparkSession.builder.getOrCreate()")
        return session

    @property
    def sparkContext(self) -> SparkContext:
        """The session's SparkContext: the RDD API (``parallelize``, ``textFile``...).

        >>> SparkSession.builder.getOrCreate().sparkContext.parallelize([1, 2, 3]).sum()
        6
        """
        return self._sc

    @property
    def version(self) -> str:
        """The Spark version whose API this mirrors (``SparkContext.version``).

        >>> spark = SparkSession.builder.getOrCreate()
        >>> spark.version == sc.version, spark.version >= "3"
        (True, True)
        """
        return self._sc.version

    @property
    def conf(self) -> RuntimeConfig:
        """The session's settings (a :class:`RuntimeConfig`): its own, then its SparkContext's.

        >>> SparkSession.builder.getOrCreate().conf.get("spark.app.name")
        'doctests'
        """
        return RuntimeConfig(self)

    @property
    def udf(self) -> Any:
        """Python functions named for ``spark.sql`` (a :class:`~strataflow.pyspark.sql.udf.UDFRegistration`).

        >>> _ = SparkSession.builder.getOrCreate().udf.register("twice", lambda x: 2 * x, "long")
        >>> SparkSession.builder.getOrCreate().sql("SELECT twice(21) AS n").first().n
        42
        """
        from strataflow.pyspark.sql.udf import UDFRegistration

        return UDFRegistration(self)

    @property
    def catalog(self) -> Any:
        """The session's views (a :class:`~strataflow.pyspark.sql.catalog.Catalog`).

        >>> SparkSession.builder.getOrCreate().catalog.currentDatabase()
        'default'
        """
        from strataflow.pyspark.sql.catalog import Catalog

        return Catalog(self)

    def newSession(self) -> "SparkSession":
        """Another session on the same SparkContext, with settings of its own.

        >>> spark = SparkSession.builder.getOrCreate()
        >>> other = spark.newSession(); other.conf.set("team", "search")
        >>> other.sparkContext is spark.sparkContext, spark.conf.get("team")
        (True, None)
        """
        return SparkSession(self._sc)

    def stop(self) -> None:
        """Stops the SparkContext (its executors and working directories) and ends the session.

        >>> spark = SparkSession.builder.getOrCreate()
        >>> conf = spark.sparkContext.getConf()
        >>> spark.stop()
        >>> SparkSession.getActiveSession() is None
        True
        >>> sc = SparkContext(conf=conf)  # a fresh one for the examples that follow
        """
        self._sc.stop()
        self._stopped = True
        if SparkSession._active is self:
            SparkSession._active = None

    def __enter__(self) -> "SparkSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<strataflow.pyspark.sql.session.SparkSession object at {id(self):#x}: {self._sc!r}>"

    def __getattr__(self, name: str) -> Any:
        if name in _DATAFRAME_API:
            raise _dataframe_api(name)
        raise AttributeError(f"'SparkSession' object has no attribute {name!r}")


def _warn_ignored(sc: SparkContext, options: dict[str, str]) -> None:
    """Names the builder settings a running SparkContext did not take."""
    conf = sc.getConf()
    ignored = sorted(k for k, v in options.items() if conf.get(k) != v)
    if ignored:
        warnings.warn(f"SparkSession.builder.getOrCreate: using the running SparkContext; its settings stay as "
                      f"they are, so these builder settings take no effect: "
                      f"{', '.join(f'{k}={options[k]}' for k in ignored)}", stacklevel=3)
