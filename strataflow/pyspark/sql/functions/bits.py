"""``pyspark.sql.functions``' bitwise, hash and random-number functions, part of the
``maths`` family (which exports them): each with PySpark's signature and an example.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.column_names import spark_name
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__ = ["bin", "conv", "unhex", "bit_count", "bit_get", "getbit", "bitwise_not", "bitwiseNOT", "shiftleft",
           "shiftLeft", "shiftright", "shiftRight", "shiftrightunsigned", "shiftRightUnsigned", "crc32", "sha", "hash",
           "xxhash64", "rand", "randn", "random", "uniform"]


def bin(col: "Column | str") -> Column:  # noqa: A001 - PySpark's name
    """The binary digits of ``col`` as a bigint (two's complement for a negative number).

    >>> spark.createDataFrame([(5,)], ["a"]).select(bin("a")).first()
    Row(bin(a)='101')
    """
    return call("bin", arg(col, "c"))


def conv(col: "Column | str", fromBase: int, toBase: int) -> Column:
    """The number in string ``col`` written in base ``fromBase``, written in base ``toBase`` (a negative ``toBase``:
    signed), as Spark's ``NumberConverter``.

    >>> spark.createDataFrame([("100",)], ["n"]).select(conv("n", 2, 16)).first()
    Row(conv(n, 2, 16)='4')
    """
    return call("conv", arg(col, "c"), arg(fromBase, "l"), arg(toBase, "l"))


def unhex(col: "Column | str") -> Column:
    """The bytes of hexadecimal string ``col`` (a binary; null where it is not hexadecimal).

    >>> bytes(spark.createDataFrame([("414243",)], ["h"]).select(unhex("h")).first()[0])
    b'ABC'
    """
    return call("unhex", arg(col, "c"))


def bit_count(col: "Column | str") -> Column:
    """The number of bits set in ``col`` (as a bigint: a negative int counts 64 bits' worth).

    >>> spark.createDataFrame([(7,)], ["a"]).select(bit_count("a")).first()
    Row(bit_count(a)=3)
    """
    return call("bit_count", arg(col, "c"))


def bit_get(col: "Column | str", pos: "Column | str") -> Column:
    """The bit at position ``pos`` (0 the rightmost) of ``col``, a tinyint.

    >>> spark.createDataFrame([(5,)], ["a"]).select(bit_get("a", F.lit(2))).first()
    Row(bit_get(a, 2)=1)
    """
    return call("bit_get", arg(col, "c"), arg(pos, "c"))


def getbit(col: "Column | str", pos: "Column | str") -> Column:
    """The bit at position ``pos`` (0 the rightmost) of ``col``, a tinyint.

    >>> spark.createDataFrame([(5,)], ["a"]).select(getbit("a", F.lit(1))).first()
    Row(getbit(a, 1)=0)
    """
    return call("getbit", arg(col, "c"), arg(pos, "c"))


def bitwise_not(col: "Column | str") -> Column:
    """The bitwise complement of ``col`` (``~col``).

    >>> spark.createDataFrame([(0,)], ["a"]).select(bitwise_not("a")).first()
    Row(~a=-1)
    """
    c = arg(col, "c")
    node = sx.BitwiseNot(this=c)
    node.meta["shown"] = f"~{spark_name(c)}"
    return Column(node)


bitwiseNOT = bitwise_not


def _shift(name: str, col: "Column | str", numBits: int) -> Column:
    return call(name, arg(col, "c"), arg(numBits, "l"))


def shiftleft(col: "Column | str", numBits: int) -> Column:
    """``col << numBits`` (an int or bigint; the shift taken modulo its width, as Java's).

    >>> spark.createDataFrame([(21,)], ["a"]).select(shiftleft("a", 1)).first()
    Row(shiftleft(a, 1)=42)
    """
    return _shift("shiftleft", col, numBits)


def shiftright(col: "Column | str", numBits: int) -> Column:
    """``col >> numBits``, the sign kept (an int or bigint).

    >>> spark.createDataFrame([(-42,)], ["a"]).select(shiftright("a", 1)).first()
    Row(shiftright(a, 1)=-21)
    """
    return _shift("shiftright", col, numBits)


def shiftrightunsigned(col: "Column | str", numBits: int) -> Column:
    """``col >>> numBits``, zeros shifted in (an int or bigint).

    >>> spark.createDataFrame([(-1,)], "a int").select(shiftrightunsigned("a", 28)).first()
    Row(shiftrightunsigned(a, 28)=15)
    """
    return _shift("shiftrightunsigned", col, numBits)


shiftLeft = shiftleft
shiftRight = shiftright
shiftRightUnsigned = shiftrightunsigned


def crc32(col: "Column | str") -> Column:
    """The CRC-32 of binary ``col`` (a string's UTF-8 bytes), a bigint.

    >>> spark.createDataFrame([("ABC",)], ["s"]).select(crc32("s")).first()
    Row(crc32(s)=2743272264)
    """
    return call("crc32", arg(col, "c"))


def sha(col: "Column | str") -> Column:
    """The SHA-1 of ``col`` as 40 hexadecimal digits (``sha1``).

    >>> spark.createDataFrame([("ABC",)], ["s"]).select(sha("s")).first()
    Row(sha(s)='3c01bdbb26f358bab27f267924aa2c9a03fcfdb8')
    """
    c = arg(col, "c")
    node = sx.SHA(this=c)
    node.meta["fn"] = "sha"
    node.meta["call"] = ("sha", [c])
    return Column(node)


def hash(*cols: "Column | str") -> Column:  # noqa: A001 - PySpark's name
    """Spark's Murmur3 (x86, 32 bits, seed 42) of the columns' values, an int: each non-null value hashed with the
    hash so far as its seed.

    >>> spark.createDataFrame([("ABC",)], ["s"]).select(hash("s")).first()
    Row(hash(s)=-757602832)
    """
    return call("hash", *[arg(c, "c") for c in cols])


def xxhash64(*cols: "Column | str") -> Column:
    """Spark's xxHash64 (seed 42) of the columns' values, a bigint: each non-null value hashed with the hash so far
    as its seed.

    >>> spark.createDataFrame([("ABC",)], ["s"]).select(xxhash64("s")).first()
    Row(xxhash64(s)=4105715581806190027)
    """
    return call("xxhash64", *[arg(c, "c") for c in cols])


def _random(name: str, seed: Any, *more: Any) -> Column:
    parts = [*more] + ([arg(seed, "l")] if seed is not None else [])
    node = call(name, *parts)
    return node


def rand(seed: "int | None" = None) -> Column:
    """A uniform double in [0, 1), independent per row. Spark's sequence for a given seed (its XORShiftRandom per
    partition) is not reproduced: a seed is refused.

    >>> 0.0 <= spark.range(1).select(rand().alias("r")).first().r < 1.0
    True
    """
    return _random("rand", seed)


random = rand


def randn(seed: "int | None" = None) -> Column:
    """A standard normal double, independent per row (a seed is refused, as ``rand``'s).

    >>> isinstance(spark.range(1).select(randn().alias("r")).first().r, float)
    True
    """
    return _random("randn", seed)


def uniform(min: "Column | int | float", max: "Column | int | float",  # noqa: A002 - PySpark's names
            seed: "Column | int | None" = None) -> Column:
    """A uniform number in [``min``, ``max``) per row (a seed is refused, as ``rand``'s).

    >>> 5 <= spark.range(1).select(uniform(5, 10).alias("u")).first().u < 10
    True
    """
    return _random("uniform", seed, arg(min, "l"), arg(max, "l"))
