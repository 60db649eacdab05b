"""The maths family's functions that value tables cannot check against recorded goldens:
random numbers (their range and type; a seed is refused, since Spark's sequence per
partition is not reproduced), and errors raised as the plan is made."""

from __future__ import annotations

import pytest

from strataflow.pyspark import SparkContext
from strataflow.pyspark.errors import AnalysisException, SparkRuntimeException
from strataflow.pyspark.sql import SparkSession, functions as F


@pytest.fixture(scope="module")
def spark():
    sc = SparkContext("local[2]", "maths")
    try:
        yield SparkSession(sc)
    finally:
        sc.stop()


def test_rand_is_a_uniform_double_in_0_1(spark):
    rows = spark.range(2000).select(F.rand().alias("r"), F.random().alias("q")).collect()
    values = [r.r for r in rows] + [r.q for r in rows]
    assert all(isinstance(v, float) and 0.0 <= v < 1.0 for v in values)
    assert 0.4 < sum(values) / len(values) < 0.6 and len(set(values)) > 3900


def test_randn_is_a_standard_normal_double(spark):
    values = [r.n for r in spark.range(4000).select(F.randn().alias("n")).collect()]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    assert abs(mean) < 0.1 and 0.85 < var < 1.15


def test_uniform_keeps_to_its_bounds_and_type(spark):
    df = spark.range(500).select(F.uniform(5, 10).alias("i"), F.uniform(0.5, 1.5).alias("d"))
    assert dict(df.dtypes) == {"i": "int", "d": "double"}
    rows = df.collect()
    assert all(5 <= r.i < 10 for r in rows) and all(0.5 <= r.d < 1.5 for r in rows)


@pytest.mark.parametrize("make", [lambda: F.rand(42), lambda: F.randn(7), lambda: F.uniform(0, 10, 3),
                                  lambda: F.expr("rand(1)")])
def test_a_seed_is_refused_by_name(spark, make):
    with pytest.raises(AnalysisException, match="XORShiftRandom"):
        spark.range(3).select(make()).collect()


def test_bit_get_of_a_position_outside_the_type_fails_as_spark(spark):
    df = spark.createDataFrame([(5,)], "a int")
    with pytest.raises(SparkRuntimeException, match=r"BIT_POSITION_RANGE.*\[0, 32\), but got 32"):
        df.select(F.bit_get("a", F.lit(32))).collect()
    assert df.select(F.bit_get("a", F.lit(2)).alias("b")).first().b == 1


def test_hash_of_nested_values_is_refused(spark):
    df = spark.createDataFrame([([1, 2],)], "a array<int>")
    with pytest.raises(AnalysisException, match="STRATAFLOW_UNSUPPORTED"):
        df.select(F.hash("a")).collect()


def test_hash_and_xxhash64_over_partitions_agree_with_one(spark):
    """Each row's hash is its own: the same over 1 partition or 4."""
    df = spark.range(200).selectExpr("id", "cast(id as string) as s", "id * 0.5 as d")
    one = df.coalesce(1).select(F.hash("id", "s", "d").alias("h"), F.xxhash64("s").alias("x")).collect()
    four = df.repartition(4).orderBy("id").select(F.hash("id", "s", "d").alias("h"),
                                                  F.xxhash64("s").alias("x")).collect()
    assert one == four


def test_the_batch_hashes_are_the_row_hashes():
    """The numpy kernels of ``hash``/``xxhash64`` (fixed-width kinds) give the row-by-row
    kernels' answers (those the goldens check) on random values, extremes, NaN and -0.0."""
    import random as rnd

    import numpy as np

    from strataflow.pyspark.sql.semantics.kernels import hash_batch, murmur3_row, xxhash64_row

    r = rnd.Random(7)
    n = 300
    ints = [r.choice([0, -1, 2 ** 31 - 1, -2 ** 31, r.randint(-2 ** 31, 2 ** 31 - 1)]) for _ in range(n)]
    longs = [r.choice([0, -1, 2 ** 63 - 1, -2 ** 63, r.randint(-2 ** 63, 2 ** 63 - 1)]) for _ in range(n)]
    doubles = [r.choice([0.0, -0.0, float("nan"), float("inf"), r.uniform(-1e300, 1e300), r.random()]) for _ in range(n)]
    floats = [float(np.float32(x)) if abs(x) < 3e38 or x != x else 1.5 for x in doubles]
    bools = [r.random() < 0.5 for _ in range(n)]
    nulls = [r.random() < 0.2 for _ in range(n)]
    kinds = (("int", 0), ("long", 0), ("double", 0), ("float", 0), ("bool", 0), ("bytes", 0))
    texts = [r.choice(["", "a", "ß", "abcde", "😀 x", "".join(chr(r.randint(32, 0x2FFF)) for _ in range(r.randint(0, 41))),
                       bytes(r.randint(0, 255) for _ in range(r.randint(0, 13)))]) for _ in range(n)]
    columns = [np.array(ints, dtype=np.int32), np.array(nulls), np.array(longs, dtype=np.int64), np.zeros(n, bool),
               np.array(doubles), np.array(nulls), np.array(floats, dtype=np.float32), np.zeros(n, bool),
               np.array(bools), np.zeros(n, bool), texts, np.array(nulls)]
    for xx, row in ((False, murmur3_row), (True, xxhash64_row)):
        got = hash_batch(xx, kinds, *columns)
        want = [row(kinds, *(None if nulls[i] else ints[i], longs[i], None if nulls[i] else doubles[i], floats[i],
                             bools[i], None if nulls[i] else texts[i])) for i in range(n)]
        assert [int(v) for v in got] == want
