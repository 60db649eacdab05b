"""``SparkContext``: PySpark's entry point, over a strataflow :class:`~strataflow.Context`.

The master URL sets the parallelism: ``local`` is 1, ``local[N]`` is N, ``local[*]`` (and
no master at all) every core, ``local[N, F]`` also allows F attempts per task; ``ray`` or
``ray://host:port`` runs on a Ray cluster. Other masters (``spark://``, ``yarn``, ``k8s://``)
fail with a clear error. Settings come from :class:`SparkConf` (see ``conf.py``: Spark keys
strataflow understands, and ``strataflow.<option>`` for any Context option). As in
PySpark, one SparkContext may be active at a time; ``stop()`` (or leaving a ``with``
block) ends it and its executors.
"""

from __future__ import annotations

import getpass
import os
import re
import sys
import threading
import time
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

from ..accumulators import Accumulator
from ..batch import iter_rows
from ..broadcast import Broadcast
from ..context import Context
from ..whole_files import whole_files
from .conf import SparkConf, context_options
from .rdd import RDD, UnsupportedOperation, unsupported
from .status import StatusListener, StatusTracker

__all__ = ["SparkContext", "parse_master", "SPARK_API_VERSION"]

#: The Spark version whose Python RDD API this package mirrors (its documented examples
#: run as tests), which ``sc.version`` reports so that the checks PySpark programs make
#: (``sc.version >= "3"``, ``LooseVersion(sc.version) >= "2.4"``) take the branch written
#: for the API they meet. strataflow's own version is ``strataflow.__version__``.
SPARK_API_VERSION = "4.0.0"

_LOCAL = re.compile(r"^local(?:\[\s*(\*|\d+)\s*(?:,\s*(\d+)\s*)?\])?$")


def parse_master(master: str | None) -> dict[str, Any]:
    """Context arguments for a master URL."""
    if master is None:
        master = "local[*]"
    m = _LOCAL.match(master.strip())
    if m:
        if m.group(1) == "*":
            n = os.cpu_count() or 1
        else:
            n = int(m.group(1) or 1)  # plain "local": one thread
        if n < 1:
            raise ValueError(f"SparkContext: master {master!r} asks for {n} threads; at least 1 is needed")
        out: dict[str, Any] = {"parallelism": n}
        if m.group(2) is not None:
            out["max_task_attempts"] = int(m.group(2))
        return out
    if master == "ray" or master.startswith("ray://"):
        return {"backend": "ray", "address": None if master == "ray" else master}
    raise ValueError(f"SparkContext: master {master!r} is not supported by strataflow; use local, local[N], "
                     "local[*], local[N, maxFailures], ray or ray://host:port")


def _paths(name: str) -> list[str]:
    """Hadoop's path lists: several paths joined by commas."""
    return [p for p in str(name).split(",") if p] if isinstance(name, str) else [str(name)]


