"""PySpark's documented examples, run on ``strataflow.pyspark``.

Each entry of ``EXAMPLES`` is the "Examples" section of a method's docstring in PySpark
4.x (``pyspark/core/rdd.py`` and ``pyspark/core/context.py``, Apache License 2.0), with
PySpark's documented outputs, run by ``doctest`` against a ``SparkContext("local[4]")`` as
PySpark's own doctests are (``ELLIPSIS``; ``NORMALIZE_WHITESPACE`` for the multi-line dicts),
errors compared by type *and* message. The one change in them: ``from pyspark`` is
``from strataflow.pyspark``. Left out: the Hadoop formats (tested below: they raise
UnsupportedOperation); the broadcast and accumulator examples are in
``test_pyspark_context.py``. Everything else in those two classes' documentation is here,
with ``RDDBarrier``'s and ``portable_hash``'s (a name of PySpark's module globals, as
here). ``test_pyspark_doctests.py`` runs the installed PySpark's own doctests as they are.

They run on the threads backend (fast), except ``foreach`` and ``foreachPartition``,
whose prints PySpark documents as not reaching the driver's output: they run on executor
processes, as ``local[4]`` does by default (``test_pyspark_context.py`` runs more of them
there). Tests of behaviour beyond the examples follow them.
"""

from __future__ import annotations

import doctest
import os
import sys
import tempfile
from collections import defaultdict
from typing import get_type_hints

import pytest

from strataflow.pyspark import (RDD, BoundedFloat, ResultIterable, SparkConf, SparkContext, StatCounter,
                                StorageLevel, UnsupportedOperation, portable_hash)
from strataflow.storage.level import StorageLevel as NativeLevel

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: prints from tasks: not in the driver's output on executor processes (test_pyspark_context.py)
ON_PROCESSES_ONLY = {"RDD.foreach", "RDD.foreachPartition"}

EXAMPLES = {
    "RDD.id": r'''
        >>> rdd = sc.range(5)
        >>> rdd.id()  # doctest: +SKIP
        3
''',
    "RDD.context": r'''
        >>> rdd = sc.range(5)
        >>> rdd.context
        <SparkContext ...>
        >>> rdd.context is sc
        True
''',
    "RDD.cache": r'''
        >>> rdd = sc.range(5)
        >>> rdd2 = rdd.cache()
        >>> rdd2 is rdd
        True
        >>> str(rdd.getStorageLevel())
        'Memory Serialized 1x Replicated'
        >>> _ = rdd.unpersist()
''',
    "RDD.persist": r'''
        >>> rdd = sc.parallelize(["b", "a", "c"])
        >>> rdd.persist().is_cached
        True
        >>> str(rdd.getStorageLevel())
        'Memory Serialized 1x Replicated'
        >>> _ = rdd.unpersist()
        >>> rdd.is_cached
        False

        >>> from strataflow.pyspark import StorageLevel
        >>> rdd2 = sc.range(5)
        >>> _ = rdd2.persist(StorageLevel.MEMORY_AND_DISK)
        >>> rdd2.is_cached
        True
        >>> str(rdd2.getStorageLevel())
        'Disk Memory Serialized 1x Replicated'

        Can not override existing storage level

        >>> _ = rdd2.persist(StorageLevel.MEMORY_ONLY_2)
        Traceback (most recent call last):
            ...
        py4j.protocol.Py4JJavaError: ...

        Assign another storage level after `unpersist`

        >>> _ = rdd2.unpersist()
        >>> rdd2.is_cached
        False
        >>> _ = rdd2.persist(StorageLevel.MEMORY_ONLY_2)
        >>> str(rdd2.getStorageLevel())
        'Memory Serialized 2x Replicated'
        >>> rdd2.is_cached
        True
        >>> _ = rdd2.unpersist()
''',
    "RDD.unpersist": r'''
        >>> rdd = sc.range(5)
        >>> rdd.is_cached
        False
        >>> _ = rdd.unpersist()
        >>> rdd.is_cached
        False
        >>> _ = rdd.cache()
        >>> rdd.is_cached
        True
        >>> _ = rdd.unpersist()
        >>> rdd.is_cached
        False
        >>> _ = rdd.unpersist()
''',
    "RDD.checkpoint": r'''
        >>> rdd = sc.range(5)
        >>> rdd.is_checkpointed
        False
        >>> rdd.getCheckpointFile() == None
        True

        >>> rdd.checkpoint()
        >>> rdd.is_checkpointed
        True
        >>> rdd.getCheckpointFile() == None
        True

        >>> rdd.count()
        5
        >>> rdd.is_checkpointed
        True
        >>> rdd.getCheckpointFile() == None
        False
''',
    "RDD.localCheckpoint": r'''
        >>> rdd = sc.range(5)
        >>> rdd.isLocallyCheckpointed()
        False

        >>> rdd.localCheckpoint()
        >>> rdd.isLocallyCheckpointed()
        True
''',
    "RDD.map": r'''
        >>> rdd = sc.parallelize(["b", "a", "c"])
        >>> sorted(rdd.map(lambda x: (x, 1)).collect())
        [('a', 1), ('b', 1), ('c', 1)]
''',
    "RDD.flatMap": r'''
        >>> rdd = sc.parallelize([2, 3, 4])
        >>> sorted(rdd.flatMap(lambda x: range(1, x)).collect())
        [1, 1, 1, 2, 2, 3]
        >>> sorted(rdd.flatMap(lambda x: [(x, x), (x, x)]).collect())
        [(2, 2), (2, 2), (3, 3), (3, 3), (4, 4), (4, 4)]
''',
    "RDD.mapPartitions": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4], 2)
        >>> def f(iterator): yield sum(iterator)
        ...
        >>> rdd.mapPartitions(f).collect()
        [3, 7]
''',
    "RDD.mapPartitionsWithIndex": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4], 4)
        >>> def f(splitIndex, iterator): yield splitIndex
        ...
        >>> rdd.mapPartitionsWithIndex(f).sum()
        6
''',
    "RDD.mapPartitionsWithSplit": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4], 4)
        >>> def f(splitIndex, iterator): yield splitIndex
        ...
        >>> rdd.mapPartitionsWithSplit(f).sum()
        6
''',
    "RDD.getNumPartitions": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4], 2)
        >>> rdd.getNumPartitions()
        2
''',
    "RDD.filter": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4, 5])
        >>> rdd.filter(lambda x: x % 2 == 0).collect()
        [2, 4]
''',
    "RDD.distinct": r'''
        >>> sorted(sc.parallelize([1, 1, 2, 3]).distinct().collect())
        [1, 2, 3]
