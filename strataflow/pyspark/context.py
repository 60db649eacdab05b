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

from strataflow.shipping.accumulators import Accumulator
from strataflow.common.batch import iter_rows
from strataflow.config.backends import backend_for_master
from strataflow.shipping.broadcast import Broadcast
from strataflow.context import Context
from strataflow.io.whole_files import whole_files
from strataflow.pyspark.conf import SparkConf, context_options
from strataflow.pyspark.rdd import RDD, UnsupportedOperation, unsupported
from strataflow.pyspark.status import StatusListener, StatusTracker

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
            out["task_max_failures"] = int(m.group(2))  # Spark's maxFailures: see retries.py
        return out
    if (cluster := backend_for_master(master)) is not None:  # "ray", "ray://host:port"
        return {"backend": cluster[0], "address": cluster[1]}
    raise ValueError(f"SparkContext: master {master!r} is not supported by strataflow; use local, local[N], "
                     "local[*], local[N, maxFailures], ray or ray://host:port")


_RECURSIVE_KEY = "spark.hadoop.mapreduce.input.fileinputformat.input.dir.recursive"


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

    # -- sources -------------------------------------------------------------------------------------
    def _rdd(self, dataset: Any) -> RDD[Any]:
        return RDD(dataset, self)

    def parallelize(self, c: Iterable[Any], numSlices: int | None = None) -> RDD[Any]:
        """An RDD of the given records in ``numSlices`` contiguous slices (``Context.parallelize``).

        >>> sc.parallelize(range(5), 2).glom().collect()
        [[0, 1], [2, 3, 4]]
        """
        return self._rdd(self.ctx.parallelize(c, numSlices))

    def range(self, start: int, end: int | None = None, step: int = 1, numSlices: int | None = None) -> RDD[int]:
        """Built as PySpark builds it: Python code that makes each slice's numbers from the
        slice's index, over a collection of the indices (nothing held on the driver).

        >>> sc.range(5).collect(), sc.range(2, 10, 3).collect()
        ([0, 1, 2, 3, 4], [2, 5, 8])
        """
        if end is None:
            start, end = 0, start
        numbers = range(start, end, step)  # range's own errors: a zero step
        n = self.defaultParallelism if numSlices is None else numSlices
        if n < 1:
            raise ValueError(f"range: numSlices must be >= 1, got {n}")
        self.ctx._num(n)  # the bound (max_partitions) before the list of slice indices is made
        return self._rdd(self.ctx.parallelize(list(range(n)), n).map_partitions_with_index(
            lambda i, _, r=numbers, k=n: list(r[len(r) * i // k:len(r) * (i + 1) // k])))

    def emptyRDD(self) -> RDD[Any]:
        """An RDD with no partitions and no records.

        >>> sc.emptyRDD().collect(), sc.emptyRDD().isEmpty()
        ([], True)
        """
        return self._rdd(self.ctx.empty_dataset())

    def union(self, rdds: Sequence[RDD[Any]]) -> RDD[Any]:
        """The partitions of every RDD in ``rdds``, one after the other (no shuffle).

        >>> sc.union([sc.parallelize([1]), sc.parallelize([2, 3])]).collect()
        [1, 2, 3]
        """
        return self._rdd(self.ctx.union(*(r.dataset for r in rdds)))

    def _recursive(self) -> bool:
        """Hadoop's switch for reading directories' subdirectories, set as Spark sets it
        (``spark.hadoop.mapreduce.input.fileinputformat.input.dir.recursive=true``)."""
        return self._conf.get(_RECURSIVE_KEY, "false").strip().lower() == "true"

    def textFile(self, name: str, minPartitions: int | None = None, use_unicode: bool = True) -> RDD[str]:
        r"""Lines of a file, of a directory's files, of a glob's matches, or of several
        paths joined by commas; local (also ``file://``) or at any fsspec URL (``s3://``...).

        >>> _ = open(tmp_dir + "/a.txt", "w").write("x\ny\n"); _ = open(tmp_dir + "/b.txt", "w").write("z\n")
        >>> sc.textFile(tmp_dir + "/a.txt," + tmp_dir + "/b.txt").collect()
        ['x', 'y', 'z']
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.text_file(name, n, recursive=self._recursive())
        return self._rdd(ds if use_unicode else ds.map(lambda s: s.encode("utf-8")))

    def wholeTextFiles(self, path: str, minPartitions: int | None = None,
                       use_unicode: bool = True) -> RDD[tuple[str, str]]:
        """``(path, content)`` of every file of a directory (``Context.whole_text_files``), a record
        each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/docs"); _ = open(tmp_dir + "/docs/a.txt", "w").write("hi")
        >>> [(os.path.basename(p), text) for p, text in sc.wholeTextFiles(tmp_dir + "/docs").collect()]
        [('a.txt', 'hi')]
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        ds = self.ctx.whole_text_files(path, n, recursive=self._recursive())
        return self._rdd(ds if use_unicode else ds.map_values(lambda s: s.encode("utf-8")))

    def binaryFiles(self, path: str, minPartitions: int | None = None) -> RDD[tuple[str, bytes]]:
        r"""``(path, bytes)`` of every file of a directory (or of one file), a record each.

        >>> import os
        >>> os.makedirs(tmp_dir + "/bin"); _ = open(tmp_dir + "/bin/a.dat", "wb").write(bytes([1, 2]))
        >>> [(os.path.basename(p), data) for p, data in sc.binaryFiles(tmp_dir + "/bin").collect()]
        [('a.dat', b'\x01\x02')]
        """
        n = self.defaultMinPartitions if minPartitions is None else minPartitions
        return self._rdd(whole_files(self.ctx, path, n, binary=True, recursive=self._recursive()))

    def pickleFile(self, name: str, minPartitions: int | None = None) -> RDD[Any]:
        """Records ``saveAsPickleFile`` wrote (a partition per part file; ``minPartitions``
        is accepted and unused).

        >>> sc.parallelize([{"a": 1}, [2]]).saveAsPickleFile(tmp_dir + "/p")
        >>> sorted(sc.pickleFile(tmp_dir + "/p").collect(), key=str)
        [[2], {'a': 1}]
        """
        return self._rdd(self.ctx.pickle_file(name, recursive=self._recursive()))

    def runJob(self, rdd: RDD[Any], partitionFunc: Callable[[Iterator[Any]], Iterable[Any]],
               partitions: Sequence[int] | None = None, allowLocal: bool = False) -> list[Any]:
        """``partitionFunc`` over the records of each of ``partitions`` (default all), its
        results flattened in partition order.

        >>> rdd = sc.parallelize(range(6), 3)
        >>> sc.runJob(rdd, lambda records: [sum(records)], partitions=[0, 2])
        [1, 9]
        """
        parts = rdd.dataset._run(lambda v: list(partitionFunc(iter_rows(v))), partitions,
                                 f"runJob {rdd.dataset.label}")
        return [x for p in parts for x in p]

    # -- not supported ---------------------------------------------------------------------------------
    def sequenceFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): sequence files are a Hadoop format; use
        ``pickleFile``.

        >>> sc.sequenceFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: sequenceFile is not supported in strataflow ...
        """
        raise unsupported("sequenceFile")

    def hadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.hadoopFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: hadoopFile is not supported in strataflow ...
        """
        raise unsupported("hadoopFile")

    def newAPIHadoopFile(self, path: str, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.newAPIHadoopFile("data.seq")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: newAPIHadoopFile is not supported in strataflow ...
        """
        raise unsupported("newAPIHadoopFile")

    def hadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.hadoopRDD("org.apache.hadoop.mapred.TextInputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: hadoopRDD is not supported in strataflow ...
        """
        raise unsupported("hadoopRDD")

    def newAPIHadoopRDD(self, *args: Any, **kwargs: Any) -> RDD[Any]:
        """Not supported (UnsupportedOperation): Hadoop input formats need the JVM; use ``textFile`` or
        ``pickleFile``.

        >>> sc.newAPIHadoopRDD("org.apache.hadoop.mapreduce.lib.input.TextInputFormat")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: newAPIHadoopRDD is not supported in strataflow ...
        """
        raise unsupported("newAPIHadoopRDD")

    def binaryRecords(self, path: str, recordLength: int) -> RDD[bytes]:
        """Fixed-length records of ``recordLength`` bytes from each file (whose length must
        be a multiple of it).

        >>> _ = open(tmp_dir + "/recs.dat", "wb").write(b"aabbcc")
        >>> sc.binaryRecords(tmp_dir + "/recs.dat", 2).collect()
        [b'aa', b'bb', b'cc']
        """
        if recordLength < 1:
            raise ValueError(f"binaryRecords: recordLength must be >= 1, got {recordLength}")

        def records(kv: tuple) -> list:
            name, data = kv
            if len(data) % recordLength:
                raise ValueError(f"binaryRecords: {name!r} holds {len(data)} bytes, not a multiple of "
                                 f"recordLength={recordLength}")
            return [data[i:i + recordLength] for i in range(0, len(data), recordLength)]

        return self._rdd(whole_files(self.ctx, path, self.defaultParallelism, binary=True,
                                     recursive=self._recursive()).flat_map(records))

    def cancelJobGroup(self, groupId: str) -> None:
        """Not supported (UnsupportedOperation): jobs cannot be cancelled from another thread;
        ``stop()`` ends them all.

        >>> sc.cancelJobGroup("nightly")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: cancelJobGroup is not supported in strataflow ...
        """
        raise UnsupportedOperation("cancelJobGroup is not supported in strataflow (jobs cannot be cancelled "
                                   "from another thread; stop() ends them all)")

    def cancelAllJobs(self) -> None:
        """Not supported (UnsupportedOperation): jobs cannot be cancelled from another thread;
        ``stop()`` ends them all.

        >>> sc.cancelAllJobs()
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: cancelAllJobs is not supported in strataflow; stop() ends every job
        """
        raise UnsupportedOperation("cancelAllJobs is not supported in strataflow; stop() ends every job")

    def addFile(self, path: str, recursive: bool = False) -> None:
        """Ships a file (a directory with ``recursive=True``) to every executor; tasks open
        ``SparkFiles.get(basename)``. A path added twice is ignored.

        >>> from strataflow.pyspark import SparkFiles
        >>> _ = open(tmp_dir + "/stop.txt", "w").write("a the")
        >>> sc.addFile(tmp_dir + "/stop.txt")
        >>> sc.parallelize([0], 1).map(lambda _: open(SparkFiles.get("stop.txt")).read()).collect()
        ['a the']
        """
        self.ctx.add_file(_local_path(path), recursive)

    def addArchive(self, path: str) -> None:
        """Ships an archive (zip, jar, tar, tar.gz, tgz...) unpacked; ``SparkFiles.get(name)``
        is its directory (``path#alias`` names it ``alias``).

        >>> import os, shutil
        >>> from strataflow.pyspark import SparkFiles
        >>> os.makedirs(tmp_dir + "/conf"); _ = open(tmp_dir + "/conf/k.txt", "w").write("v")
        >>> sc.addArchive(shutil.make_archive(tmp_dir + "/conf", "zip", tmp_dir + "/conf"))
        >>> sc.parallelize([0], 1).map(lambda _: open(SparkFiles.get("conf.zip") + "/k.txt").read()).collect()
        ['v']
        """
        self.ctx.add_archive(_local_path(path))

    @property
    def listFiles(self) -> list[str]:
        """The URIs of the files and directories added with ``addFile``.

        >>> _ = open(tmp_dir + "/listed.txt", "w").write("x")
        >>> sc.addFile(tmp_dir + "/listed.txt")
        >>> any(uri.endswith("/listed.txt") for uri in sc.listFiles)
        True
        """
        return self.ctx.list_files

    @property
    def listArchives(self) -> list[str]:
        """The URIs of the archives added with ``addArchive``.

        >>> import shutil
        >>> sc.addArchive(shutil.make_archive(tmp_dir + "/listed", "zip", tmp_dir))
        >>> any(uri.endswith("/listed.zip") for uri in sc.listArchives)
        True
        """
        return self.ctx.list_archives

    def addPyFile(self, path: str) -> None:
        """Not supported (UnsupportedOperation): executors import from the driver's environment, so
        install the module there instead.

        >>> sc.addPyFile("lib.zip")
        Traceback (most recent call last):
        ...
        strataflow.pyspark.rdd.UnsupportedOperation: addPyFile is not supported in strataflow: ...
        """
        raise UnsupportedOperation("addPyFile is not supported in strataflow: executors import from the "
                                   "driver's environment")

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
