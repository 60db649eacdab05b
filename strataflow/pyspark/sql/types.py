"""``pyspark.sql.types``: Spark's data types, and the one mapping between them and Arrow's.

A DataFrame's partitions are pyarrow Tables, so a Spark type here is a name for an Arrow
type: ``to_arrow``/``from_arrow`` convert, ``simpleString`` gives Spark's spelling (what
``printSchema``, ``dtypes`` and error messages show). ``_infer`` types the Python values
``createDataFrame`` is given as PySpark does (an int is a ``LongType``, a float a
``DoubleType``, a ``Decimal`` a ``DecimalType(38, 18)``); ``_parse_ddl`` reads a schema
string (``"id INT, name STRING"``) through sqlglot's Spark dialect.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from typing import Any, Iterator

import pyarrow as pa

__all__ = ["DataType", "NullType", "StringType", "BinaryType", "BooleanType", "DateType", "TimestampType",
           "TimestampNTZType", "DecimalType", "DoubleType", "FloatType", "ByteType", "ShortType", "IntegerType",
           "LongType", "ArrayType", "MapType", "StructField", "StructType", "Row"]


class DataType:
    """The base of Spark's types: equal when of the same kind and parameters.

    >>> IntegerType() == IntegerType(), IntegerType().simpleString(), LongType().typeName()
    (True, 'int', 'long')
    """

    _arrow: Any = None
    _simple = ""

    def simpleString(self) -> str:
        """Spark's short spelling (``int``, ``string``, ``array<bigint>``).

        >>> ArrayType(LongType()).simpleString()
        'array<bigint>'
        """
        return self._simple

    def typeName(self) -> str:
        """The type's name as Spark's JSON schema writes it.

        >>> DecimalType(10, 2).typeName(), StringType().typeName()
        ('decimal', 'string')
        """
        return type(self).__name__[:-4].lower()

    def to_arrow(self) -> pa.DataType:
        """The Arrow type of this Spark type.

        >>> DateType().to_arrow()
        DataType(date32[day])
        """
        return self._arrow

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items(), key=lambda kv: kv[0]))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _atomic(name: str, arrow: pa.DataType, simple: str) -> type:
    return type(name, (DataType,), {"_arrow": arrow, "_simple": simple, "__doc__": f"Spark's {simple} (Arrow {arrow})."})


NullType = _atomic("NullType", pa.null(), "void")
StringType = _atomic("StringType", pa.string(), "string")
BinaryType = _atomic("BinaryType", pa.binary(), "binary")
BooleanType = _atomic("BooleanType", pa.bool_(), "boolean")
DateType = _atomic("DateType", pa.date32(), "date")
TimestampType = _atomic("TimestampType", pa.timestamp("us"), "timestamp")  # wall-clock time, as PySpark collects it
TimestampNTZType = _atomic("TimestampNTZType", pa.timestamp("us"), "timestamp_ntz")
DoubleType = _atomic("DoubleType", pa.float64(), "double")
FloatType = _atomic("FloatType", pa.float32(), "float")
ByteType = _atomic("ByteType", pa.int8(), "tinyint")
ShortType = _atomic("ShortType", pa.int16(), "smallint")
IntegerType = _atomic("IntegerType", pa.int32(), "int")
LongType = _atomic("LongType", pa.int64(), "bigint")


class DecimalType(DataType):
    """A fixed-point decimal of ``precision`` digits, ``scale`` after the point.

    >>> DecimalType(12, 2).simpleString()
    'decimal(12,2)'
    """

    def __init__(self, precision: int = 10, scale: int = 0) -> None:
        self.precision, self.scale = precision, scale

    def simpleString(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def to_arrow(self) -> pa.DataType:
        return pa.decimal128(self.precision, self.scale)

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale})"


class ArrayType(DataType):
    """An array of ``elementType``.

    >>> ArrayType(StringType()).to_arrow()
    ListType(list<item: string>)
    """

    def __init__(self, elementType: DataType, containsNull: bool = True) -> None:
        self.elementType, self.containsNull = elementType, containsNull

    def simpleString(self) -> str:
        return f"array<{self.elementType.simpleString()}>"

    def to_arrow(self) -> pa.DataType:
        return pa.list_(_nested(self.elementType))

    def __repr__(self) -> str:
        return f"ArrayType({self.elementType!r}, {self.containsNull})"


class MapType(DataType):
    """A map from ``keyType`` to ``valueType``.

    >>> MapType(StringType(), LongType()).simpleString()
    'map<string,bigint>'
    """

    def __init__(self, keyType: DataType, valueType: DataType, valueContainsNull: bool = True) -> None:
        self.keyType, self.valueType, self.valueContainsNull = keyType, valueType, valueContainsNull

    def simpleString(self) -> str:
        return f"map<{self.keyType.simpleString()},{self.valueType.simpleString()}>"

    def to_arrow(self) -> pa.DataType:
        return pa.map_(_nested(self.keyType), _nested(self.valueType))

    def __repr__(self) -> str:
        return f"MapType({self.keyType!r}, {self.valueType!r}, {self.valueContainsNull})"


class StructField(DataType):
    """A named, typed field of a :class:`StructType`.

    >>> StructField("age", IntegerType()).simpleString()
    'age:int'
    """

    def __init__(self, name: str, dataType: DataType, nullable: bool = True, metadata: dict | None = None) -> None:
        self.name, self.dataType, self.nullable = name, dataType, nullable
        self.metadata = metadata or {}

    def simpleString(self) -> str:
        return f"{self.name}:{self.dataType.simpleString()}"

    def to_arrow(self) -> pa.Field:
        return pa.field(self.name, _nested(self.dataType), self.nullable)

    def __repr__(self) -> str:
        return f"StructField('{self.name}', {self.dataType!r}, {self.nullable})"


class StructType(DataType):
    """A row's type: its fields in order; ``schema[name]`` is a field, iterating gives them.

    >>> s = StructType([StructField("id", LongType()), StructField("name", StringType())])
    >>> s.names, s["name"].dataType, s.simpleString()
    (['id', 'name'], StringType(), 'struct<id:bigint,name:string>')
    """

    def __init__(self, fields: list[StructField] | None = None) -> None:
        self.fields = list(fields or [])

    @property
    def names(self) -> list[str]:
        """The fields' names, in order.

        >>> StructType().add("a", "int").add("b", StringType()).names
        ['a', 'b']
        """
        return [f.name for f in self.fields]

    def fieldNames(self) -> list[str]:
        """The fields' names, in order (as ``names``).

        >>> StructType([StructField("x", LongType())]).fieldNames()
        ['x']
        """
        return self.names

    def add(self, field: "str | StructField", data_type: "str | DataType | None" = None,
            nullable: bool = True) -> "StructType":
        """Appends a field (a StructField, or a name and a type, the type as a DDL string if
        wanted) and returns this StructType.

        >>> StructType().add("d", "date").simpleString()
        'struct<d:date>'
        """
        if not isinstance(field, StructField):
            dt = _parse_type(data_type) if isinstance(data_type, str) else data_type
            field = StructField(field, dt, nullable)
        self.fields.append(field)
        return self

    def simpleString(self) -> str:
        return "struct<" + ",".join(f.simpleString() for f in self.fields) + ">"

    def to_arrow(self) -> pa.Schema:
        return pa.schema([f.to_arrow() for f in self.fields])

    def treeString(self, level: int | None = None) -> str:
        """The schema as ``printSchema`` prints it.

        >>> print(StructType().add("a", "int").add("tags", "array<string>").treeString())
        root
         |-- a: integer (nullable = true)
         |-- tags: array (nullable = true)
         |    |-- element: string (containsNull = true)
        <BLANKLINE>
        """
        lines = ["root"]
        for f in self.fields:
            _tree(lines, f.name, f.dataType, f"nullable = {str(f.nullable).lower()}", " |", level or 1 << 30)
        return "\n".join(lines) + "\n"

    def __getitem__(self, key: "str | int") -> StructField:
        if isinstance(key, int):
            return self.fields[key]
        for f in self.fields:
            if f.name == key:
                return f
        raise KeyError(f"No StructField named {key}")

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __repr__(self) -> str:
        return f"StructType([{', '.join(map(repr, self.fields))}])"


def _nested(dt: DataType) -> pa.DataType:
    """The Arrow type of ``dt`` inside another type (a StructType is a struct there, not a schema)."""
    return pa.struct(list(dt.to_arrow())) if isinstance(dt, StructType) else dt.to_arrow()


def _tree_name(dt: DataType) -> str:
    """``printSchema``'s name of a type: ``integer`` and ``long`` where simpleString says int, bigint."""
    if isinstance(dt, (ArrayType, MapType, StructType)):
        return dt.typeName()
    return {"int": "integer", "bigint": "long", "tinyint": "byte", "smallint": "short", "void": "void"}.get(
        dt.simpleString(), dt.simpleString())