''',
    "RDD.sample": r'''
        >>> rdd = sc.parallelize(range(100), 4)
        >>> 6 <= rdd.sample(False, 0.1, 81).count() <= 14
        True
''',
    "RDD.randomSplit": r'''
        >>> rdd = sc.parallelize(range(500), 1)
        >>> rdd1, rdd2 = rdd.randomSplit([2, 3], 17)
        >>> len(rdd1.collect() + rdd2.collect())
        500
        >>> 150 < rdd1.count() < 250
        True
        >>> 250 < rdd2.count() < 350
        True
''',
    "RDD.takeSample": r'''
        >>> import sys
        >>> rdd = sc.parallelize(range(0, 10))
        >>> len(rdd.takeSample(True, 20, 1))
        20
        >>> len(rdd.takeSample(False, 5, 2))
        5
        >>> len(rdd.takeSample(False, 15, 3))
        10
        >>> sc.range(0, 10).takeSample(False, sys.maxsize)
        Traceback (most recent call last):
            ...
        ValueError: Sample size cannot be greater than ...
''',
    "RDD.union": r'''
        >>> rdd = sc.parallelize([1, 1, 2, 3])
        >>> rdd.union(rdd).collect()
        [1, 1, 2, 3, 1, 1, 2, 3]
''',
    "RDD.intersection": r'''
        >>> rdd1 = sc.parallelize([1, 10, 2, 3, 4, 5])
        >>> rdd2 = sc.parallelize([1, 6, 2, 3, 7, 8])
        >>> rdd1.intersection(rdd2).collect()
        [1, 2, 3]
''',
    "RDD.repartitionAndSortWithinPartitions": r'''
        >>> rdd = sc.parallelize([(0, 5), (3, 8), (2, 6), (0, 8), (3, 8), (1, 3)])
        >>> rdd2 = rdd.repartitionAndSortWithinPartitions(2, lambda x: x % 2, True)
        >>> rdd2.glom().collect()
        [[(0, 5), (0, 8), (2, 6)], [(1, 3), (3, 8), (3, 8)]]
''',
    "RDD.sortByKey": r'''
        >>> tmp = [('a', 1), ('b', 2), ('1', 3), ('d', 4), ('2', 5)]
        >>> sc.parallelize(tmp).sortByKey().first()
        ('1', 3)
        >>> sc.parallelize(tmp).sortByKey(True, 1).collect()
        [('1', 3), ('2', 5), ('a', 1), ('b', 2), ('d', 4)]
        >>> sc.parallelize(tmp).sortByKey(True, 2).collect()
        [('1', 3), ('2', 5), ('a', 1), ('b', 2), ('d', 4)]
        >>> tmp2 = [('Mary', 1), ('had', 2), ('a', 3), ('little', 4), ('lamb', 5)]
        >>> tmp2.extend([('whose', 6), ('fleece', 7), ('was', 8), ('white', 9)])
        >>> sc.parallelize(tmp2).sortByKey(True, 3, keyfunc=lambda k: k.lower()).collect()
        [('a', 3), ('fleece', 7), ('had', 2), ('lamb', 5),...('white', 9), ('whose', 6)]
''',
    "RDD.sortBy": r'''
        >>> tmp = [('a', 1), ('b', 2), ('1', 3), ('d', 4), ('2', 5)]
        >>> sc.parallelize(tmp).sortBy(lambda x: x[0]).collect()
        [('1', 3), ('2', 5), ('a', 1), ('b', 2), ('d', 4)]
        >>> sc.parallelize(tmp).sortBy(lambda x: x[1]).collect()
        [('a', 1), ('b', 2), ('1', 3), ('d', 4), ('2', 5)]
''',
    "RDD.glom": r'''
        >>> rdd = sc.parallelize([1, 2, 3, 4], 2)
        >>> sorted(rdd.glom().collect())
        [[1, 2], [3, 4]]
''',
    "RDD.cartesian": r'''
        >>> rdd = sc.parallelize([1, 2])
        >>> sorted(rdd.cartesian(rdd).collect())
        [(1, 1), (1, 2), (2, 1), (2, 2)]
''',
    "RDD.groupBy": r'''
        >>> rdd = sc.parallelize([1, 1, 2, 3, 5, 8])
        >>> result = rdd.groupBy(lambda x: x % 2).collect()
        >>> sorted([(x, sorted(y)) for (x, y) in result])
        [(0, [2, 8]), (1, [1, 1, 3, 5])]
''',
    "RDD.pipe": r'''
        >>> sc.parallelize(['1', '2', '', '3']).pipe('cat').collect()
        ['1', '2', '', '3']
''',
    "RDD.collect": r'''
        >>> sc.range(5).collect()
        [0, 1, 2, 3, 4]
        >>> sc.parallelize(["x", "y", "z"]).collect()
        ['x', 'y', 'z']
''',
    "RDD.reduce": r'''
        >>> from operator import add
        >>> sc.parallelize([1, 2, 3, 4, 5]).reduce(add)
        15
        >>> sc.parallelize((2 for _ in range(10))).map(lambda x: 1).cache().reduce(add)
        10
        >>> sc.parallelize([]).reduce(add)
        Traceback (most recent call last):
            ...
        ValueError: Can not reduce() empty RDD
''',
    "RDD.treeReduce": r'''
        >>> add = lambda x, y: x + y
        >>> rdd = sc.parallelize([-5, -4, -3, -2, -1, 1, 2, 3, 4], 10)
        >>> rdd.treeReduce(add)
        -5
        >>> rdd.treeReduce(add, 1)
        -5
        >>> rdd.treeReduce(add, 2)
        -5
        >>> rdd.treeReduce(add, 5)
        -5
        >>> rdd.treeReduce(add, 10)
        -5
''',
    "RDD.fold": r'''
        >>> from operator import add
        >>> sc.parallelize([1, 2, 3, 4, 5]).fold(0, add)
        15
''',
    "RDD.aggregate": r'''
        >>> seqOp = (lambda x, y: (x[0] + y, x[1] + 1))
        >>> combOp = (lambda x, y: (x[0] + y[0], x[1] + y[1]))
        >>> sc.parallelize([1, 2, 3, 4]).aggregate((0, 0), seqOp, combOp)
        (10, 4)
        >>> sc.parallelize([]).aggregate((0, 0), seqOp, combOp)
        (0, 0)
''',
    "RDD.treeAggregate": r'''
        >>> add = lambda x, y: x + y
        >>> rdd = sc.parallelize([-5, -4, -3, -2, -1, 1, 2, 3, 4], 10)
        >>> rdd.treeAggregate(0, add, add)
        -5
        >>> rdd.treeAggregate(0, add, add, 1)
        -5
        >>> rdd.treeAggregate(0, add, add, 2)
        -5
        >>> rdd.treeAggregate(0, add, add, 5)
        -5
        >>> rdd.treeAggregate(0, add, add, 10)
        -5
