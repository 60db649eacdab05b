"""Conformance cases of the ``functions.maths`` family (see ``cases.py`` for ``Case``):
math, bitwise, hash and null-handling functions over the value table's hard values
(nulls, NaN, ±0.0, ±inf, type extremes, decimals, unicode)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.cases import C, Case, Lit, _sql_lit  # noqa: F401

__all__ = ["CASES", "FloatCase", "LitCase", "MethodCase"]


@dataclass(frozen=True)
class FloatCase(Case):
    """A call with a float argument, written in the SQL form as ``CAST(2.5 AS DOUBLE)``
    (Spark names it so; strataflow's SQL names a ``2.5D`` literal that way too, where
    Spark shows ``2.5``: a naming difference of the SQL parser, not of these functions)."""

    def sql(self) -> str:
        args = [f"CAST({a!r} AS DOUBLE)" if isinstance(a, float) else _sql_lit(a) for a in self.args]
        return f"{self.fn}({', '.join(args)})"


@dataclass(frozen=True)
class LitCase(FloatCase):
    """A call whose non-column arguments PySpark takes as Columns only (``bit_get(col, pos)``):
    the DataFrame form passes them as ``F.lit(v)``."""

    def column(self, F: Any) -> Any:
        a = [F.col(x.name) if isinstance(x, C) else F.lit(x) for x in self.args]
        return getattr(F, self.fn)(*a)


@dataclass(frozen=True)
class MethodCase(Case):
    """A Column method (``a.bitwiseAND(b)``) whose SQL form is an operator (``a & b``)."""

    op: str = ""

    def column(self, F: Any) -> Any:
        return getattr(F.col(self.args[0].name), self.fn)(F.col(self.args[1].name))

    def sql(self) -> str:
        return f"(`{self.args[0].name}` {self.op} `{self.args[1].name}`)"


def _one(fn: str, cols: list[str], *extra: Any) -> list[Case]:
    return [Case(fn, (C(c), *extra)) for c in cols]


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    # -- logarithms, signs, constants ------------------------------------------------------------------------
    add(_one("log", ["d", "i", "m", "l"]))
    add([FloatCase("log", (b, C(c))) for b, c in [(10.0, "d"), (2.0, "i"), (0.5, "l"), (-2.0, "d"), (1.0, "d2"),
                                                   (3.0, "m")]])
    add(_one("sign", ["d", "i", "m", "f"]))
    add(_one("negative", ["y", "h", "i", "l", "f", "d", "m"]))
    add(_one("negate", ["i", "d"]))
    add(_one("positive", ["i", "d", "m", "y"]))
    add([Case("e", ()), Case("pi", ())])
    # -- trigonometric, hyperbolic, exponential --------------------------------------------------------------
    for fn in ("acos", "asin", "atan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh", "cot", "csc", "sec",
               "expm1", "log1p", "rint"):
        add(_one(fn, ["d", "i", "d2"]))
    add(_one("rint", ["f", "m", "l"]))
    add(_one("log1p", ["m", "f"]))
    for fn in ("atan2", "hypot"):
        add([Case(fn, (C("d"), C("d2"))), Case(fn, (C("i"), C("i2"))), FloatCase(fn, (1.0, C("d"))),
             FloatCase(fn, (C("f"), 2.0))])
    add(_one("factorial", ["i", "y", "i2", "h"]))
    add(_one("toDegrees", ["d", "i"]))
    add(_one("toRadians", ["d", "i"]))
    # -- pmod and the try_ arithmetic ------------------------------------------------------------------------
    add([Case("pmod", (C(a), C(b))) for a, b in [("l", "i2"), ("y", "y"), ("m", "m2"), ("f", "d2"), ("h", "i2"),
                                                  ("i", "l"), ("m", "i2"), ("d2", "d")]])
    add([Case("pmod", (C("i"), -3)), Case("pmod", (C("i"), 0)), FloatCase("pmod", (C("d"), 2.5))])
    pairs = [("i", "i2"), ("l", "l"), ("y", "y"), ("d", "d2"), ("m", "m2"), ("m", "i2"), ("i", "d2"), ("h", "h")]
    for fn in ("try_add", "try_subtract", "try_multiply"):
        add([Case(fn, (C(a), C(b))) for a, b in pairs])
    add([Case("try_add", (C("dt"), C("i2"))), Case("try_subtract", (C("dt"), C("i2")))])
    add([Case("try_divide", (C(a), C(b))) for a, b in [("i", "i2"), ("l", "i2"), ("d", "d2"), ("m", "m2"),
                                                        ("i", "nl"), ("m", "i2"), ("y", "y")]])
    add([Case("try_mod", (C(a), C(b))) for a, b in [("i", "i2"), ("l", "i2"), ("d", "d2"), ("m", "m2"),
                                                     ("y", "y"), ("i", "d2")]])
    # -- null handling ---------------------------------------------------------------------------------------
    add(_one("nullifzero", ["i", "d", "m", "y", "l"]))
    add(_one("zeroifnull", ["i", "d", "m", "nl", "l"]))
    add([Case("equal_null", (C(a), C(b))) for a, b in [("i", "i2"), ("d", "d2"), ("s", "s2"), ("nl", "i"),
                                                        ("i", "d2")]])
    add([Case("nvl2", (C("i"), C("s"), C("s2"))), Case("nvl2", (C("nl"), C("i"), C("i2"))),
         Case("nvl2", (C("d"), C("d2"), C("i"))), Case("nvl2", (C("s"), C("m"), C("m2")))])
    add(_one("isnotnull", ["i", "s", "nl", "d"]))
    add([LitCase("width_bucket", (C("d"), 0.0, 10.0, 5)), LitCase("width_bucket", (C("i"), -10, 10, 4)),
         LitCase("width_bucket", (C("d2"), 5.0, 0.0, 3)), LitCase("width_bucket", (C("m"), 0, 100, 10)),
         Case("width_bucket", (C("d"), C("d2"), C("i"), C("i2")))])
    # -- bits and bases --------------------------------------------------------------------------------------
    add(_one("bin", ["i", "l", "y", "h"]))
    add([Case("conv", (C("sn"), 10, 2)), Case("conv", (C("s"), 16, 10)), Case("conv", (C("i"), 10, 16)),
         Case("conv", (C("sn"), 16, -10)), Case("conv", (C("s2"), 36, 2)), Case("conv", (C("l"), 10, -36)),
         Case("conv", (C("sn"), 10, 36))])
    add(_one("unhex", ["s", "sn", "s2"]))
    add(_one("bit_count", ["i", "l", "y", "h", "b"]))
    add([LitCase("bit_get", (C("i"), 0)), LitCase("bit_get", (C("l"), 63)), LitCase("bit_get", (C("y"), 7)),
         LitCase("getbit", (C("h"), 3)), LitCase("bit_get", (C("i"), 32)), LitCase("bit_get", (C("i"), -1))])
    add(_one("bitwise_not", ["i", "l", "y", "h"]))
    add(_one("bitwiseNOT", ["i"]))
    for fn in ("shiftleft", "shiftright", "shiftrightunsigned"):
        add([Case(fn, (C(c), n)) for c, n in [("i", 1), ("l", 3), ("y", 2), ("i", 33), ("l", 65), ("i", -1),
                                              ("h", 4)]])
    add([Case("shiftLeft", (C("i"), 2)), Case("shiftRight", (C("l"), 2)), Case("shiftRightUnsigned", (C("i"), 28))])
    for fn, op in (("bitwiseAND", "&"), ("bitwiseOR", "|"), ("bitwiseXOR", "^")):
        add([MethodCase(fn, (C(a), C(b)), kind="method", op=op) for a, b in [("i", "i2"), ("l", "i2"), ("y", "y")]])
    # -- hashes ----------------------------------------------------------------------------------------------
    add(_one("crc32", ["s", "bin"]))
    add(_one("sha", ["s", "bin"]))
    for fn in ("hash", "xxhash64"):
        add(_one(fn, ["i", "l", "d", "f", "s", "m", "m2", "dt", "ts", "b", "y", "h", "bin", "nl", "d2"]))
        add([Case(fn, (C("i"), C("s"))), Case(fn, (C("d"), C("s"), C("l"))), Case(fn, (C("nl"), C("i2")))])
    # -- more argument forms: integer bases, float and mixed operands, literals, edge counts -------------------
    add([Case("factorial", (C("l"),)),
         Case("try_add", (C("f"), C("f"))), Case("try_multiply", (C("f"), C("d2"))), Case("try_divide", (C("d"), C("i2"))),
         Case("try_mod", (C("m"), C("i2"))), Case("pmod", (C("f"), C("f"))), Case("pmod", (C("y"), C("i2"))),
         LitCase("width_bucket", (C("d"), 0.0, 10.0, 0)), Case("hash", (Lit("abc"),)), Case("xxhash64", (Lit(""),)),
         Case("hash", (Lit("Spark"), C("i"))), Case("shiftleft", (C("l"), -1)), Case("shiftright", (C("h"), 20)),
         Case("atan2", (C("d2"), C("d"))), Case("zeroifnull", (C("f"),)), Case("zeroifnull", (C("y"),)),
         Case("nullifzero", (C("f"),)), Case("nvl2", (C("nl"), C("nl"), C("i"))), Case("unhex", (C("i"),)),
         Case("crc32", (C("i"),)), Case("negative", (C("m2"),)), Case("bin", (C("i2"),))])
    return out


CASES: list[Case] = _build()