def _tree(lines: list[str], name: str, dt: DataType, null_note: str, prefix: str, level: int) -> None:
    """Appends a field's line and (``level`` deep at most) its inner fields' lines."""
    lines.append(f"{prefix}-- {name}: {_tree_name(dt)} ({null_note})")
    if level <= 1:
        return
    inner, level = prefix + "    |", level - 1
    if isinstance(dt, ArrayType):
        _tree(lines, "element", dt.elementType, f"containsNull = {str(dt.containsNull).lower()}", inner, level)
    elif isinstance(dt, MapType):
        _tree(lines, "key", dt.keyType, "nullable = false", inner, level)
        _tree(lines, "value", dt.valueType, f"valueContainsNull = {str(dt.valueContainsNull).lower()}", inner, level)
    elif isinstance(dt, StructType):
        for f in dt.fields:
            _tree(lines, f.name, f.dataType, f"nullable = {str(f.nullable).lower()}", inner, level)


_FROM_ARROW = {pa.null(): NullType, pa.string(): StringType, pa.large_string(): StringType, pa.utf8(): StringType,
               pa.binary(): BinaryType, pa.large_binary(): BinaryType, pa.bool_(): BooleanType,
               pa.date32(): DateType, pa.date64(): DateType, pa.float64(): DoubleType, pa.float32(): FloatType,
               pa.float16(): FloatType, pa.int8(): ByteType, pa.int16(): ShortType, pa.int32(): IntegerType,
               pa.int64(): LongType, pa.uint8(): ShortType, pa.uint16(): IntegerType, pa.uint32(): LongType,
               pa.uint64(): DecimalType, pa.string_view(): StringType}


