"""One PySpark run of a workload, in its own process and JVM (run by pyspark_peer.py):

    python spark_job.py CONFIG.json RESULT.json

CONFIG holds the workload, data file, path (``df`` | ``rdd``), storage level flags, the
Spark conf (heap, memory fraction, event log, local dirs) and the algorithm's settings.
RESULT gets the phase timings (wall clock, with epoch-ms marks so the event log's jobs can
be placed in phases), the model (centres, training cost), and the storage status after
loading and at the end. The event log itself is read by the parent.

Imports nothing from strataflow, so the child's start-up is only Python + pyspark + JVM.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def _now_ms() -> int:
    return int(time.time() * 1000)


def _storage(sc) -> list[dict]:
    """The cached RDDs as the block manager master sees them (RDDInfo)."""
    out = []
    for info in sc._jsc.sc().getRDDStorageInfo():
        out.append({"id": info.id(), "name": info.name(), "level": info.storageLevel().description(),
                    "partitions": info.numPartitions(), "cached_partitions": info.numCachedPartitions(),
                    "memory_bytes": info.memSize(), "disk_bytes": info.diskSize()})
    return out


def _level(flags: dict | None):
    from pyspark import StorageLevel

    if flags is None:
        return None
    return StorageLevel(flags["use_disk"], flags["use_memory"], flags["off_heap"], flags["deserialized"], 1)


def _kmeans_df(spark, cfg: dict, res: dict) -> None:
    from pyspark.ml.clustering import KMeans
    from pyspark.sql.types import DoubleType, StructField, StructType

    dims = cfg["dims"]
    names = [f"x{i}" for i in range(dims)]
    schema = StructType([StructField(n, DoubleType(), True) for n in names])
    points = _load_df(spark, cfg, res, schema, names, ["features"])
    km = KMeans(k=cfg["k"], maxIter=cfg["iterations"], initMode="random", seed=cfg["seed"], tol=0.0,
                solver=cfg.get("ml_solver", "auto"))
    t0 = time.perf_counter()
    model = km.fit(points)
    res["fit_s"] = time.perf_counter() - t0
    res["marks"]["fit_end"] = _now_ms()
    res["centres"] = [list(map(float, c)) for c in model.clusterCenters()]
    res["training_cost"] = float(model.summary.trainingCost)
    res["num_iter"] = int(model.summary.numIter)


def _parse_point(line: str):
    """MLlib's DenseKMeans parse: ``Vectors.dense(line.split(' ').map(_.toDouble))``."""
    import numpy as np
    from pyspark.mllib.linalg import DenseVector

    return DenseVector(np.array(line.split(" "), dtype=np.float64))


def _load_df(spark, cfg: dict, res: dict, schema, names: list, columns: list):
    """The DataFrame path's load stage: CSV with an explicit schema, features assembled
    into vectors, persisted, counted."""
    from pyspark.ml.feature import VectorAssembler

    level = _level(cfg["level"])
    res["marks"]["load_start"] = _now_ms()
    t0 = time.perf_counter()
    df = spark.read.csv(cfg["data_file"], schema=schema, sep=" ", header=False, inferSchema=False)
    points = VectorAssembler(inputCols=names, outputCol="features").transform(df).select(*columns)
    if level is not None:
        points = points.persist(level)
    res["points"] = points.count()
    res["load_s"] = time.perf_counter() - t0
    res["marks"]["load_end"] = _now_ms()
    res["storage_after_load"] = _storage(spark.sparkContext)
    return points


def _load_rdd(spark, cfg: dict, res: dict, parse):
    """The RDD path's load stage: text lines parsed one by one, persisted, counted."""
    sc = spark.sparkContext
    level = _level(cfg["level"])
    res["marks"]["load_start"] = _now_ms()
    t0 = time.perf_counter()
    parts = cfg.get("num_partitions")
    lines = sc.textFile(cfg["data_file"], parts) if parts else sc.textFile(cfg["data_file"])
    points = lines.map(parse).setName("points")
    if level is not None:
        points.persist(level)
    res["points"] = points.count()
    res["load_s"] = time.perf_counter() - t0
    res["marks"]["load_end"] = _now_ms()
    res["storage_after_load"] = _storage(sc)
    return points