''',
    "RDD.max": r'''
        >>> rdd = sc.parallelize([1.0, 5.0, 43.0, 10.0])
        >>> rdd.max()
        43.0
        >>> rdd.max(key=str)
        5.0
''',
    "RDD.min": r'''
        >>> rdd = sc.parallelize([2.0, 5.0, 43.0, 10.0])
        >>> rdd.min()
        2.0
        >>> rdd.min(key=str)
        10.0
''',
    "RDD.sum": r'''
        >>> sc.parallelize([1.0, 2.0, 3.0]).sum()
        6.0
''',
    "RDD.count": r'''
        >>> sc.parallelize([2, 3, 4]).count()
        3
''',
    "RDD.histogram": r'''
        >>> rdd = sc.parallelize(range(51))
        >>> rdd.histogram(2)
        ([0, 25, 50], [25, 26])
        >>> rdd.histogram([0, 5, 25, 50])
        ([0, 5, 25, 50], [5, 20, 26])
        >>> rdd.histogram([0, 15, 30, 45, 60])  # evenly spaced buckets
        ([0, 15, 30, 45, 60], [15, 15, 15, 6])
        >>> rdd = sc.parallelize(["ab", "ac", "b", "bd", "ef"])
        >>> rdd.histogram(("a", "b", "c"))
        (('a', 'b', 'c'), [2, 2])
''',
    "RDD.mean": r'''
        >>> sc.parallelize([1, 2, 3]).mean()
        2.0
''',
    "RDD.variance": r'''
        >>> sc.parallelize([1, 2, 3]).variance()
        0.666...
''',
    "RDD.stdev": r'''
        >>> sc.parallelize([1, 2, 3]).stdev()
        0.816...
''',
    "RDD.sampleStdev": r'''
        >>> sc.parallelize([1, 2, 3]).sampleStdev()
        1.0
''',
    "RDD.sampleVariance": r'''
        >>> sc.parallelize([1, 2, 3]).sampleVariance()
        1.0
''',
    "RDD.countByValue": r'''
        >>> sorted(sc.parallelize([1, 2, 1, 2, 2], 2).countByValue().items())
        [(1, 2), (2, 3)]
''',
    "RDD.top": r'''
        >>> sc.parallelize([10, 4, 2, 12, 3]).top(1)
        [12]
        >>> sc.parallelize([2, 3, 4, 5, 6], 2).top(2)
        [6, 5]
        >>> sc.parallelize([10, 4, 2, 12, 3]).top(3, key=str)
        [4, 3, 2]
''',
    "RDD.takeOrdered": r'''
        >>> sc.parallelize([10, 1, 2, 9, 3, 4, 5, 6, 7]).takeOrdered(6)
        [1, 2, 3, 4, 5, 6]
        >>> sc.parallelize([10, 1, 2, 9, 3, 4, 5, 6, 7], 2).takeOrdered(6, key=lambda x: -x)
        [10, 9, 7, 6, 5, 4]
        >>> sc.emptyRDD().takeOrdered(3)
        []
''',
    "RDD.take": r'''
        >>> sc.parallelize([2, 3, 4, 5, 6]).cache().take(2)
        [2, 3]
        >>> sc.parallelize([2, 3, 4, 5, 6]).take(10)
        [2, 3, 4, 5, 6]
        >>> sc.parallelize(range(100), 100).filter(lambda x: x > 90).take(3)
        [91, 92, 93]
''',
    "RDD.first": r'''
        >>> sc.parallelize([2, 3, 4]).first()
        2
        >>> sc.parallelize([]).first()
        Traceback (most recent call last):
            ...
        ValueError: RDD is empty
''',
    "RDD.isEmpty": r'''
        >>> sc.parallelize([]).isEmpty()
        True
        >>> sc.parallelize([1]).isEmpty()
        False
''',
    "RDD.saveAsPickleFile": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="saveAsPickleFile") as d:
        ...     path = os.path.join(d, "pickle_file")
        ...
        ...     # Write a temporary pickled file
        ...     sc.parallelize(range(10)).saveAsPickleFile(path, 3)
        ...
        ...     # Load picked file as an RDD
        ...     sorted(sc.pickleFile(path, 3).collect())
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
''',
    "RDD.saveAsTextFile": r'''
        >>> import os
        >>> import tempfile
        >>> from fileinput import input
        >>> from glob import glob
        >>> with tempfile.TemporaryDirectory(prefix="saveAsTextFile1") as d1:
        ...     path1 = os.path.join(d1, "text_file1")
        ...
        ...     # Write a temporary text file
        ...     sc.parallelize(range(10)).saveAsTextFile(path1)
        ...
        ...     # Load text file as an RDD
        ...     ''.join(sorted(input(glob(path1 + "/part-0000*"))))
        '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n'

        Empty lines are tolerated when saving to text files.

        >>> with tempfile.TemporaryDirectory(prefix="saveAsTextFile2") as d2:
        ...     path2 = os.path.join(d2, "text2_file2")
        ...
        ...     # Write another temporary text file
        ...     sc.parallelize(['', 'foo', '', 'bar', '']).saveAsTextFile(path2)
        ...
        ...     # Load text file as an RDD
        ...     ''.join(sorted(input(glob(path2 + "/part-0000*"))))
        '\n\n\nbar\nfoo\n'

        Using compressionCodecClass

        >>> from fileinput import input, hook_compressed
        >>> with tempfile.TemporaryDirectory(prefix="saveAsTextFile3") as d3:
        ...     path3 = os.path.join(d3, "text3")
        ...     codec = "org.apache.hadoop.io.compress.GzipCodec"
        ...
        ...     # Write another temporary text file with specified codec
        ...     sc.parallelize(['foo', 'bar']).saveAsTextFile(path3, codec)
        ...
        ...     # Load text file as an RDD
        ...     result = sorted(input(glob(path3 + "/part*.gz"), openhook=hook_compressed))
        ...     ''.join([r.decode('utf-8') if isinstance(r, bytes) else r for r in result])
        'bar\nfoo\n'
''',
    "RDD.collectAsMap": r'''
        >>> m = sc.parallelize([(1, 2), (3, 4)]).collectAsMap()
        >>> m[1]
        2
        >>> m[3]
        4
''',
    "RDD.keys": r'''
        >>> rdd = sc.parallelize([(1, 2), (3, 4)]).keys()
        >>> rdd.collect()
        [1, 3]
''',
    "RDD.values": r'''
        >>> rdd = sc.parallelize([(1, 2), (3, 4)]).values()
        >>> rdd.collect()
        [2, 4]
''',
    "RDD.reduceByKey": r'''
        >>> from operator import add
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
        >>> sorted(rdd.reduceByKey(add).collect())
        [('a', 2), ('b', 1)]
''',
    "RDD.reduceByKeyLocally": r'''
        >>> from operator import add
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
        >>> sorted(rdd.reduceByKeyLocally(add).items())
        [('a', 2), ('b', 1)]
''',
    "RDD.countByKey": r'''
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
        >>> sorted(rdd.countByKey().items())
        [('a', 2), ('b', 1)]
''',
    "RDD.join": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd2 = sc.parallelize([("a", 2), ("a", 3)])
        >>> sorted(rdd1.join(rdd2).collect())
        [('a', (1, 2)), ('a', (1, 3))]
