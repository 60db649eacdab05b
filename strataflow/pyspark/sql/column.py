"""``Column``: an expression over a DataFrame's columns, held as a sqlglot syntax tree.

A Column does nothing by itself: ``df.select``/``filter``/``withColumn`` resolve its column
names against the DataFrame's schema (``resolve.py``) and the partition's query runs it
(``engine.py``). sqlglot's tree is dialect-free, so the same tree comes from Python
operators (``col("a") + 1``), from ``functions`` and from Spark SQL text (``expr("a + 1")``),
and is written out in DuckDB's dialect with Spark's meaning (sqlglot's transpiler).

``spark_name`` (``column_names.py``, with literals' trees) gives the column name Spark
gives an unnamed expression (``(a + 1)``, ``sum(x)``, ``count(1)``, ``r.b``, ``l[0]``):
programs read results by those names (``row["sum(x)"]``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from strataflow.pyspark.sql.column_names import drop_fields_expr, isnan_expr, lit_expr, spark_name

__all__ = ["Column", "spark_name", "to_expr", "lit_expr", "isnan_expr"]


def to_expr(c: "Column | str") -> exp.Expression:
    """A Column's tree, or a column name's (``"a"``, ``"t.a"``, ``"*"``)."""
    if isinstance(c, Column):
        return c._expr
    if isinstance(c, str):
        if c == "*":
            return exp.Star()
        if "." in c and not c.startswith("`"):
            table, _, name = c.rpartition(".")
            return exp.column(name, table=table, quoted=True) if name != "*" else exp.Column(
                this=exp.Star(), table=exp.to_identifier(table))
        return exp.column(c.strip("`"), quoted=True)
    raise TypeError(f"expected a Column or a column name, got {type(c).__name__} ({c!r})")


def _wrap(v: Any) -> exp.Expression:
    return v._expr if isinstance(v, Column) else lit_expr(v)


def _is_frame(v: Any) -> bool:
    """A DataFrame (told by its ``collect`` and ``columns``: this module may not import it)."""
    return not isinstance(v, Column) and hasattr(v, "collect") and hasattr(v, "columns")


class Column:
    """An expression over columns: operators build new ones, ``alias`` names one.

    >>> from strataflow.pyspark.sql import functions as F
    >>> (F.col("price") * 2 + 1).alias("p2")
    Column<'((price * 2) + 1) AS p2'>
    """

    def __init__(self, expr: exp.Expression) -> None:
        self._expr = expr

    # -- operators ------------------------------------------------------------------------------------
    def _bin(self, cls: type, other: Any, swap: bool = False) -> "Column":
        a, b = self._expr, _wrap(other)
        if swap:
            a, b = b, a
        return Column(cls(this=exp.paren(a, copy=False) if isinstance(a, exp.Binary) else a,
                          expression=exp.paren(b, copy=False) if isinstance(b, exp.Binary) else b))

    def __add__(self, o: Any) -> "Column": return self._bin(exp.Add, o)
    def __radd__(self, o: Any) -> "Column": return self._bin(exp.Add, o, True)
    def __sub__(self, o: Any) -> "Column": return self._bin(exp.Sub, o)
    def __rsub__(self, o: Any) -> "Column": return self._bin(exp.Sub, o, True)
    def __mul__(self, o: Any) -> "Column": return self._bin(exp.Mul, o)
    def __rmul__(self, o: Any) -> "Column": return self._bin(exp.Mul, o, True)
    def __truediv__(self, o: Any) -> "Column": return self._bin(exp.Div, o)
    def __rtruediv__(self, o: Any) -> "Column": return self._bin(exp.Div, o, True)
    def __mod__(self, o: Any) -> "Column": return self._bin(exp.Mod, o)
    def __rmod__(self, o: Any) -> "Column": return self._bin(exp.Mod, o, True)
    def __pow__(self, o: Any) -> "Column": return Column(exp.Pow(this=self._expr, expression=_wrap(o)))
    def __eq__(self, o: Any) -> "Column": return self._bin(exp.EQ, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> "Column": return self._bin(exp.NEQ, o)  # type: ignore[override]
    def __lt__(self, o: Any) -> "Column": return self._bin(exp.LT, o)
    def __le__(self, o: Any) -> "Column": return self._bin(exp.LTE, o)
    def __gt__(self, o: Any) -> "Column": return self._bin(exp.GT, o)
    def __ge__(self, o: Any) -> "Column": return self._bin(exp.GTE, o)
    def __and__(self, o: Any) -> "Column": return self._bin(exp.And, o)
    def __rand__(self, o: Any) -> "Column": return self._bin(exp.And, o, True)
    def __or__(self, o: Any) -> "Column": return self._bin(exp.Or, o)
    def __ror__(self, o: Any) -> "Column": return self._bin(exp.Or, o, True)
    def __invert__(self) -> "Column": return Column(exp.Not(this=exp.paren(self._expr, copy=False)))
    def __neg__(self) -> "Column": return Column(exp.Neg(this=self._expr))

    def __bool__(self) -> bool:
        raise ValueError("Cannot convert column into bool: please use '&' for 'and', '|' for 'or', "
                         "'~' for 'not' when building DataFrame boolean expressions.")

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> "Column":
        if isinstance(key, slice):  # Spark's meaning: col[start:length] is substr(start, length)
            if key.step is not None:
                raise ValueError("[SLICE_WITH_STEP] Slice with step is not supported.")
            return self.substr(key.start, key.stop)
        return self.getItem(key)

    def __iter__(self) -> None:
        raise TypeError("[NOT_ITERABLE] Column is not iterable.")

    def __contains__(self, item: Any) -> None:
        raise ValueError("[CANNOT_APPLY_IN_FOR_COLUMN] Cannot apply 'in' operator against a column: "
                         "please use 'contains' in a string column or 'array_contains' function for an array column.")

    def __getattr__(self, name: str) -> "Column":
        if name.startswith("_"):
            raise AttributeError(name)
        return self.getField(name)

    # -- methods ---------------------------------------------------------------------------------------
    def alias(self, *alias: str, **kwargs: Any) -> "Column":
        """The column under another name.

        >>> from strataflow.pyspark.sql import functions as F
        >>> spark.range(2).select(F.col("id").alias("n")).columns
        ['n']
        """
        metadata = kwargs.pop("metadata", None)
        if kwargs:
            raise TypeError(f"alias() got unexpected keyword arguments: {', '.join(kwargs)}")
        e = exp.alias_(self._expr.this if isinstance(self._expr, exp.Alias) else self._expr, alias[0], quoted=True)
        if metadata is not None:
            e.meta["metadata"] = dict(metadata)  # the schema's StructField.metadata of the column it names
        return Column(e)

    @property
    def _metadata(self) -> dict | None:
        """The metadata ``alias(..., metadata=...)`` gave this column, if any."""
        return self._expr.meta.get("metadata") if isinstance(self._expr, exp.Alias) and self._expr._meta else None

    name = alias

    def cast(self, dataType: Any) -> "Column":
        """The column converted to ``dataType`` (a DataType or its DDL name), as Spark casts:
        with ``spark.sql.ansi.enabled`` (the default) a value that does not convert is an
        error (CAST_INVALID_INPUT, CAST_OVERFLOW), without it null.

        >>> spark.createDataFrame([("7",)], ["s"]).select(F.col("s").cast("int").alias("n")).first().n
        7
        """
        from strataflow.pyspark.sql.types import DataType

        text = dataType.simpleString() if isinstance(dataType, DataType) else dataType
        return Column(exp.Cast(this=self._expr, to=exp.DataType.build(text, dialect="spark")))

    astype = cast

    def try_cast(self, dataType: Any) -> "Column":
        """The column converted to ``dataType``, null where a value does not convert (named as
        the column itself, as Spark 4 names it).

        >>> df = spark.createDataFrame([("123",), ("Bob",), (None,)], ["name"])
        >>> df.select(F.col("name").try_cast("long")).collect()
        [Row(name=123), Row(name=None), Row(name=None)]
        """
        from strataflow.pyspark.sql.types import DataType

        text = dataType.simpleString() if isinstance(dataType, DataType) else dataType
        e = exp.TryCast(this=self._expr, to=exp.DataType.build(text, dialect="spark"))
        e.meta["try_cast"] = True
        return Column(e)

    def isNaN(self) -> "Column":
        """True where the value is NaN (false where it is null, as Spark's ``isnan``).

        >>> df = spark.createDataFrame([(1.0,), (float("nan"),), (None,)], "h double")
        >>> [r["isnan(h)"] for r in df.select(F.col("h").isNaN()).collect()]
        [False, True, False]
        """
        return Column(isnan_expr(self._expr))

    def isNull(self) -> "Column":
        """True where the value is null.

        >>> spark.createDataFrame([(1,), (None,)], ["a"]).filter(F.col("a").isNull()).count()
        1
        """
        return Column(exp.Is(this=self._expr, expression=exp.Null()))

    def isNotNull(self) -> "Column":
        """True where the value is not null.

        >>> spark.createDataFrame([(1,), (None,)], ["a"]).filter(F.col("a").isNotNull()).count()
        1
        """
        return Column(exp.Not(this=exp.Is(this=self._expr, expression=exp.Null())))

    def isin(self, *values: Any) -> "Column":
        """True where the value is one of ``values`` (or of one list of them).

        >>> spark.range(5).filter(F.col("id").isin([1, 3])).count()
        2

        A DataFrame of one column is Spark's IN subquery (its rows are read when the Column is made):

        >>> spark.range(5).filter(F.col("id").isin(spark.range(2, 9))).count()
        3
        """
        if len(values) == 1 and isinstance(values[0], (list, tuple, set)):
            values = tuple(values[0])
        if len(values) == 1 and _is_frame(values[0]):
            return self._isin_frame(values[0])
        return Column(exp.In(this=self._expr, expressions=[_wrap(v) for v in values]))

    def _isin_frame(self, df: Any) -> "Column":
        """``isin`` of a DataFrame's rows (Spark's IN subquery): its values are read now; a
        DataFrame of several columns is compared, by position, with a struct (``struct(a, b)``)."""
        rows = df.collect()
        if not rows:
            return Column(exp.false())  # IN of no rows is false, for a null value too
        if len(df.columns) == 1:
            return Column(exp.In(this=self._expr, expressions=[lit_expr(r[0]) for r in rows]))
        tuples = [exp.Anonymous(this="ROW", expressions=[lit_expr(v) for v in r]) for r in rows]
        return Column(exp.In(this=self._expr, expressions=tuples))

    def between(self, lowerBound: Any, upperBound: Any) -> "Column":
        """True where ``lowerBound <= value <= upperBound``.

        >>> spark.range(10).filter(F.col("id").between(2, 4)).count()
        3
        """
        return (self >= lowerBound) & (Column(self._expr.copy()) <= upperBound)

    def like(self, other: str) -> "Column":
        """SQL LIKE (``%`` any run, ``_`` one character).

        >>> spark.createDataFrame([("Alice",), ("Bob",)], ["n"]).filter(F.col("n").like("A%")).count()
        1
        """
        return Column(exp.Like(this=self._expr, expression=exp.Literal.string(other)))

    def ilike(self, other: str) -> "Column":
        """LIKE without regard to case.

        >>> spark.createDataFrame([("Alice",)], ["n"]).filter(F.col("n").ilike("a%")).count()
        1
        """
        return Column(exp.ILike(this=self._expr, expression=exp.Literal.string(other)))

    def rlike(self, other: str) -> "Column":
        """True where a regular expression matches part of the value.

        >>> spark.createDataFrame([("a1",), ("b",)], ["s"]).filter(F.col("s").rlike("[0-9]")).count()
        1
        """
        return Column(exp.RegexpLike(this=self._expr, expression=exp.Literal.string(other)))

    def startswith(self, other: Any) -> "Column":
        """True where the string starts with ``other``.

        >>> spark.createDataFrame([("spark",)], ["s"]).filter(F.col("s").startswith("sp")).count()
        1
        """
        return Column(exp.StartsWith(this=self._expr, expression=_wrap(other)))

    def endswith(self, other: Any) -> "Column":
        """True where the string ends with ``other``.

        >>> spark.createDataFrame([("spark",)], ["s"]).filter(F.col("s").endswith("rk")).count()
        1
        """
        return Column(exp.EndsWith(this=self._expr, expression=_wrap(other)))

    def contains(self, other: Any) -> "Column":
        """True where the value contains ``other``.

        >>> spark.createDataFrame([("spark",)], ["s"]).filter(F.col("s").contains("pa")).count()
        1
        """
        return Column(exp.Contains(this=self._expr, expression=_wrap(other)))

    def substr(self, startPos: int, length: int) -> "Column":
        """``length`` characters from position ``startPos`` (counted from 1).

        >>> spark.createDataFrame([("spark",)], ["s"]).select(F.col("s").substr(2, 3).alias("t")).first().t
        'par'
        """
        if type(startPos) is not type(length) and not (isinstance(startPos, int) and isinstance(length, int)):
            raise TypeError(f"[NOT_SAME_TYPE] startPos and length should be the same type, got "
                            f"{type(startPos).__name__} and {type(length).__name__}.")
        e = exp.Substring(this=self._expr, start=_wrap(startPos), length=_wrap(length))
        e.meta["fn"] = "substr"
        e.meta["call"] = ("substr", [e.this, e.args["start"], e.args["length"]])  # Spark's name: substr(s, 1, 3)
        return Column(e)

    def bitwiseAND(self, other: Any) -> "Column":
        """Bitwise AND with ``other`` (a value or a Column), named ``(a & b)``.

        >>> spark.createDataFrame([(170, 75)], ["a", "b"]).select(F.col("a").bitwiseAND(F.col("b"))).collect()
        [Row((a & b)=10)]
        """
        return self._bin(exp.BitwiseAnd, other)

    def bitwiseOR(self, other: Any) -> "Column":
        """Bitwise OR with ``other`` (a value or a Column), named ``(a | b)``.

        >>> spark.createDataFrame([(170, 75)], ["a", "b"]).select(F.col("a").bitwiseOR(F.col("b"))).collect()
        [Row((a | b)=235)]
        """
        return self._bin(exp.BitwiseOr, other)

    def bitwiseXOR(self, other: Any) -> "Column":
        """Bitwise exclusive OR with ``other`` (a value or a Column), named ``(a ^ b)``.

        >>> spark.createDataFrame([(170, 75)], ["a", "b"]).select(F.col("a").bitwiseXOR(F.col("b"))).collect()
        [Row((a ^ b)=225)]
        """
        return self._bin(exp.BitwiseXor, other)

    def eqNullSafe(self, other: Any) -> "Column":
        """Equality in which null equals null (Spark's ``<=>``).

        >>> spark.createDataFrame([(None,)], "a int").filter(F.col("a").eqNullSafe(None)).count()
        1
        """
        return Column(exp.NullSafeEQ(this=self._expr, expression=_wrap(other)))

    def getItem(self, key: Any) -> "Column":
        """An array's element (from 0) or a map's value.

        >>> spark.createDataFrame([([1, 2],)], ["a"]).select(F.col("a").getItem(1).alias("x")).first().x
        2
        """
        if isinstance(key, int):
            return Column(exp.Bracket(this=self._expr, expressions=[exp.Literal.number(key)], offset=0, safe=True))
        return Column(exp.Bracket(this=self._expr, expressions=[_wrap(key)], safe=True))

    def getField(self, name: str) -> "Column":
        """A struct's field.

        >>> df = spark.createDataFrame([(Row(a=1, b=2),)], ["s"])
        >>> df.select(F.col("s").getField("b").alias("b")).first().b
        2
        """
        return Column(exp.Dot(this=self._expr, expression=exp.to_identifier(name, quoted=True)))

    def withField(self, fieldName: str, col: "Column") -> "Column":
        """This struct with field ``fieldName`` added, or replaced (the name matched without
        regard to case); ``"e.g"`` reaches into a nested struct. A null struct stays null.

        >>> df = spark.createDataFrame([(Row(b=1, c=2),)], ["a"])
        >>> df.withColumn("a", F.col("a").withField("b", F.lit(3)).withField("d", F.lit(4))).first().a
        Row(b=3, c=2, d=4)
        """
        if not isinstance(fieldName, str):
            raise TypeError(f"[NOT_STR] Argument `fieldName` should be a str, got {type(fieldName).__name__}.")
        if not isinstance(col, Column):
            raise TypeError(f"[NOT_COLUMN] Argument `col` should be a Column, got {type(col).__name__}.")
        head, _, rest = fieldName.partition(".")
        value = col._expr if not rest else Column(self.getField(head)._expr).withField(rest, col)._expr
        update = exp.Anonymous(this="STRUCT_UPDATE", expressions=[
            self._expr.copy(), exp.PropertyEQ(this=exp.to_identifier(head, quoted=True), expression=value)])
        guarded = exp.Case(ifs=[exp.If(this=exp.Is(this=self._expr.copy(), expression=exp.Null()), true=exp.Null())],
                           default=update)
        guarded.meta["with_field"] = head
        return Column(guarded)

    def dropFields(self, *fieldNames: str) -> "Column":
        """This struct without the fields ``fieldNames`` (``"e.g"`` reaches into a nested
        struct; a name it does not have drops nothing). It is written out when the struct's
        type is known, as the DataFrame resolves the column (``column_names.expand_struct_ops``).

        >>> from strataflow.pyspark.sql.column_names import expand_struct_ops
        >>> df = spark.createDataFrame([(Row(b=1, c=2),)], ["a"])
        >>> c = F.col("a").dropFields("b")
        >>> df.select(Column(expand_struct_ops(c._expr, df._current.fields)).alias("a")).first().a
        Row(c=2)
        """
        if not fieldNames or not all(isinstance(n, str) for n in fieldNames):
            raise TypeError("dropFields: give one or more field names (str)")
        return Column(drop_fields_expr(self._expr, fieldNames))

    def outer(self) -> "Column":
        """A reference to the outer query's column in a correlated subquery
        (``DataFrame.scalar``/``exists``), which strataflow does not run: it says so.

        >>> try:
        ...     F.col("e1.dept").outer()
        ... except NotImplementedError as exc:
        ...     "correlated" in str(exc)
        True
        """
        from strataflow.pyspark.errors import UnsupportedOperation

        raise UnsupportedOperation("Column.outer is not supported in strataflow: correlated subqueries "
                                   "(DataFrame.scalar, DataFrame.exists) are not; join the DataFrames instead")

    def transform(self, f: Any) -> "Column":
        """``f(self)``: a function of a Column, so that steps chain (``c.transform(trim).transform(upper)``).

        >>> df = spark.createDataFrame([("  hi ",)], ["t"])
        >>> df.select(F.col("t").transform(F.trim).transform(F.upper).alias("r")).first().r
        'HI'
        """
        out = f(self)
        if not isinstance(out, Column):
            raise TypeError(f"[NOT_COLUMN] the function given to transform should return a Column, "
                            f"got {type(out).__name__}.")
        return out

    def when(self, condition: "Column", value: Any) -> "Column":
        """Another branch of a ``functions.when`` chain.

        >>> df = spark.range(3).select(F.when(F.col("id") == 0, "zero").when(F.col("id") == 1, "one").alias("w"))
        >>> [r.w for r in df.collect()]
        ['zero', 'one', None]
        """
        if not isinstance(self._expr, exp.Case) or self._expr.args.get("default") is not None:
            raise ValueError("when() can only be applied on a Column previously generated by when() function, "
                             "and cannot be applied once otherwise() is applied")
        case = self._expr.copy()
        case.append("ifs", exp.If(this=condition._expr, true=_wrap(value)))
        return Column(case)

    def otherwise(self, value: Any) -> "Column":
        """The value of a ``when`` chain where no condition holds.

        >>> spark.range(2).select(F.when(F.col("id") == 0, "zero").otherwise("more").alias("w")).collect()
        [Row(w='zero'), Row(w='more')]
        """
        if not isinstance(self._expr, exp.Case) or self._expr.args.get("default") is not None:
            raise ValueError("otherwise() can only be applied on a Column previously generated by when()")
        case = self._expr.copy()
        case.set("default", _wrap(value))
        return Column(case)

    def over(self, window: Any) -> "Column":
        """This aggregate or ranking function over a window (``Window.partitionBy(...).orderBy(...)``).

        >>> from strataflow.pyspark.sql import Window
        >>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
        >>> w = Window.partitionBy("k").orderBy("v")
        >>> sorted(df.select("k", "v", F.row_number().over(w).alias("rn")).collect())
        [Row(k='a', v=1, rn=1), Row(k='a', v=2, rn=2), Row(k='b', v=5, rn=1)]
        """
        return Column(window._over(self._expr))

    def asc(self) -> "Column":
        """Ascending order for ``orderBy``, nulls first.

        >>> [r.id for r in spark.range(3).orderBy(F.col("id").asc()).collect()]
        [0, 1, 2]
        """
        return Column(exp.Ordered(this=self._expr, desc=False, nulls_first=True))

    def asc_nulls_first(self) -> "Column":
        """Ascending, nulls first.

        >>> spark.createDataFrame([(1,), (None,)], "a int").orderBy(F.col("a").asc_nulls_first()).first().a is None
        True
        """
        return Column(exp.Ordered(this=self._expr, desc=False, nulls_first=True))

    def asc_nulls_last(self) -> "Column":
        """Ascending, nulls last.

        >>> spark.createDataFrame([(1,), (None,)], "a int").orderBy(F.col("a").asc_nulls_last()).first().a
        1
        """
        return Column(exp.Ordered(this=self._expr, desc=False, nulls_first=False))

    def desc(self) -> "Column":
        """Descending order for ``orderBy``, nulls last.

        >>> [r.id for r in spark.range(3).orderBy(F.col("id").desc()).collect()]
        [2, 1, 0]
        """
        return Column(exp.Ordered(this=self._expr, desc=True, nulls_first=False))

    def desc_nulls_first(self) -> "Column":
        """Descending, nulls first.

        >>> spark.createDataFrame([(1,), (None,)], "a int").orderBy(F.col("a").desc_nulls_first()).first().a is None
        True
        """
        return Column(exp.Ordered(this=self._expr, desc=True, nulls_first=True))

    def desc_nulls_last(self) -> "Column":
        """Descending, nulls last.

        >>> spark.createDataFrame([(1,), (None,)], "a int").orderBy(F.col("a").desc_nulls_last()).first().a
        1
        """
        return Column(exp.Ordered(this=self._expr, desc=True, nulls_first=False))

    def __repr__(self) -> str:
        return f"Column<'{spark_name(self._expr, aliases=False)}{self._alias_note()}'>"

    def _alias_note(self) -> str:
        return f" AS {self._expr.alias}" if isinstance(self._expr, exp.Alias) else ""