def from_arrow(t: "pa.DataType | pa.Schema") -> DataType:
    """The Spark type of an Arrow type (a schema gives a StructType).

    >>> from_arrow(pa.schema([("n", pa.int64()), ("t", pa.timestamp("ns"))]))
    StructType([StructField('n', LongType(), True), StructField('t', TimestampType(), True)])
    """
    if isinstance(t, pa.Schema):
        return StructType([StructField(f.name, from_arrow(f.type), f.nullable) for f in t])
    if pa.types.is_timestamp(t):
        return TimestampType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ArrayType(from_arrow(t.value_type))
    if pa.types.is_map(t):
        return MapType(from_arrow(t.key_type), from_arrow(t.item_type))
    if pa.types.is_struct(t):
        return StructType([StructField(f.name, from_arrow(f.type), f.nullable) for f in t])
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type)
    kind = _FROM_ARROW.get(t)
    if kind is DecimalType:
        return DecimalType(20, 0)
    if kind is None:
        raise TypeError(f"no Spark type for the Arrow type {t}")
    return kind()


def _infer(value: Any) -> DataType:
    """PySpark's type of a Python value (``_infer_type``); None is NullType."""
    if value is None:
        return NullType()
    if isinstance(value, bool):
        return BooleanType()
    if isinstance(value, int):
        return LongType()
    if isinstance(value, float):
        return DoubleType()
    if isinstance(value, str):
        return StringType()
    if isinstance(value, _decimal.Decimal):
        return DecimalType(38, 18)
    if isinstance(value, _dt.datetime):
        return TimestampType()
    if isinstance(value, _dt.date):
        return DateType()
    if isinstance(value, (bytes, bytearray)):
        return BinaryType()
    if isinstance(value, Row) and hasattr(value, "__fields__"):
        return StructType([StructField(k, _infer(v)) for k, v in zip(value.__fields__, value)])
    if isinstance(value, tuple):  # PySpark: a tuple is a struct of _1, _2, ...
        return StructType([StructField(f"_{i + 1}", _infer(v)) for i, v in enumerate(value)])
    if isinstance(value, list):
        return ArrayType(_merge([_infer(v) for v in value]))
    if isinstance(value, dict):
        return MapType(_merge([_infer(k) for k in value]), _merge([_infer(v) for v in value.values()]))
    raise TypeError(f"not supported type: {type(value).__name__} (value {value!r})")