''',
    "RDD.leftOuterJoin": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd2 = sc.parallelize([("a", 2)])
        >>> sorted(rdd1.leftOuterJoin(rdd2).collect())
        [('a', (1, 2)), ('b', (4, None))]
''',
    "RDD.rightOuterJoin": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd2 = sc.parallelize([("a", 2)])
        >>> sorted(rdd2.rightOuterJoin(rdd1).collect())
        [('a', (2, 1)), ('b', (None, 4))]
''',
    "RDD.fullOuterJoin": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd2 = sc.parallelize([("a", 2), ("c", 8)])
        >>> sorted(rdd1.fullOuterJoin(rdd2).collect())
        [('a', (1, 2)), ('b', (4, None)), ('c', (None, 8))]
''',
    "RDD.partitionBy": r'''
        >>> pairs = sc.parallelize([1, 2, 3, 4, 2, 4, 1]).map(lambda x: (x, x))
        >>> sets = pairs.partitionBy(2).glom().collect()
        >>> len(set(sets[0]).intersection(set(sets[1])))
        0
''',
    "RDD.combineByKey": r'''
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 2)])
        >>> def to_list(a):
        ...     return [a]
        ...
        >>> def append(a, b):
        ...     a.append(b)
        ...     return a
        ...
        >>> def extend(a, b):
        ...     a.extend(b)
        ...     return a
        ...
        >>> sorted(rdd.combineByKey(to_list, append, extend).collect())
        [('a', [1, 2]), ('b', [1])]
''',
    "RDD.aggregateByKey": r'''
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 2)])
        >>> seqFunc = (lambda x, y: (x[0] + y, x[1] + 1))
        >>> combFunc = (lambda x, y: (x[0] + y[0], x[1] + y[1]))
        >>> sorted(rdd.aggregateByKey((0, 0), seqFunc, combFunc).collect())
        [('a', (3, 2)), ('b', (1, 1))]
''',
    "RDD.foldByKey": r'''
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
        >>> from operator import add
        >>> sorted(rdd.foldByKey(0, add).collect())
        [('a', 2), ('b', 1)]
''',
    "RDD.groupByKey": r'''
        >>> rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
        >>> sorted(rdd.groupByKey().mapValues(len).collect())
        [('a', 2), ('b', 1)]
        >>> sorted(rdd.groupByKey().mapValues(list).collect())
        [('a', [1, 1]), ('b', [1])]
''',
    "RDD.flatMapValues": r'''
        >>> rdd = sc.parallelize([("a", ["x", "y", "z"]), ("b", ["p", "r"])])
        >>> def f(x): return x
        ...
        >>> rdd.flatMapValues(f).collect()
        [('a', 'x'), ('a', 'y'), ('a', 'z'), ('b', 'p'), ('b', 'r')]
''',
    "RDD.mapValues": r'''
        >>> rdd = sc.parallelize([("a", ["apple", "banana", "lemon"]), ("b", ["grapes"])])
        >>> def f(x): return len(x)
        ...
        >>> rdd.mapValues(f).collect()
        [('a', 3), ('b', 1)]
''',
    "RDD.groupWith": r'''
        >>> rdd1 = sc.parallelize([("a", 5), ("b", 6)])
        >>> rdd2 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd3 = sc.parallelize([("a", 2)])
        >>> rdd4 = sc.parallelize([("b", 42)])
        >>> [(x, tuple(map(list, y))) for x, y in
        ...     sorted(list(rdd1.groupWith(rdd2, rdd3, rdd4).collect()))]
        [('a', ([5], [1], [2], [])), ('b', ([6], [4], [], [42]))]
''',
    "RDD.cogroup": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4)])
        >>> rdd2 = sc.parallelize([("a", 2)])
        >>> [(x, tuple(map(list, y))) for x, y in sorted(list(rdd1.cogroup(rdd2).collect()))]
        [('a', ([1], [2])), ('b', ([4], []))]
''',
    "RDD.sampleByKey": r'''
        >>> fractions = {"a": 0.2, "b": 0.1}
        >>> rdd = sc.parallelize(fractions.keys()).cartesian(sc.parallelize(range(0, 1000)))
        >>> sample = dict(rdd.sampleByKey(False, fractions, 2).groupByKey().collect())
        >>> 100 < len(sample["a"]) < 300 and 50 < len(sample["b"]) < 150
        True
        >>> max(sample["a"]) <= 999 and min(sample["a"]) >= 0
        True
        >>> max(sample["b"]) <= 999 and min(sample["b"]) >= 0
        True
