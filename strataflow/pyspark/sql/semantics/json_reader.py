"""``from_json`` as Spark's ``JacksonParser`` reads JSON text into a schema, in PERMISSIVE mode
(Spark's default): a value that does not fit its field's type makes that field null and
the rest of the record is kept (Spark 4's partial results); text that is not JSON, or
not the schema's kind of value, gives a struct of nulls (an array or map schema: null).

Numbers go only to numeric fields (a string "1" is no int), an integer out of the
field's range fails it, a string field takes any other value as its JSON text, a double
field takes the strings ``NaN``, ``Infinity`` and ``-Infinity`` too. Date, timestamp and
binary fields are not read here (``structured`` refuses them).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Callable

from strataflow.pyspark.sql.semantics.json_values import Raw, _Pairs, parse, write

__all__ = ["reader", "Unreadable"]


class Unreadable(Exception):
    """A schema type this reader does not read as Spark."""


class _Bad(Exception):
    """A value that does not fit its field's type."""


_INT = re.compile(r"-?[0-9]+")
_RANGES = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf,
            "INF": math.inf, "+INF": math.inf, "-INF": -math.inf}


def _converter(dt: Any) -> Callable[[Any], Any]:
    """The conversion of a parsed JSON value to a value of Spark type ``dt`` (raises _Bad)."""
    from strataflow.pyspark.sql import types as T

    s = dt.simpleString()
    if isinstance(dt, T.StructType):
        fields = [(f.name, _converter(f.dataType)) for f in dt.fields]

        def struct(v: Any) -> Any:
            if not isinstance(v, _Pairs):
                raise _Bad()
            out: dict = {name: None for name, _ in fields}
            for k, x in v:  # a field that does not fit is null, the others kept (Spark 4's partial results)
                for name, conv in fields:
                    if name == k:
                        try:
                            out[name] = None if x is None else conv(x)
                        except _Bad:
                            out[name] = None
            return out

        return struct
    if isinstance(dt, T.ArrayType):
        conv = _converter(dt.elementType)
        of_structs = isinstance(dt.elementType, T.StructType)

        def array(v: Any) -> Any:
            if of_structs and isinstance(v, _Pairs):
                return [conv(v)]  # an array of structs reads one object as an array of it
            if not isinstance(v, list) or isinstance(v, _Pairs):
                raise _Bad()
            return [None if x is None else conv(x) for x in v]

        return array
    if isinstance(dt, T.MapType):
        if not isinstance(dt.keyType, T.StringType):
            raise Unreadable("a map whose keys are not strings")
        conv = _converter(dt.valueType)

        def mapping(v: Any) -> Any:
            if not isinstance(v, _Pairs):
                raise _Bad()
            out: dict = {}
            for k, x in v:  # a key given twice: its last value, at its first place
                out[k] = None if x is None else conv(x)
            return list(out.items())

        return mapping
    if s == "boolean":
        def boolean(v: Any) -> Any:
            if v is True or v is False:
                return v
            raise _Bad()

        return boolean
    if s in _RANGES:
        bits = _RANGES[s]

        def integral(v: Any) -> Any:
            if isinstance(v, Raw) and _INT.fullmatch(v) and -(1 << (bits - 1)) <= int(v) < (1 << (bits - 1)):
                return int(v)
            raise _Bad()

        return integral
    if s in ("double", "float"):
        def fractional(v: Any) -> Any:
            if isinstance(v, Raw):
                return float(v)
            if isinstance(v, str) and v in _SPECIAL:
                return _SPECIAL[v]
            raise _Bad()

        return fractional
    if isinstance(dt, T.DecimalType):
        p, sc = dt.precision, dt.scale

        def decimal(v: Any) -> Any:
            if not isinstance(v, Raw):
                raise _Bad()
            try:
                d = Decimal(v).quantize(Decimal(1).scaleb(-sc), rounding=ROUND_HALF_UP)
            except InvalidOperation:
                raise _Bad() from None
            if len(d.as_tuple().digits) > p and d != 0:
                raise _Bad()
            return d

        return decimal
    if s == "string":
        return lambda v: v if isinstance(v, str) and not isinstance(v, Raw) else write(v)
    raise Unreadable(f"a field of type {s}")


def reader(dt: Any) -> Callable[[Any], Any]:
    """The function from JSON text to a value of the schema ``dt`` (a StructType, ArrayType
    or MapType), PERMISSIVE; raises Unreadable for a schema it does not read."""
    from strataflow.pyspark.sql import types as T

    conv = _converter(dt)
    is_struct = isinstance(dt, T.StructType)
    empty = {f.name: None for f in dt.fields} if is_struct else None

    def read(text: Any) -> Any:
        if text is None:
            return None
        if not text.strip(" \t\n\r"):
            return None
        try:
            v = parse(text)
        except ValueError:
            return dict(empty) if is_struct else None
        try:
            return conv(v)
        except _Bad:
            return dict(empty) if is_struct else None

    return read