def _merge(types: list[DataType]) -> DataType:
    """The one type of values of several types (None's NullType gives way; int and float give double)."""
    out: DataType = NullType()
    for t in types:
        if isinstance(out, NullType):
            out = t
        elif isinstance(t, NullType) or t == out:
            continue
        elif {type(out), type(t)} <= {LongType, DoubleType}:
            out = DoubleType()
        elif isinstance(out, StructType) and isinstance(t, StructType) and out.names == t.names:
            out = StructType([StructField(a.name, _merge([a.dataType, b.dataType])) for a, b in zip(out, t)])
        elif isinstance(out, ArrayType) and isinstance(t, ArrayType):
            out = ArrayType(_merge([out.elementType, t.elementType]))
        else:
            raise TypeError(f"field values of two types, {out.simpleString()} and {t.simpleString()}, cannot be merged")
    return out


def _from_sqlglot(dt: Any) -> DataType:
    """The Spark type of a sqlglot DataType node."""
    from sqlglot import exp

    T = exp.DataType.Type
    simple = {T.INT: IntegerType, T.BIGINT: LongType, T.SMALLINT: ShortType, T.TINYINT: ByteType,
              T.DOUBLE: DoubleType, T.FLOAT: FloatType, T.TEXT: StringType, T.VARCHAR: StringType,
              T.CHAR: StringType, T.BOOLEAN: BooleanType, T.DATE: DateType, T.TIMESTAMP: TimestampType,
              T.TIMESTAMPTZ: TimestampType, T.TIMESTAMPNTZ: TimestampNTZType, T.BINARY: BinaryType,
              T.VARBINARY: BinaryType, T.NULL: NullType}
    if dt.this in simple:
        return simple[dt.this]()
    if dt.this == T.DECIMAL:
        p, s = ([int(e.this.this) for e in dt.expressions] + [10, 0])[:2] if dt.expressions else (10, 0)
        if len(dt.expressions) == 1:
            s = 0
        return DecimalType(p, s)
    if dt.this == T.ARRAY:
        return ArrayType(_from_sqlglot(dt.expressions[0]))
    if dt.this == T.MAP:
        return MapType(_from_sqlglot(dt.expressions[0]), _from_sqlglot(dt.expressions[1]))
    if dt.this == T.STRUCT:
        return StructType([StructField(e.name, _from_sqlglot(e.args["kind"])) for e in dt.expressions])
    raise ValueError(f"unsupported data type in a schema string: {dt.sql('spark')}")


def _parse_type(text: str) -> DataType:
    """A Spark type from its DDL spelling (``"int"``, ``"decimal(10,2)"``, ``"array<string>"``)."""
    from sqlglot import exp

    return _from_sqlglot(exp.DataType.build(text, dialect="spark"))


def _parse_ddl(text: str) -> StructType:
    """A StructType from a DDL schema string, ``"a INT, b STRING"`` (or ``"a: int, b: string"``)."""
    import sqlglot

    fields = []
    for part in _split_top(text):
        name, _, kind = part.strip().replace(":", " ", 1).partition(" ")
        if not kind.strip():
            raise ValueError(f"schema string {text!r}: field {part.strip()!r} has no type")
        try:
            fields.append(StructField(name.strip("`"), _parse_type(kind.strip())))
        except (ValueError, sqlglot.errors.ParseError) as exc:
            raise ValueError(f"schema string {text!r}: {exc}") from None
    return StructType(fields)


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside <> and ()."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<(" and 1 or ch in ">)" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur] if cur.strip() else parts


from strataflow.pyspark.sql.row import Row  # noqa: E402  (types re-exports Row, as PySpark's does)