''',
    "RDD.subtractByKey": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4), ("b", 5), ("a", 2)])
        >>> rdd2 = sc.parallelize([("a", 3), ("c", None)])
        >>> sorted(rdd1.subtractByKey(rdd2).collect())
        [('b', 4), ('b', 5)]
''',
    "RDD.subtract": r'''
        >>> rdd1 = sc.parallelize([("a", 1), ("b", 4), ("b", 5), ("a", 3)])
        >>> rdd2 = sc.parallelize([("a", 3), ("c", None)])
        >>> sorted(rdd1.subtract(rdd2).collect())
        [('a', 1), ('b', 4), ('b', 5)]
''',
    "RDD.keyBy": r'''
        >>> rdd1 = sc.parallelize(range(0,3)).keyBy(lambda x: x*x)
        >>> rdd2 = sc.parallelize(zip(range(0,5), range(0,5)))
        >>> [(x, list(map(list, y))) for x, y in sorted(rdd1.cogroup(rdd2).collect())]
        [(0, [[0], [0]]), (1, [[1], [1]]), (2, [[], [2]]), (3, [[], [3]]), (4, [[2], [4]])]
''',
    "RDD.repartition": r'''
         >>> rdd = sc.parallelize([1,2,3,4,5,6,7], 4)
         >>> sorted(rdd.glom().collect())
         [[1], [2, 3], [4, 5], [6, 7]]
         >>> len(rdd.repartition(2).glom().collect())
         2
         >>> len(rdd.repartition(10).glom().collect())
         10
''',
    "RDD.coalesce": r'''
        >>> sc.parallelize([1, 2, 3, 4, 5], 3).glom().collect()
        [[1], [2, 3], [4, 5]]
        >>> sc.parallelize([1, 2, 3, 4, 5], 3).coalesce(1).glom().collect()
        [[1, 2, 3, 4, 5]]
''',
    "RDD.zip": r'''
        >>> rdd1 = sc.parallelize(range(0,5))
        >>> rdd2 = sc.parallelize(range(1000, 1005))
        >>> rdd1.zip(rdd2).collect()
        [(0, 1000), (1, 1001), (2, 1002), (3, 1003), (4, 1004)]
''',
    "RDD.zipWithIndex": r'''
        >>> sc.parallelize(["a", "b", "c", "d"], 3).zipWithIndex().collect()
        [('a', 0), ('b', 1), ('c', 2), ('d', 3)]
''',
    "RDD.zipWithUniqueId": r'''
        >>> sc.parallelize(["a", "b", "c", "d", "e"], 3).zipWithUniqueId().collect()
        [('a', 0), ('b', 1), ('c', 4), ('d', 2), ('e', 5)]
''',
    "RDD.name": r'''
        >>> rdd = sc.range(5)
        >>> rdd.name() == None
        True
''',
    "RDD.setName": r'''
        >>> rdd = sc.parallelize([1, 2])
        >>> rdd.setName('I am an RDD').name()
        'I am an RDD'
''',
    "RDD.getStorageLevel": r'''
        >>> rdd = sc.parallelize([1,2])
        >>> rdd.getStorageLevel()
        StorageLevel(False, False, False, False, 1)
        >>> print(rdd.getStorageLevel())
        Serialized 1x Replicated
''',
    "RDD.lookup": r'''
        >>> l = range(1000)
        >>> rdd = sc.parallelize(zip(l, l), 10)
        >>> rdd.lookup(42)  # slow
        [42]
        >>> sorted = rdd.sortByKey()
        >>> sorted.lookup(42)  # fast
        [42]
        >>> sorted.lookup(1024)
        []
        >>> rdd2 = sc.parallelize([(('a', 'b'), 'c')]).groupByKey()
        >>> list(rdd2.lookup(('a', 'b'))[0])
        ['c']
''',
    "RDD.countApprox": r'''
        >>> rdd = sc.parallelize(range(1000), 10)
        >>> rdd.countApprox(1000, 1.0)
        1000
''',
    "RDD.sumApprox": r'''
        >>> rdd = sc.parallelize(range(1000), 10)
        >>> r = sum(range(1000))
        >>> abs(rdd.sumApprox(1000) - r) / r < 0.05
        True
''',
    "RDD.meanApprox": r'''
        >>> rdd = sc.parallelize(range(1000), 10)
        >>> r = sum(range(1000)) / 1000.0
        >>> abs(rdd.meanApprox(1000) - r) / r < 0.05
        True
''',
    "RDD.countApproxDistinct": r'''
        >>> n = sc.parallelize(range(1000)).map(str).countApproxDistinct()
        >>> 900 < n < 1100
        True
        >>> n = sc.parallelize([i % 20 for i in range(1000)]).countApproxDistinct()
        >>> 16 < n < 24
        True
''',
    "RDD.toLocalIterator": r'''
        >>> rdd = sc.parallelize(range(10))
        >>> [x for x in rdd.toLocalIterator()]
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
''',
    "SparkContext.setLogLevel": r'''
        >>> sc.setLogLevel("WARN")  # doctest :+SKIP
''',
    "SparkContext.defaultParallelism": r'''
        >>> sc.defaultParallelism > 0
        True
''',
    "SparkContext.emptyRDD": r'''
        >>> sc.emptyRDD()
        EmptyRDD...
        >>> sc.emptyRDD().count()
        0
''',
    "SparkContext.range": r'''
        >>> sc.range(5).collect()
        [0, 1, 2, 3, 4]
        >>> sc.range(2, 4).collect()
        [2, 3]
        >>> sc.range(1, 7, 2).collect()
        [1, 3, 5]

        Generate RDD with a negative step

        >>> sc.range(5, 0, -1).collect()
        [5, 4, 3, 2, 1]
        >>> sc.range(0, 5, -1).collect()
        []

        Control the number of partitions

        >>> sc.range(5, numSlices=1).getNumPartitions()
        1
        >>> sc.range(5, numSlices=10).getNumPartitions()
        10
''',
    "SparkContext.parallelize": r'''
        >>> sc.parallelize([0, 2, 3, 4, 6], 5).glom().collect()
        [[0], [2], [3], [4], [6]]
        >>> sc.parallelize(range(0, 6, 2), 5).glom().collect()
        [[], [0], [], [2], [4]]

        Deal with a list of strings.

        >>> strings = ["a", "b", "c"]
        >>> sc.parallelize(strings, 2).glom().collect()
        [['a'], ['b', 'c']]
''',
    "SparkContext.pickleFile": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="pickleFile") as d:
        ...     # Write a temporary pickled file
        ...     path1 = os.path.join(d, "pickled1")
        ...     sc.parallelize(range(10)).saveAsPickleFile(path1, 3)
        ...
        ...     # Write another temporary pickled file
        ...     path2 = os.path.join(d, "pickled2")
        ...     sc.parallelize(range(-10, -5)).saveAsPickleFile(path2, 3)
        ...
        ...     # Load picked file
        ...     collected1 = sorted(sc.pickleFile(path1, 3).collect())
        ...     collected2 = sorted(sc.pickleFile(path2, 4).collect())
        ...
        ...     # Load two picked files together
        ...     collected3 = sorted(sc.pickleFile('{},{}'.format(path1, path2), 5).collect())

        >>> collected1
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        >>> collected2
        [-10, -9, -8, -7, -6]
        >>> collected3
        [-10, -9, -8, -7, -6, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
''',
    "SparkContext.textFile": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="textFile") as d:
        ...     path1 = os.path.join(d, "text1")
        ...     path2 = os.path.join(d, "text2")
        ...
        ...     # Write a temporary text file
        ...     sc.parallelize(["x", "y", "z"]).saveAsTextFile(path1)
        ...
        ...     # Write another temporary text file
        ...     sc.parallelize(["aa", "bb", "cc"]).saveAsTextFile(path2)
        ...
        ...     # Load text file
        ...     collected1 = sorted(sc.textFile(path1, 3).collect())
        ...     collected2 = sorted(sc.textFile(path2, 4).collect())
        ...
        ...     # Load two text files together
        ...     collected3 = sorted(sc.textFile('{},{}'.format(path1, path2), 5).collect())

        >>> collected1
        ['x', 'y', 'z']
        >>> collected2
        ['aa', 'bb', 'cc']
        >>> collected3
        ['aa', 'bb', 'cc', 'x', 'y', 'z']
''',
    "SparkContext.wholeTextFiles": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="wholeTextFiles") as d:
        ...     # Write a temporary text file
        ...     with open(os.path.join(d, "1.txt"), "w") as f:
        ...         _ = f.write("123")
        ...
        ...     # Write another temporary text file
        ...     with open(os.path.join(d, "2.txt"), "w") as f:
        ...         _ = f.write("xyz")
        ...
        ...     collected = sorted(sc.wholeTextFiles(d).collect())
        >>> collected
        [('.../1.txt', '123'), ('.../2.txt', 'xyz')]