def _kmeans_rdd(spark, cfg: dict, res: dict) -> None:
    import pyspark.mllib.clustering as mllib_clustering

    points = _load_rdd(spark, cfg, res, _parse_point)
    # KMeans.train keeps only the centres of the JVM model it gets back; keep the model too
    # (for its training cost and iteration count) by wrapping the call it makes.
    captured = []
    call = mllib_clustering.callMLlibFunc

    def keep(name, *args):
        out = call(name, *args)
        captured.append(out)
        return out

    mllib_clustering.callMLlibFunc = keep
    try:
        t0 = time.perf_counter()
        model = mllib_clustering.KMeans.train(points, cfg["k"], maxIterations=cfg["iterations"],
                                              initializationMode="random", seed=cfg["seed"], epsilon=0.0)
        res["fit_s"] = time.perf_counter() - t0
        res["marks"]["fit_end"] = _now_ms()
    finally:
        mllib_clustering.callMLlibFunc = call
    res["centres"] = [list(map(float, c)) for c in model.clusterCenters]
    if captured:
        res["training_cost"] = float(captured[-1].trainingCost())
        try:
            res["num_iter"] = int(captured[-1].numIter())
        except Exception:  # private[spark] in Scala; public in bytecode, but not an API
            pass


def _lr_df(spark, cfg: dict, res: dict) -> None:
    """Labelled points ``label f1 ... fd`` -> (label, features) -> persist -> count ->
    ml.LogisticRegression (L-BFGS, no intercept, no penalty, no standardization, tol 0)."""
    from pyspark.ml.classification import LogisticRegression
    from pyspark.sql.types import DoubleType, StructField, StructType

    names = [f"f{i}" for i in range(cfg["dims"])]
    schema = StructType([StructField(n, DoubleType(), True) for n in ["label", *names]])
    points = _load_df(spark, cfg, res, schema, names, ["label", "features"])
    lr = LogisticRegression(maxIter=cfg["iterations"], regParam=0.0, elasticNetParam=0.0, fitIntercept=False,
                            standardization=False, tol=0.0, family="binomial")
    t0 = time.perf_counter()
    model = lr.fit(points)
    res["fit_s"] = time.perf_counter() - t0
    res["marks"]["fit_end"] = _now_ms()
    res["weights"] = [float(v) for v in model.coefficients.toArray()]
    res["objective_history"] = [float(v) for v in model.summary.objectiveHistory]
    res["num_iter"] = int(model.summary.totalIterations)


def _parse_labeled_point(line: str):
    """``label f1 ... fd`` as MLlib's LabeledPoint."""
    import numpy as np
    from pyspark.mllib.regression import LabeledPoint

    values = np.array(line.split(" "), dtype=np.float64)
    return LabeledPoint(values[0], values[1:])


def _lr_rdd(spark, cfg: dict, res: dict) -> None:
    """sc.textFile -> LabeledPoint -> persist -> count -> mllib LogisticRegressionWithSGD
    (full batch, step 1 / sqrt(i), no penalty, no intercept): our lr's algorithm."""
    import warnings

    from pyspark.mllib.classification import LogisticRegressionWithSGD

    points = _load_rdd(spark, cfg, res, _parse_labeled_point)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated since 2.0, still the GD algorithm
        model = LogisticRegressionWithSGD.train(points, iterations=cfg["iterations"], step=1.0, miniBatchFraction=1.0,
                                                regParam=0.0, regType=None, intercept=False, validateData=True,
                                                convergenceTol=0.0)
    res["fit_s"] = time.perf_counter() - t0
    res["marks"]["fit_end"] = _now_ms()
    res["weights"] = [float(v) for v in model.weights.toArray()]


JOBS = {("kmeans", "df"): _kmeans_df, ("kmeans", "rdd"): _kmeans_rdd, ("lr", "df"): _lr_df, ("lr", "rdd"): _lr_rdd}


def main(cfg_path: str, out_path: str) -> int:
    with open(cfg_path) as f:
        cfg = json.load(f)
    res: dict = {"marks": {"process_start": _now_ms()}}
    t0 = time.perf_counter()
    spark = None
    try:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master(f"local[{cfg['parallelism']}]").appName(cfg["app_name"])
        for key, value in cfg["conf"].items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        res["spark_version"] = spark.version
        res["app_id"] = spark.sparkContext.applicationId
        res["jvm_start_s"] = time.perf_counter() - t0
        res["jvm_max_memory"] = int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())
        JOBS[(cfg["workload"], cfg["path"])](spark, cfg, res)
        res["storage_end"] = _storage(spark.sparkContext)
        res["ok"] = True
    except Exception:
        res["ok"] = False
        res["error"] = traceback.format_exc()
    finally:
        if spark is not None:
            t1 = time.perf_counter()
            spark.stop()  # flushes and closes the event log
            res["stop_s"] = time.perf_counter() - t1
        with open(out_path, "w") as f:
            json.dump(res, f)
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