def _local_path(path: str) -> str:
    """A local path or ``file:`` URI; other schemes (hdfs, http...) are refused by name."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        raise UnsupportedOperation(f"{path!r}: only local files can be added in strataflow (no Hadoop "
                                   "file systems or URLs)")
    return path


class SparkContext:
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
        """The active SparkContext, or a new one from ``conf``."""
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
        """Stops the executors and removes the application's working directories."""
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
        return self.ctx.default_parallelism

    @property
    def defaultMinPartitions(self) -> int:
        return min(self.defaultParallelism, 2)

    @property
    def version(self) -> str:
        """The Spark version whose API strataflow mirrors, ``SPARK_API_VERSION`` (there is
        no Spark underneath: ``strataflow.__version__`` is strataflow's own)."""
        return SPARK_API_VERSION

    @property
    def applicationId(self) -> str:
        """``local-<start ms>`` for a local master, as Spark names it (``sc.ctx.app_id`` is
        strataflow's own id, the one in the event log and the directories)."""
        if self.master.startswith("local"):
            return f"local-{self.startTime}"
        return self.ctx.app_id

    @property
    def uiWebUrl(self) -> str | None:
        """The status page's URL (``Context.serve_status``: jobs, stages, storage and the
        cache's counters on 127.0.0.1), started on first use unless ``spark.ui.enabled``
        is ``false`` (then None)."""
        if self._conf.get("spark.ui.enabled", "true").lower() == "false":
            return None
        return self.ctx.serve_status()

    def getSystemProperty(self, key: str) -> str | None:
        """Spark's JVM system properties do not exist here: ``SPARK_SUBMIT`` is ``"true"``
        (an application started as by spark-submit), ``java.*`` and ``user.*`` are taken
        from the Python process (``java.home``: JAVA_HOME, else None), and any other key is
        looked up in the SparkConf, then the environment."""
        if key == "SPARK_SUBMIT":
            return "true"
        known = {"java.home": os.environ.get("JAVA_HOME"), "user.name": getpass.getuser(),
                 "user.dir": os.getcwd(), "user.home": os.path.expanduser("~"), "os.name": sys.platform,
                 "line.separator": os.linesep, "file.separator": os.sep}
        if key in known:
            return known[key]
        return self._conf.get(key) or os.environ.get(key)

    def sparkUser(self) -> str:
        return getpass.getuser()

    def getConf(self) -> SparkConf:
        return self._conf.copy()

    # -- local properties and job groups -----------------------------------------------------------
    def setLocalProperty(self, key: str, value: str | None) -> None:
        props = self._local.__dict__.setdefault("props", {})
        if value is None:
            props.pop(key, None)
        else:
            props[key] = value

    def getLocalProperty(self, key: str) -> str | None:
        return self._local.__dict__.get("props", {}).get(key)

    def setJobGroup(self, groupId: str, description: str, interruptOnCancel: bool = False) -> None:
        """Jobs this thread starts from now on belong to ``groupId`` (see ``statusTracker``)."""
        self.setLocalProperty("spark.jobGroup.id", groupId)
        self.setLocalProperty("spark.job.description", description)

    def setJobDescription(self, value: str) -> None:
        self.setLocalProperty("spark.job.description", value)

    def statusTracker(self) -> StatusTracker:
        return StatusTracker(self._status)

    def setLogLevel(self, logLevel: str) -> None:
        self.ctx.set_log_level(logLevel)

    def setCheckpointDir(self, dirName: str) -> None:
        self.ctx.set_checkpoint_dir(dirName)

    def getCheckpointDir(self) -> str | None:
        return self.ctx.checkpoint_dir

    # -- sources -------------------------------------------------------------------------------------
    def _rdd(self, dataset: Any) -> RDD[Any]:
        return RDD(dataset, self)

    def parallelize(self, c: Iterable[Any], numSlices: int | None = None) -> RDD[Any]:
        return self._rdd(self.ctx.parallelize(c, numSlices))

    def range(self, start: int, end: int | None = None, step: int = 1, numSlices: int | None = None) -> RDD[int]:
        """Built as PySpark builds it: Python code that makes each slice's numbers from the
        slice's index, over a collection of the indices (nothing held on the driver)."""
        if end is None:
            start, end = 0, start
        numbers = range(start, end, step)  # range's own errors: a zero step
        n = self.defaultParallelism if numSlices is None else numSlices
        if n < 1:
            raise ValueError(f"range: numSlices must be >= 1, got {n}")
        return self._rdd(self.ctx.parallelize(list(range(n)), n).map_partitions_with_index(
            lambda i, _, r=numbers, k=n: list(r[len(r) * i // k:len(r) * (i + 1) // k])))

    def emptyRDD(self) -> RDD[Any]:
        return self._rdd(self.ctx.empty_dataset())

    def union(self, rdds: Sequence[RDD[Any]]) -> RDD[Any]:
        return self._rdd(self.ctx.union(*(r.dataset for r in rdds)))

    def textFile(self, name: str, minPartitions: int | None = None, use_unicode: bool = True) -> RDD[str]:
        """Lines of a file, of a directory's files, or of several paths joined by commas."""
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.union(*(self.ctx.text_file(p, n) for p in _paths(name)))
        return self._rdd(ds if use_unicode else ds.map(lambda s: s.encode("utf-8")))

    def wholeTextFiles(self, path: str, minPartitions: int | None = None,
                       use_unicode: bool = True) -> RDD[tuple[str, str]]:
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.whole_text_files(_paths(path), n)
        return self._rdd(ds if use_unicode else ds.map_values(lambda s: s.encode("utf-8")))

    def binaryFiles(self, path: str, minPartitions: int | None = None) -> RDD[tuple[str, bytes]]:
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        return self._rdd(whole_files(self.ctx, _paths(path), n, binary=True))

    def pickleFile(self, name: str, minPartitions: int | None = None) -> RDD[Any]:
        """Records ``saveAsPickleFile`` wrote (a partition per part file; ``minPartitions``
        is accepted and unused)."""
        return self._rdd(self.ctx.pickle_file(_paths(name)))

    def runJob(self, rdd: RDD[Any], partitionFunc: Callable[[Iterator[Any]], Iterable[Any]],
               partitions: Sequence[int] | None = None, allowLocal: bool = False) -> list[Any]:
        """``partitionFunc`` over the records of each of ``partitions`` (default all), its
        results flattened in partition order."""
        parts = rdd.dataset._run(lambda v: list(partitionFunc(iter_rows(v))), partitions,
                                 f"runJob {rdd.dataset.label}")
        return [x for p in parts for x in p]

    # -- not supported ---------------------------------------------------------------------------------
    def sequenceFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        raise unsupported("sequenceFile")

    def hadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        raise unsupported("hadoopFile")

    def newAPIHadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        raise unsupported("newAPIHadoopFile")

    def hadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        raise unsupported("hadoopRDD")

    def newAPIHadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        raise unsupported("newAPIHadoopRDD")

    def binaryRecords(self, path: str, recordLength: int) -> RDD[bytes]:
        """Fixed-length records of ``recordLength`` bytes from each file (whose length must
        be a multiple of it)."""
        if recordLength < 1:
            raise ValueError(f"binaryRecords: recordLength must be >= 1, got {recordLength}")

        def records(kv: tuple) -> list:
            name, data = kv
            if len(data) % recordLength:
                raise ValueError(f"binaryRecords: {name!r} holds {len(data)} bytes, not a multiple of "
                                 f"recordLength={recordLength}")
            return [data[i:i + recordLength] for i in range(0, len(data), recordLength)]

        return self._rdd(whole_files(self.ctx, _paths(path), self.defaultParallelism, binary=True).flat_map(records))

    def cancelJobGroup(self, groupId: str) -> None:
        raise UnsupportedOperation("cancelJobGroup is not supported in strataflow (jobs cannot be cancelled "
                                   "from another thread; stop() ends them all)")

    def cancelAllJobs(self) -> None:
        raise UnsupportedOperation("cancelAllJobs is not supported in strataflow; stop() ends every job")

    def addFile(self, path: str, recursive: bool = False) -> None:
        """Ships a file (a directory with ``recursive=True``) to every executor; tasks open
        ``SparkFiles.get(basename)``. A path added twice is ignored."""
        self.ctx.add_file(_local_path(path), recursive)

    def addArchive(self, path: str) -> None:
        """Ships an archive (zip, jar, tar, tar.gz, tgz...) unpacked; ``SparkFiles.get(name)``
        is its directory (``path#alias`` names it ``alias``)."""
        self.ctx.add_archive(_local_path(path))

    @property
    def listFiles(self) -> list[str]:
        return self.ctx.list_files

    @property
    def listArchives(self) -> list[str]:
        return self.ctx.list_archives

    def addPyFile(self, path: str) -> None:
        raise UnsupportedOperation("addPyFile is not supported in strataflow: executors import from the "
                                   "driver's environment")

    def broadcast(self, value: Any) -> "Broadcast":
        """A read-only value shipped once to each executor (``strataflow.broadcast``)."""
        return self.ctx.broadcast(value)

    def accumulator(self, value: Any, accum_param: Any = None) -> "Accumulator":
        """A value tasks add to and the driver reads, counted once per successful task
        (``strataflow.accumulators``); ``accum_param``: an :class:`AccumulatorParam`."""
        return self.ctx.accumulator(value, accum_param)