''',
    "SparkContext.binaryFiles": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="binaryFiles") as d:
        ...     # Write a temporary binary file
        ...     with open(os.path.join(d, "1.bin"), "wb") as f1:
        ...         _ = f1.write(b"binary data I")
        ...
        ...     # Write another temporary binary file
        ...     with open(os.path.join(d, "2.bin"), "wb") as f2:
        ...         _ = f2.write(b"binary data II")
        ...
        ...     collected = sorted(sc.binaryFiles(d).collect())

        >>> collected
        [('.../1.bin', b'binary data I'), ('.../2.bin', b'binary data II')]
''',
    "SparkContext.union": r'''
        >>> import os
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory(prefix="union") as d:
        ...     # generate a text RDD
        ...     with open(os.path.join(d, "union-text.txt"), "w") as f:
        ...         _ = f.write("Hello")
        ...     text_rdd = sc.textFile(d)
        ...
        ...     # generate another RDD
        ...     parallelized = sc.parallelize(["World!"])
        ...
        ...     unioned = sorted(sc.union([text_rdd, parallelized]).collect())

        >>> unioned
        ['Hello', 'World!']
''',
    "SparkContext.runJob": r'''
        >>> myRDD = sc.parallelize(range(6), 3)
        >>> sc.runJob(myRDD, lambda part: [x * x for x in part])
        [0, 1, 4, 9, 16, 25]

        >>> myRDD = sc.parallelize(range(6), 3)
        >>> sc.runJob(myRDD, lambda part: [x * x for x in part], [0, 2], True)
        [0, 1, 16, 25]
''',
    "RDD.foreach": r'''
        >>> def f(x): print(x)
        ...
        >>> sc.parallelize([1, 2, 3, 4, 5]).foreach(f)
''',
    "RDD.foreachPartition": r'''
        >>> def f(iterator):
        ...     for x in iterator:
        ...          print(x)
        ...
        >>> sc.parallelize([1, 2, 3, 4, 5]).foreachPartition(f)
''',
    "RDD.toDebugString": r'''
        >>> rdd = sc.range(5)
        >>> rdd.toDebugString()
        b'...PythonRDD...ParallelCollectionRDD...'
''',
    "SparkContext.getSystemProperty": r'''
        >>> sc.getSystemProperty("SPARK_SUBMIT")
        'true'
        >>> _ = sc.getSystemProperty("java.home")
''',
    "SparkContext.applicationId": r'''
        >>> sc.applicationId  # doctest: +ELLIPSIS
        'local-...'
''',
    "SparkContext.uiWebUrl": r'''
        >>> sc.uiWebUrl
        'http://...'
''',
    "SparkContext.addFile": r'''
        >>> import os
        >>> import tempfile
        >>> from strataflow.pyspark import SparkFiles

        >>> with tempfile.TemporaryDirectory(prefix="addFile") as d:
        ...     path1 = os.path.join(d, "test1.txt")
        ...     with open(path1, "w") as f:
        ...         _ = f.write("100")
        ...
        ...     path2 = os.path.join(d, "test2.txt")
        ...     with open(path2, "w") as f:
        ...         _ = f.write("200")
        ...
        ...     sc.addFile(path1)
        ...     file_list1 = sorted(sc.listFiles)
        ...
        ...     sc.addFile(path2)
        ...     file_list2 = sorted(sc.listFiles)
        ...
        ...     # add path2 twice, this addition will be ignored
        ...     sc.addFile(path2)
        ...     file_list3 = sorted(sc.listFiles)
        ...
        ...     def func(iterator):
        ...         with open(SparkFiles.get("test1.txt")) as f:
        ...             mul = int(f.readline())
        ...             return [x * mul for x in iterator]
        ...
        ...     collected = sc.parallelize([1, 2, 3, 4]).mapPartitions(func).collect()

        >>> file_list1
        ['file:/.../test1.txt']
        >>> file_list2
        ['file:/.../test1.txt', 'file:/.../test2.txt']
        >>> file_list3
        ['file:/.../test1.txt', 'file:/.../test2.txt']
        >>> collected
        [100, 200, 300, 400]
''',
    "SparkContext.addArchive": r'''
        Creates a zipped file that contains a text file written '100'.

        >>> import os
        >>> import tempfile
        >>> import zipfile
        >>> from strataflow.pyspark import SparkFiles

        >>> with tempfile.TemporaryDirectory(prefix="addArchive") as d:
        ...     path = os.path.join(d, "test.txt")
        ...     with open(path, "w") as f:
        ...         _ = f.write("100")
        ...
        ...     zip_path1 = os.path.join(d, "test1.zip")
        ...     with zipfile.ZipFile(zip_path1, "w", zipfile.ZIP_DEFLATED) as z:
        ...         z.write(path, os.path.basename(path))
        ...
        ...     zip_path2 = os.path.join(d, "test2.zip")
        ...     with zipfile.ZipFile(zip_path2, "w", zipfile.ZIP_DEFLATED) as z:
        ...         z.write(path, os.path.basename(path))
        ...
        ...     sc.addArchive(zip_path1)
        ...     arch_list1 = sorted(sc.listArchives)
        ...
        ...     sc.addArchive(zip_path2)
        ...     arch_list2 = sorted(sc.listArchives)
        ...
        ...     # add zip_path2 twice, this addition will be ignored
        ...     sc.addArchive(zip_path2)
        ...     arch_list3 = sorted(sc.listArchives)
        ...
        ...     def func(iterator):
        ...         with open("%s/test.txt" % SparkFiles.get("test1.zip")) as f:
        ...             mul = int(f.readline())
        ...             return [x * mul for x in iterator]
        ...
        ...     collected = sc.parallelize([1, 2, 3, 4]).mapPartitions(func).collect()

        >>> arch_list1
        ['file:/.../test1.zip']
        >>> arch_list2
        ['file:/.../test1.zip', 'file:/.../test2.zip']
        >>> arch_list3
        ['file:/.../test1.zip', 'file:/.../test2.zip']
        >>> collected
        [100, 200, 300, 400]
''',
    "RDDBarrier.mapPartitions": r"""
        >>> rdd = sc.parallelize([1, 2, 3, 4], 2)
        >>> def f(iterator): yield sum(iterator)
        ...
        >>> barrier = rdd.barrier()
        >>> barrier
        <pyspark.core.rdd.RDDBarrier ...>
        >>> barrier.mapPartitions(f).collect()
        [3, 7]
""",
    "RDDBarrier.mapPartitionsWithIndex": r"""
        >>> rdd = sc.parallelize([1, 2, 3, 4], 4)
        >>> def f(splitIndex, iterator): yield splitIndex
        ...
        >>> barrier = rdd.barrier()
        >>> barrier
        <pyspark.core.rdd.RDDBarrier ...>
        >>> barrier.mapPartitionsWithIndex(f).sum()
        6
""",
    "portable_hash": r"""
        >>> portable_hash(None)
        0
        >>> portable_hash((None, 1)) & 0xffffffff
        219750521
""",
}

