"""``pyspark.sql.functions``: math, bitwise, hash and conditional functions (PySpark's Math, Bitwise, Hash, Conditional and Predicate Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.column_names import spark_name
from strataflow.pyspark.sql.functions import bits
from strataflow.pyspark.sql.functions.bits import *  # noqa: F401,F403 - the family's bitwise and hash functions
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__ = ["log", "sign", "negate", "negative", "positive", "e", "pi", "acos", "asin", "atan", "atan2", "acosh",
           "asinh", "atanh", "cosh", "sinh", "tanh", "cot", "csc", "sec", "expm1", "log1p", "hypot", "rint",
           "factorial", "toDegrees", "toRadians", "pmod", "try_add", "try_subtract", "try_multiply", "try_divide",
           "try_mod", "nullifzero", "zeroifnull", "equal_null", "nvl2", "isnotnull", "width_bucket", *bits.__all__]
#: the examples of the functions ``bits`` defines, run with this module's (``tests/test_doctests.py``)
__test__ = {name: getattr(bits, name) for name in bits.__all__}


def _shown(node: Column, text: str) -> Column:
    """``node`` named ``text`` (Spark's name of an operator-like call: ``(+ x)``, ``~x``)."""
    node._expr.meta["shown"] = text
    return node


def log(arg1: "Column | str | float", arg2: "Column | str | None" = None) -> Column:
    """The natural logarithm of ``arg1``; with ``arg2``, the logarithm of ``arg2`` in base ``arg1`` (``ln(arg2) /
    ln(arg1)``); null where an argument is not positive.

    >>> df = spark.createDataFrame([(8.0,)], ["x"])
    >>> df.select(log(2.0, "x"), log("x")).first()
    Row(LOG(2.0, x)=3.0, ln(x)=2.0794415416798357)
    """
    if arg2 is None:
        return call("ln", arg(arg1, "c"))
    return call("log", arg(arg1, "l"), arg(arg2, "c"))


def sign(col: "Column | str") -> Column:
    """The sign of ``col`` as a double: -1.0, 0.0 or 1.0 (NaN and -0.0 kept).

    >>> spark.createDataFrame([(-5,)], ["x"]).select(sign("x")).first()
    Row(sign(x)=-1.0)
    """
    return call("sign", arg(col, "c"))


def negative(col: "Column | str") -> Column:
    """``-col`` (an integer's negation wraps around, or fails under ANSI, at its type's minimum).

    >>> spark.createDataFrame([(3, 1.5)], ["a", "b"]).select(negative("a"), negative("b")).first()
    Row(negative(a)=-3, negative(b)=-1.5)
    """
    return call("negative", arg(col, "c"))


negate = negative


def positive(col: "Column | str") -> Column:
    """``col`` itself, named ``(+ col)``.

    >>> spark.createDataFrame([(3,)], ["a"]).select(positive("a")).first()
    Row((+ a)=3)
    """
    c = arg(col, "c")
    return _shown(call("positive", c), f"(+ {spark_name(c)})")


def e() -> Column:
    """Euler's number e, a double.

    >>> spark.range(1).select(e()).first()
    Row(E()=2.718281828459045)
    """
    return call("e")


def pi() -> Column:
    """Pi, a double.

    >>> spark.range(1).select(pi()).first()
    Row(PI()=3.141592653589793)
    """
    return call("pi")


def acos(col: "Column | str") -> Column:
    """The arc cosine of ``col`` in radians (NaN outside [-1, 1]).

    >>> spark.createDataFrame([(1.0,)], ["x"]).select(acos("x")).first()
    Row(ACOS(x)=0.0)
    """
    return call("acos", arg(col, "c"))


def asin(col: "Column | str") -> Column:
    """The arc sine of ``col`` in radians (NaN outside [-1, 1]).

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(asin("x")).first()
    Row(ASIN(x)=0.0)
    """
    return call("asin", arg(col, "c"))


def atan(col: "Column | str") -> Column:
    """The arc tangent of ``col`` in radians.

    >>> spark.createDataFrame([(1.0,)], ["x"]).select(atan("x")).first()
    Row(ATAN(x)=0.7853981633974483)
    """
    return call("atan", arg(col, "c"))


def atan2(col1: "Column | str | float", col2: "Column | str | float") -> Column:
    """The angle in radians of the point (``col2``, ``col1``): Java's ``Math.atan2(y, x)``.

    >>> spark.createDataFrame([(1.0, 1.0)], ["y", "x"]).select(atan2("y", "x")).first()
    Row(ATAN2(y, x)=0.7853981633974483)
    """
    return call("atan2", arg(col1, "c"), arg(col2, "c"))


def acosh(col: "Column | str") -> Column:
    """The inverse hyperbolic cosine of ``col``, as Spark computes it: ``ln(x + sqrt(x * x - 1))``.

    >>> spark.createDataFrame([(1.0,)], ["x"]).select(acosh("x")).first()
    Row(ACOSH(x)=0.0)
    """
    return call("acosh", arg(col, "c"))


def asinh(col: "Column | str") -> Column:
    """The inverse hyperbolic sine of ``col``, as Spark computes it: ``ln(x + sqrt(x * x + 1))``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(asinh("x")).first()
    Row(ASINH(x)=0.0)
    """
    return call("asinh", arg(col, "c"))


def atanh(col: "Column | str") -> Column:
    """The inverse hyperbolic tangent of ``col``: ``(log1p(x) - log1p(-x)) / 2``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(atanh("x")).first()
    Row(ATANH(x)=0.0)
    """
    return call("atanh", arg(col, "c"))


def cosh(col: "Column | str") -> Column:
    """The hyperbolic cosine of ``col``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(cosh("x")).first()
    Row(COSH(x)=1.0)
    """
    return call("cosh", arg(col, "c"))


def sinh(col: "Column | str") -> Column:
    """The hyperbolic sine of ``col``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(sinh("x")).first()
    Row(SINH(x)=0.0)
    """
    return call("sinh", arg(col, "c"))


def tanh(col: "Column | str") -> Column:
    """The hyperbolic tangent of ``col``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(tanh("x")).first()
    Row(TANH(x)=0.0)
    """
    return call("tanh", arg(col, "c"))


def cot(col: "Column | str") -> Column:
    """The cotangent of ``col``: ``1 / tan(x)`` (±inf at ±0.0).

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(cot("x")).first()
    Row(COT(x)=inf)
    """
    return call("cot", arg(col, "c"))


def csc(col: "Column | str") -> Column:
    """The cosecant of ``col``: ``1 / sin(x)``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(csc("x")).first()
    Row(CSC(x)=inf)
    """
    return call("csc", arg(col, "c"))


def sec(col: "Column | str") -> Column:
    """The secant of ``col``: ``1 / cos(x)``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(sec("x")).first()
    Row(SEC(x)=1.0)
    """
    return call("sec", arg(col, "c"))


def expm1(col: "Column | str") -> Column:
    """``exp(col) - 1``, exact for small ``col``.

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(expm1("x")).first()
    Row(EXPM1(x)=0.0)
    """
    return call("expm1", arg(col, "c"))


def log1p(col: "Column | str") -> Column:
    """``ln(1 + col)``, exact for small ``col``; null where ``col <= -1``.

    >>> spark.createDataFrame([(0.0,), (-1.0,)], ["x"]).select(log1p("x")).collect()
    [Row(LOG1P(x)=0.0), Row(LOG1P(x)=None)]
    """
    return call("log1p", arg(col, "c"))


def hypot(col1: "Column | str | float", col2: "Column | str | float") -> Column:
    """``sqrt(col1² + col2²)`` without overflow in between (Java's ``Math.hypot``).

    >>> spark.createDataFrame([(3.0, 4.0)], ["a", "b"]).select(hypot("a", "b")).first()
    Row(HYPOT(a, b)=5.0)
    """
    return call("hypot", arg(col1, "c"), arg(col2, "c"))


def rint(col: "Column | str") -> Column:
    """The double nearest ``col`` that is a whole number, ties to even (Java's ``Math.rint``).

    >>> spark.createDataFrame([(2.5,)], ["x"]).select(rint("x")).first()
    Row(rint(x)=2.0)
    """
    return call("rint", arg(col, "c"))


def factorial(col: "Column | str") -> Column:
    """``col!`` as a bigint; null outside [0, 20].

    >>> spark.createDataFrame([(5,)], ["n"]).select(factorial("n")).first()
    Row(factorial(n)=120)
    """
    return call("factorial", arg(col, "c"))


def toDegrees(col: "Column | str") -> Column:
    """``col`` radians in degrees (PySpark's older name of ``degrees``).

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(toDegrees("x")).first()
    Row(DEGREES(x)=0.0)
    """
    return call("degrees", arg(col, "c"))


def toRadians(col: "Column | str") -> Column:
    """``col`` degrees in radians (PySpark's older name of ``radians``).

    >>> spark.createDataFrame([(0.0,)], ["x"]).select(toRadians("x")).first()
    Row(RADIANS(x)=0.0)
    """
    return call("radians", arg(col, "c"))


def pmod(dividend: "Column | str | float", divisor: "Column | str | float") -> Column:
    """The positive remainder of ``dividend / divisor`` (the divisor's sign for a negative divisor), of the
    remainder's type; null (or ANSI's REMAINDER_BY_ZERO) for a zero divisor.

    >>> spark.createDataFrame([(-7, 3)], ["a", "b"]).select(pmod("a", "b")).first()
    Row(pmod(a, b)=2)
    """
    return call("pmod", arg(dividend, "c"), arg(divisor, "c"))


def try_add(left: "Column | str", right: "Column | str") -> Column:
    """``left + right``, null where it overflows its type (in both ANSI modes).

    >>> spark.createDataFrame([(2147483647, 1)], "a int, b int").select(try_add("a", "b")).first()
    Row(try_add(a, b)=None)
    """
    return call("try_add", arg(left, "c"), arg(right, "c"))


def try_subtract(left: "Column | str", right: "Column | str") -> Column:
    """``left - right``, null where it overflows its type.

    >>> spark.createDataFrame([(5, 7)], ["a", "b"]).select(try_subtract("a", "b")).first()
    Row(try_subtract(a, b)=-2)
    """
    return call("try_subtract", arg(left, "c"), arg(right, "c"))


def try_multiply(left: "Column | str", right: "Column | str") -> Column:
    """``left * right``, null where it overflows its type.

    >>> spark.createDataFrame([(6, 7)], ["a", "b"]).select(try_multiply("a", "b")).first()
    Row(try_multiply(a, b)=42)
    """
    return call("try_multiply", arg(left, "c"), arg(right, "c"))


def try_divide(left: "Column | str", right: "Column | str") -> Column:
    """``left / right``, null for a zero divisor or an overflow.

    >>> spark.createDataFrame([(6, 0)], ["a", "b"]).select(try_divide("a", "b")).first()
    Row(try_divide(a, b)=None)
    """
    return call("try_divide", arg(left, "c"), arg(right, "c"))


def try_mod(left: "Column | str", right: "Column | str") -> Column:
    """``left % right``, null for a zero divisor.

    >>> spark.createDataFrame([(7, 0), (7, 3)], ["a", "b"]).select(try_mod("a", "b")).collect()
    [Row(try_mod(a, b)=None), Row(try_mod(a, b)=1)]
    """
    return call("try_mod", arg(left, "c"), arg(right, "c"))


def nullifzero(col: "Column | str") -> Column:
    """Null where ``col`` is 0, else ``col``.

    >>> spark.createDataFrame([(0,), (2,)], ["a"]).select(nullifzero("a")).collect()
    [Row(nullifzero(a)=None), Row(nullifzero(a)=2)]
    """
    return call("nullifzero", arg(col, "c"))


def zeroifnull(col: "Column | str") -> Column:
    """0 where ``col`` is null, else ``col``.

    >>> spark.createDataFrame([(None,), (2,)], "a int").select(zeroifnull("a")).collect()
    [Row(zeroifnull(a)=0), Row(zeroifnull(a)=2)]
    """
    return call("zeroifnull", arg(col, "c"))


def equal_null(col1: "Column | str", col2: "Column | str") -> Column:
    """``col1 = col2`` where null equals null (``<=>``): never null itself.

    >>> spark.createDataFrame([(None, None), (1, 2)], "a int, b int").select(equal_null("a", "b")).collect()
    [Row(equal_null(a, b)=True), Row(equal_null(a, b)=False)]
    """
    return call("equal_null", arg(col1, "c"), arg(col2, "c"))


def nvl2(col1: "Column | str", col2: "Column | str", col3: "Column | str") -> Column:
    """``col2`` where ``col1`` is not null, else ``col3``.

    >>> spark.createDataFrame([(None, 8, 6)], "a int, b int, c int").select(nvl2("a", "b", "c")).first()
    Row(nvl2(a, b, c)=6)
    """
    return call("nvl2", arg(col1, "c"), arg(col2, "c"), arg(col3, "c"))


def isnotnull(col: "Column | str") -> Column:
    """True where ``col`` is not null.

    >>> spark.createDataFrame([(None,), (1,)], "a int").select(isnotnull("a")).collect()
    [Row((a IS NOT NULL)=False), Row((a IS NOT NULL)=True)]
    """
    return Column(sx.Not(this=sx.Is(this=arg(col, "c"), expression=sx.Null())))


def width_bucket(v: "Column | str", min: "Column | str", max: "Column | str",  # noqa: A002 - PySpark's names
                 numBucket: "Column | str | int") -> Column:
    """The bucket, 1 to ``numBucket``, of ``v`` in ``numBucket`` equal ranges from ``min`` to ``max`` (0 below,
    ``numBucket + 1`` above), a bigint.

    >>> df = spark.createDataFrame([(5.3, 0.2, 10.6, 5)], ["v", "lo", "hi", "n"])
    >>> df.select(width_bucket("v", "lo", "hi", "n")).first()
    Row(width_bucket(v, lo, hi, n)=3)
    """
    return call("width_bucket", arg(v, "c"), arg(min, "c"), arg(max, "c"),
                arg(numBucket, "l") if isinstance(numBucket, int) else arg(numBucket, "c"))
