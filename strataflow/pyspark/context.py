"""``SparkContext``: PySpark's entry point, over a strataflow :class:`~strataflow.Context`.

The master URL sets the parallelism: ``local`` is 1, ``local[N]`` is N, ``local[*]`` (and
no master at all) every core, ``local[N, F]`` also allows F attempts per task; ``ray`` or
``ray://host:port`` runs on a Ray cluster. Other masters (``spark://``, ``yarn``, ``k8s://``)
fail with a clear error. Settings come from :class:`SparkConf` (see ``conf.py``: Spark keys
strataflow understands, and ``strataflow.<option>`` for any Context option). As in
PySpark, one SparkContext may be active at a time; ``stop()`` (or leaving a ``with``
block) ends it and its executors.

This module holds the context's life cycle, facts, local properties and job groups,
broadcasts and accumulators, and assembles the class from mixins: the sources that make
RDDs (``context_sources``) and the shipped files (``context_files``); master URLs are
parsed in ``master``.
"""

from __future__ import annotations

import getpass
import os
import sys
import threading
import time
from typing import Any, ClassVar

from strataflow.shipping.accumulators import Accumulator
from strataflow.shipping.broadcast import Broadcast
from strataflow.context import Context
from strataflow.pyspark.conf import SparkConf, context_options
from strataflow.pyspark.context_files import SparkContextFiles
from strataflow.pyspark.context_sources import SparkContextSources
from strataflow.pyspark.errors import UnsupportedOperation
from strataflow.pyspark.master import parse_master
from strataflow.pyspark.status import StatusListener, StatusTracker

__all__ = ["SparkContext", "parse_master", "SPARK_API_VERSION"]

#: The Spark version whose Python RDD API this package mirrors (its documented examples
#: run as tests), which ``sc.version`` reports so that the checks PySpark programs make
#: (``sc.version >= "3"``, ``LooseVersion(sc.version) >= "2.4"``) take the branch written
#: for the API they meet. strataflow's own version is ``strataflow.__version__``.
SPARK_API_VERSION = "4.0.0"