def _conf(backend: str) -> SparkConf:
    return SparkConf().set("strataflow.backend", backend).set("strataflow.progress", "false")


@pytest.fixture(scope="module")
def sc():
    """PySpark's doctest context: local[4], a checkpoint directory."""
    with tempfile.TemporaryDirectory() as d:
        sc = SparkContext("local[4]", "PythonTest", conf=_conf("threads"))
        sc.setCheckpointDir(d)
        yield sc
        sc.stop()


def run_example(name: str, sc: SparkContext) -> None:
    globs = {"sc": sc, "os": os, "tempfile": tempfile, "sys": sys, "portable_hash": portable_hash}
    test = doctest.DocTestParser().get_doctest(EXAMPLES[name], globs, name, __file__, 0)
    out: list[str] = []
    result = doctest.DocTestRunner(optionflags=FLAGS).run(test, out=out.append)
    assert result.failed == 0, "".join(out)


@pytest.mark.parametrize("name", sorted(set(EXAMPLES) - ON_PROCESSES_ONLY))
def test_documented_example(name, sc):
    run_example(name, sc)


# -- beyond the examples ------------------------------------------------------------------------
def test_rdd_and_result_iterable_are_generic_type_hints(sc):
    def f(rdd: RDD[int]) -> RDD[tuple[str, ResultIterable[int]]]:
        return rdd.groupBy(lambda x: "even" if x % 2 == 0 else "odd")

    hints = get_type_hints(f)
    assert hints["rdd"] == RDD[int]
    groups = dict(f(sc.parallelize(range(7))).collect())
    assert isinstance(groups["odd"], ResultIterable)
    assert len(groups["even"]) == 4 and sorted(groups["even"]) == [0, 2, 4, 6]
    assert list(groups["odd"]) == list(groups["odd"])  # iterable more than once


def test_group_values_are_result_iterables_with_len(sc):
    rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)], 2)
    got = dict(rdd.groupByKey().collect())
    assert all(isinstance(v, ResultIterable) for v in got.values())
    assert {k: len(v) for k, v in got.items()} == {"a": 2, "b": 1}
    cg = dict(rdd.cogroup(sc.parallelize([("a", 9)])).collect())
    assert [len(g) for g in cg["a"]] == [2, 1] and [list(g) for g in cg["b"]] == [[1], []]


@pytest.mark.parametrize("level, native", [
    (StorageLevel.MEMORY_ONLY, NativeLevel.MEMORY_ONLY),
    (StorageLevel.MEMORY_ONLY_2, NativeLevel.MEMORY_ONLY),
    (StorageLevel.MEMORY_AND_DISK, NativeLevel.MEMORY_AND_DISK),
    (StorageLevel.MEMORY_AND_DISK_DESER, NativeLevel.MEMORY_AND_DISK),
    (StorageLevel.DISK_ONLY, NativeLevel.DISK_ONLY),
    (StorageLevel.DISK_ONLY_3, NativeLevel.DISK_ONLY),
    (StorageLevel.OFF_HEAP, NativeLevel.OFF_HEAP),
    (StorageLevel.DISK_MMAP, NativeLevel.DISK_MMAP),  # strataflow's own levels, by name
    (StorageLevel.AUTO, NativeLevel.AUTO),
])
def test_storage_levels_map_onto_native_levels(sc, level, native):
    rdd = sc.parallelize(range(100), 2).map(lambda x: x * 2)
    rdd.persist(level)
    try:
        assert rdd.dataset.storage_level is native
        assert rdd.getStorageLevel() == level
        assert rdd.sum() == rdd.sum() == 9900
    finally:
        rdd.unpersist()
    assert rdd.getStorageLevel() == StorageLevel.NONE


def test_storage_level_of_a_natively_persisted_dataset(sc):
    rdd = sc.parallelize([1, 2])
    rdd.dataset.persist(NativeLevel.MEMORY_AND_DISK_SER)
    try:
        assert rdd.getStorageLevel() is StorageLevel.MEMORY_AND_DISK_SER
        assert rdd.is_cached
    finally:
        rdd.unpersist()


def test_plus_is_union(sc):
    a, b = sc.parallelize([1, 2], 2), sc.parallelize([3], 1)
    assert (a + b).collect() == [1, 2, 3] and (a + b).getNumPartitions() == 3
    with pytest.raises(TypeError):
        a + [3]


@pytest.mark.parametrize("call", [
    lambda sc, d: sc.sequenceFile(d),
    lambda sc, d: sc.hadoopFile(d, "org.apache.hadoop.mapred.TextInputFormat", "k", "v"),
    lambda sc, d: sc.newAPIHadoopFile(d, "f", "k", "v"),
    lambda sc, d: sc.hadoopRDD("f", "k", "v"),
    lambda sc, d: sc.newAPIHadoopRDD("f", "k", "v"),
    lambda sc, d: sc.parallelize([(1, 2)]).saveAsSequenceFile(d),
    lambda sc, d: sc.parallelize([(1, 2)]).saveAsHadoopFile(d, "f"),
    lambda sc, d: sc.parallelize([(1, 2)]).saveAsNewAPIHadoopFile(d, "f"),
    lambda sc, d: sc.parallelize([(1, 2)]).saveAsHadoopDataset({}),
    lambda sc, d: sc.parallelize([(1, 2)]).saveAsNewAPIHadoopDataset({}),
    lambda sc, d: sc.parallelize(["a"]).saveAsTextFile(d, "org.apache.hadoop.io.compress.SnappyCodec"),
])
def test_hadoop_formats_are_not_supported(sc, tmp_path, call):
    with pytest.raises(NotImplementedError, match="not supported in strataflow") as info:
        call(sc, str(tmp_path / "out"))
    assert isinstance(info.value, UnsupportedOperation)
    assert not (tmp_path / "out").exists()


