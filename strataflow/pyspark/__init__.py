"""A PySpark-compatible naming layer over strataflow: change one import and a PySpark RDD
program runs on strataflow's engine, with no JVM.

    from strataflow.pyspark import SparkContext      # was: from pyspark import SparkContext
    sc = SparkContext("local[4]", "app")
    sc.parallelize(range(10)).map(lambda x: x * x).sum()

Every name here is a thin wrapper: ``RDD`` methods delegate to :class:`strataflow.Dataset`
(``rdd.dataset``), ``SparkContext`` to :class:`strataflow.Context` (``sc.ctx``). Not
supported (they raise :class:`UnsupportedOperation`, a NotImplementedError): the Hadoop
input and output formats (sequence files, ``hadoopFile``, ``saveAsHadoopFile``...),
the Snappy, LZ4 and Zstandard codecs, DataFrames (``toDF``, and ``SparkSession``'s
``createDataFrame``, ``read``, ``sql``...: ``strataflow.pyspark.sql`` has the session's
RDD side only). ``sc.version`` is the Spark API version mirrored (``SPARK_API_VERSION``).
This package never imports the real ``pyspark``.
"""

from strataflow.dataset.approximate import BoundedFloat
from strataflow.shipping.broadcast import Broadcast
from strataflow.pyspark.accumulators import Accumulator, AccumulatorParam
from strataflow.shuffle.partitioner import portable_hash
from strataflow.pyspark.conf import SparkConf
from strataflow.pyspark.context import SPARK_API_VERSION, SparkContext
from strataflow.pyspark.files import SparkFiles
from strataflow.pyspark.rdd import RDD, RDDBarrier, UnsupportedOperation
from strataflow.pyspark.resultiterable import ResultIterable
from strataflow.pyspark.statcounter import StatCounter
from strataflow.pyspark.status import SparkJobInfo, SparkStageInfo, StatusTracker
from strataflow.pyspark.storagelevel import StorageLevel

#: as ``pyspark.__version__``: the Spark API version mirrored (``SPARK_API_VERSION``)
__version__ = SPARK_API_VERSION

__all__ = ["SparkContext", "SparkConf", "RDD", "RDDBarrier", "StorageLevel", "ResultIterable", "StatCounter",
           "StatusTracker", "SparkJobInfo", "SparkStageInfo", "BoundedFloat", "portable_hash",
           "UnsupportedOperation", "SparkFiles", "Broadcast", "Accumulator", "AccumulatorParam"]