class SparkContext(SparkContextSources, SparkContextFiles):
    """PySpark's SparkContext: ``SparkContext("local[4]", "app")`` or
    ``SparkContext(conf=SparkConf().setMaster("local[4]").setAppName("app"))``.
    ``sc.ctx`` is the strataflow Context it drives."""

    _active_spark_context: ClassVar["SparkContext | None"] = None
    _lock: ClassVar[threading.RLock] = threading.RLock()

    def __init__(self, master: str | None = None, appName: str | None = None, sparkHome: str | None = None,
                 pyFiles: list[str] | None = None, environment: dict[str, Any] | None = None, batchSize: int = 0,
                 serializer: Any = None, conf: SparkConf | None = None, gateway: Any = None, jsc: Any = None,
                 profiler_cls: Any = None, udf_profiler_cls: Any = None, memory_profiler_cls: Any = None) -> None:
        self._conf = conf.copy() if conf is not None else SparkConf()
        if master is not None:
            self._conf.setMaster(master)
        if appName is not None:
            self._conf.setAppName(appName)
        if sparkHome is not None:
            self._conf.setSparkHome(sparkHome)
        self.master = self._conf.get("spark.master", "local[*]")
        self.appName = self._conf.get("spark.app.name", "strataflow")
        self.sparkHome = self._conf.get("spark.home")
        self.environment = dict(environment or {})
        options = {**parse_master(self.master), "app_name": self.appName, **context_options(self._conf)}
        with SparkContext._lock:
            active = SparkContext._active_spark_context
            if active is not None:
                raise ValueError(f"Cannot run multiple SparkContexts at once; existing SparkContext(app="
                                 f"{active.appName}, master={active.master}); stop() it first")
            self.ctx = Context(**options)
            SparkContext._active_spark_context = self
        self._local = threading.local()
        self._status = StatusListener(lambda: self.getLocalProperty("spark.jobGroup.id"))
        self.ctx.events.subscribe(self._status)
        self.startTime = int(time.time() * 1000)
        self.pythonExec = sys.executable
        self.pythonVer = f"{sys.version_info.major}.{sys.version_info.minor}"

    @classmethod
    def getOrCreate(cls, conf: SparkConf | None = None) -> "SparkContext":
        """The active SparkContext, or a new one from ``conf``.

        >>> SparkContext.getOrCreate() is sc
        True
        """
        with cls._lock:
            if cls._active_spark_context is None:
                cls(conf=conf)
            return cls._active_spark_context

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> "SparkContext":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops the executors and removes the application's working directories.

        >>> conf = sc.getConf()
        >>> sc.stop()
        >>> sc.parallelize([1]).count()
        Traceback (most recent call last):
        ...
        RuntimeError: this Context has been stopped
        >>> sc = SparkContext(conf=conf)  # a fresh one for the examples that follow
        """
        self.ctx.events.unsubscribe(self._status)
        self.ctx.stop()
        with SparkContext._lock:
            if SparkContext._active_spark_context is self:
                SparkContext._active_spark_context = None

    def __repr__(self) -> str:
        return f"<SparkContext master={self.master} appName={self.appName}>"

    def __reduce__(self):
        raise RuntimeError("It appears that you are attempting to reference SparkContext from a broadcast "
                           "variable, action, or transformation. SparkContext can only be used on the driver, "
                           "not in code that it run on workers (SPARK-5063).")

    # -- facts -------------------------------------------------------------------------------------
    @property
    def defaultParallelism(self) -> int:
        """The partition count of ``parallelize`` when none is given (N of ``local[N]``, or
        ``spark.default.parallelism``).

        >>> sc.defaultParallelism, sc.parallelize(range(10)).getNumPartitions()
        (2, 2)
        """
        return self.ctx.default_parallelism

    @property
    def defaultMinPartitions(self) -> int:
        """The partition count of file sources when none is given: ``min(defaultParallelism, 2)``, as
        in Spark.

        >>> sc.defaultMinPartitions
        2
        """
        return min(self.defaultParallelism, 2)

    @property
    def version(self) -> str:
        """The Spark version whose API strataflow mirrors, ``SPARK_API_VERSION`` (there is
        no Spark underneath: ``strataflow.__version__`` is strataflow's own), so that the
        checks PySpark programs make (``sc.version >= "3"``) pass.

        >>> sc.version >= "3"
        True
        """
        return SPARK_API_VERSION

    @property
    def applicationId(self) -> str:
        """``local-<start ms>`` for a local master, as Spark names it (``sc.ctx.app_id`` is
        strataflow's own id, the one in the event log and the directories).

        >>> sc.applicationId  # doctest: +ELLIPSIS
        'local-...'
        """
        if self.master.startswith("local"):
            return f"local-{self.startTime}"
        return self.ctx.app_id

    @property
    def uiWebUrl(self) -> str | None:
        """The status page's URL (``Context.serve_status``: jobs, stages, storage and the
        cache's counters on 127.0.0.1), started on first use unless ``spark.ui.enabled``
        is ``false`` (then None).

        >>> sc.uiWebUrl  # doctest: +ELLIPSIS
        'http://127.0.0.1:...'
        """
        if self._conf.get("spark.ui.enabled", "true").lower() == "false":
            return None
        return self.ctx.serve_status()

    def getSystemProperty(self, key: str) -> str | None:
        """Spark's JVM system properties do not exist here: ``SPARK_SUBMIT`` is ``"true"``
        (an application started as by spark-submit), ``java.*`` and ``user.*`` are taken
        from the Python process (``java.home``: JAVA_HOME, else None), and any other key is
        looked up in the SparkConf, then the environment.

        >>> sc.getSystemProperty("SPARK_SUBMIT")
        'true'
        """
        if key == "SPARK_SUBMIT":
            return "true"
        known = {"java.home": os.environ.get("JAVA_HOME"), "user.name": getpass.getuser(),
                 "user.dir": os.getcwd(), "user.home": os.path.expanduser("~"), "os.name": sys.platform,
                 "line.separator": os.linesep, "file.separator": os.sep}
        if key in known:
            return known[key]
        return self._conf.get(key) or os.environ.get(key)

    def sparkUser(self) -> str:
        """The user running the application (the process's login name).

        >>> import getpass
        >>> sc.sparkUser() == getpass.getuser()
        True
        """
        return getpass.getuser()

    def getConf(self) -> SparkConf:
        """A copy of the context's SparkConf (changing it changes nothing here).

        >>> sc.getConf().get("spark.master")
        'local[2]'
        """
        return self._conf.copy()

    # -- local properties and job groups -----------------------------------------------------------
    def setLocalProperty(self, key: str, value: str | None) -> None:
        """Sets (None: removes) a property of the jobs this thread starts; other threads do not see it.

        >>> sc.setLocalProperty("team", "search")
        >>> sc.getLocalProperty("team")
        'search'
        >>> sc.setLocalProperty("team", None)
        """
        props = self._local.__dict__.setdefault("props", {})
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value

    def getLocalProperty(self, key: str) -> str | None:
        """The value ``setLocalProperty`` gave ``key`` in this thread, or None.

        >>> sc.setLocalProperty("pool", "fast")
        >>> sc.getLocalProperty("pool"), sc.getLocalProperty("unset")
        ('fast', None)
        >>> sc.setLocalProperty("pool", None)
        """
        return self._local.__dict__.get("props", {}).get(key)

    def setJobGroup(self, groupId: str, description: str, interruptOnCancel: bool = False) -> None:
        """Jobs this thread starts from now on belong to ``groupId`` (see ``statusTracker``).

        >>> sc.setJobGroup("etl", "load the tables")
        >>> _ = sc.parallelize([1]).count()
        >>> len(sc.statusTracker().getJobIdsForGroup("etl"))
        1
        """
        self.setLocalProperty("spark.jobGroup.id", groupId)
        self.setLocalProperty("spark.job.description", description)

    def setJobDescription(self, value: str) -> None:
        """A description for the jobs this thread starts from now on (the ``spark.job.description``
        local property).

        >>> sc.setJobDescription("nightly totals")
        >>> sc.getLocalProperty("spark.job.description")
        'nightly totals'
        """
        self.setLocalProperty("spark.job.description", value)

    def statusTracker(self) -> StatusTracker:
        """A StatusTracker over this context's jobs and stages (ids by group, active ids, job and stage
        info).

        >>> _ = sc.parallelize([1, 2]).count()
        >>> sc.statusTracker().getActiveJobsIds()
        []
        """
        return StatusTracker(self._status)

    def setLogLevel(self, logLevel: str) -> None:
        """The level of strataflow's loggers (``Context.set_log_level``; Spark's names such as ``WARN``
        work).

        >>> sc.setLogLevel("WARN")
        """
        self.ctx.set_log_level(logLevel)

    def setCheckpointDir(self, dirName: str) -> None:
        """Where ``RDD.checkpoint()`` writes (a directory of this application's own is made under
        ``dirName``).

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize([1, 2]); rdd.checkpoint(); _ = rdd.count()
        >>> rdd.isCheckpointed()
        True
        """
        self.ctx.set_checkpoint_dir(dirName)

    def getCheckpointDir(self) -> str | None:
        """The directory ``setCheckpointDir`` made for this application, or None.

        >>> sc.setCheckpointDir(tmp_dir)
        >>> sc.getCheckpointDir().startswith(tmp_dir)
        True
        """
        return self.ctx.checkpoint_dir

    def cancelJobGroup(self, groupId: str) -> None:
        """Not supported (UnsupportedOperation): jobs cannot be cancelled from another thread;
        ``stop()`` ends them all.

        >>> sc.cancelJobGroup("nightly")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: cancelJobGroup is not supported in strataflow ...
        """
        raise UnsupportedOperation("cancelJobGroup is not supported in strataflow (jobs cannot be cancelled "
                                   "from another thread; stop() ends them all)")

    def cancelAllJobs(self) -> None:
        """Not supported (UnsupportedOperation): jobs cannot be cancelled from another thread;
        ``stop()`` ends them all.

        >>> sc.cancelAllJobs()
        Traceback (most recent call last):
        ...
        strataflow.pyspark.errors.UnsupportedOperation: cancelAllJobs is not supported in strataflow; stop() ends every job
        """
        raise UnsupportedOperation("cancelAllJobs is not supported in strataflow; stop() ends every job")

    # -- shared variables -----------------------------------------------------------------------------
    def broadcast(self, value: Any) -> "Broadcast":
        """A read-only value shipped once to each executor (``strataflow.shipping.broadcast``).

        >>> lookup = sc.broadcast({1: "one", 2: "two"})
        >>> sc.parallelize([1, 2]).map(lambda k: lookup.value[k]).collect()
        ['one', 'two']
        """
        return self.ctx.broadcast(value)

    def accumulator(self, value: Any, accum_param: Any = None) -> "Accumulator":
        """A value tasks add to and the driver reads, counted once per successful task
        (``strataflow.shipping.accumulators``); ``accum_param``: an :class:`AccumulatorParam`.

        >>> acc = sc.accumulator(0)
        >>> sc.parallelize([1, 2, 3]).foreach(lambda x: acc.add(x))
        >>> acc.value
        6
        """
        return self.ctx.accumulator(value, accum_param)