def test_to_debug_string_is_bytes_of_the_lineage_in_sparks_layout(sc):
    rdd = sc.parallelize(range(4), 2).map(lambda x: (x, x)).reduceByKey(max).persist(StorageLevel.MEMORY_AND_DISK)
    rdd.count()
    lines = rdd.toDebugString().decode().splitlines()
    assert lines[0].startswith("(2) ShuffledRDD[") and lines[0].endswith("[Disk Memory Serialized 1x Replicated]")
    assert lines[1].startswith(" |       CachedPartitions: 2; MemorySize: ")
    assert lines[2].startswith(" +-(2) PythonRDD[") and " at map at " in lines[2]
    assert lines[3].startswith("     |  ParallelCollectionRDD[") and lines[3].endswith("[]")
    assert repr(rdd).startswith("ShuffledRDD[") and repr(sc.emptyRDD()).startswith("EmptyRDD[")
    rdd.unpersist()


def test_checkpoint_cuts_the_lineage_and_reads_the_files(sc):
    calls = []
    rdd = sc.parallelize(range(10), 2).map(lambda x: calls.append(x) or x * 3)
    rdd.checkpoint()
    assert rdd.is_checkpointed and not rdd.isCheckpointed()
    assert rdd.sum() == 135
    assert rdd.isCheckpointed()
    path = rdd.getCheckpointFile()
    assert sorted(os.listdir(path)) == ["part-00000", "part-00001"]
    assert b"ReliableCheckpointRDD" in rdd.toDebugString() and b"parallelize" not in rdd.toDebugString()
    calls.clear()
    assert rdd.collect() == [x * 3 for x in range(10)]
    assert calls == []  # read from the files, not recomputed


def test_local_checkpoint_writes_under_the_application(sc):
    rdd = sc.parallelize(range(6), 3).map(lambda x: -x)
    rdd.localCheckpoint()
    assert rdd.isLocallyCheckpointed() and rdd.getCheckpointFile() is None
    assert rdd.collect() == [0, -1, -2, -3, -4, -5]
    assert rdd.isCheckpointed()
    assert b"ReliableCheckpointRDD" in rdd.toDebugString()
    assert sc.ctx.local_dirs[0] in rdd.dataset.node.directory


def test_stats_and_approximations_have_pyspark_types(sc):
    st = sc.parallelize([1.0, 2.0, 3.0, 4.0]).stats()
    assert isinstance(st, StatCounter)
    assert st.asDict() == {"count": 4, "mean": 2.5, "sum": 10.0, "min": 1.0, "max": 4.0,
                           "stdev": pytest.approx(1.2909944487358056), "variance": pytest.approx(1.6666666666666667)}
    assert st.sampleStdev() == pytest.approx(1.2909944487358056) and st.maxValue == 4.0
    s = sc.parallelize(range(1000), 4).sumApprox(1000)
    assert isinstance(s, BoundedFloat) and s == 499500.0 and s.low <= s <= s.high and s.confidence == 0.95


def test_count_by_key_and_value_are_defaultdicts(sc):
    rdd = sc.parallelize([("a", 1), ("b", 1), ("a", 1)])
    by_key = rdd.countByKey()
    assert isinstance(by_key, defaultdict) and by_key["a"] == 2 and by_key["zzz"] == 0
    assert isinstance(rdd.keys().countByValue(), defaultdict)


def test_barrier_map_partitions_runs_every_partition(sc):
    rdd = sc.parallelize(range(8), 4)
    assert rdd.barrier().mapPartitions(lambda it: [sum(it)]).collect() == [1, 5, 9, 13]
    assert rdd.barrier().mapPartitionsWithIndex(lambda i, it: [i]).collect() == [0, 1, 2, 3]


def test_partition_functions_receive_iterators(sc):
    """PySpark hands mapPartitions an iterator: ``next()`` must work on it."""
    rdd = sc.parallelize(range(6), 2)
    assert rdd.mapPartitions(lambda it: [next(it)]).collect() == [0, 3]
    assert rdd.mapPartitionsWithIndex(lambda i, it: [(i, next(it))]).collect() == [(0, 0), (1, 3)]
    assert sc.runJob(rdd, lambda it: [next(it)]) == [0, 3]


def test_rdd_in_a_closure_fails_clearly(sc):
    rdd = sc.parallelize([1, 2])
    import pickle

    with pytest.raises(RuntimeError, match="SPARK-5063"):
        pickle.dumps(rdd)


def test_portable_hash_is_the_engines(sc):
    """One object: partitionBy(n, portable_hash) is the engine's default hash partitioning."""
    from strataflow.shuffle.partitioner import portable_hash as native_hash

    assert portable_hash is native_hash
    assert portable_hash(None) == 0 and portable_hash((None, 1)) & 0xFFFFFFFF == 219750521


# -- issue 39: what PySpark's doctests met -------------------------------------------------------
class _ForeignLevel:
    """A StorageLevel of another package (the real PySpark's), by its five flags."""

    def __init__(self, useDisk, useMemory, useOffHeap, deserialized, replication=1):
        self.useDisk, self.useMemory, self.useOffHeap = useDisk, useMemory, useOffHeap
        self.deserialized, self.replication = deserialized, replication


def test_persist_keeps_the_replication_of_a_foreign_storage_level(sc):
    rdd = sc.range(5)
    rdd.persist(_ForeignLevel(False, True, False, False, 2))  # `from pyspark import StorageLevel` left in
    try:
        assert str(rdd.getStorageLevel()) == "Memory Serialized 2x Replicated"
        assert rdd.getStorageLevel() == StorageLevel.MEMORY_ONLY_2 and rdd.count() == 5
    finally:
        rdd.unpersist()
    rdd.persist(_ForeignLevel(True, True, False, False))
    try:
        assert rdd.getStorageLevel() == StorageLevel.MEMORY_AND_DISK
        assert rdd.dataset.storage_level is NativeLevel.MEMORY_AND_DISK
    finally:
        rdd.unpersist()

