"""``Column``: an expression over a DataFrame's columns, held as a sqlglot syntax tree.

A Column does nothing by itself: ``df.select``/``filter``/``withColumn`` resolve its column
names against the DataFrame's schema (``resolve.py``) and the partition's query runs it
(``engine.py``). sqlglot's tree is dialect-free, so the same tree comes from Python
operators (``col("a") + 1``), from ``functions`` and from Spark SQL text (``expr("a + 1")``),
and is written out in DuckDB's dialect with Spark's meaning (sqlglot's transpiler).

``spark_name`` gives the column name Spark gives an unnamed expression (``(a + 1)``,
``sum(x)``, ``count(1)``): programs read results by those names (``row["sum(x)"]``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

__all__ = ["Column", "spark_name", "to_expr", "lit_expr"]


def lit_expr(value: Any) -> exp.Expression:
    """A literal's syntax tree (None is NULL; dates, timestamps and decimals typed as Spark's)."""
    import datetime as dt
    import decimal

    if isinstance(value, Column):
        return value._expr
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            return exp.cast(exp.Literal.string(str(value).replace("inf", "Infinity")), "DOUBLE")
        return exp.Literal.number(value)
    if isinstance(value, decimal.Decimal):
        return exp.cast(exp.Literal.string(str(value)), f"DECIMAL(38,{max(0, -value.as_tuple().exponent)})")
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[lit_expr(v) for v in value])
    raise TypeError(f"lit: unsupported literal type {type(value).__name__} ({value!r})")


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
        return self.getItem(key)

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
        return Column(exp.alias_(self._expr.this if isinstance(self._expr, exp.Alias) else self._expr,
                                 alias[0], quoted=True))

    name = alias

    def cast(self, dataType: Any) -> "Column":
        """The column converted to ``dataType`` (a DataType or its DDL name); a value that does
        not convert is null, as Spark's non-ANSI cast.

        >>> spark.createDataFrame([("7",)], ["s"]).select(F.col("s").cast("int").alias("n")).first().n
        7
        """
        from strataflow.pyspark.sql.types import DataType

        text = dataType.simpleString() if isinstance(dataType, DataType) else dataType
        return Column(exp.TryCast(this=self._expr, to=exp.DataType.build(text, dialect="spark")))

    astype = cast

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
        """
        if len(values) == 1 and isinstance(values[0], (list, tuple, set)):
            values = tuple(values[0])
        return Column(exp.In(this=self._expr, expressions=[_wrap(v) for v in values]))

    def between(self, lowerBound: Any, upperBound: Any) -> "Column":
        """True where ``lowerBound <= value <= upperBound``.

        >>> spark.range(10).filter(F.col("id").between(2, 4)).count()
        3
        """
        return Column(exp.Between(this=self._expr, low=_wrap(lowerBound), high=_wrap(upperBound)))

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
        return Column(exp.Substring(this=self._expr, start=_wrap(startPos), length=_wrap(length)))

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


_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=", exp.LT: "<",
        exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.And: "AND", exp.Or: "OR", exp.NullSafeEQ: "<=>"}
_FUNC_NAMES = {"avg": "avg", "count": "count", "arrayagg": "collect_list", "arrayuniqueagg": "collect_set",
               "stddev": "stddev", "stddevsamp": "stddev_samp", "stddevpop": "stddev_pop",
               "variance": "variance", "variancepop": "var_pop", "approxdistinct": "approx_count_distinct",
               "regexplike": "RLIKE", "dateadd": "date_add", "datesub": "date_sub", "datediff": "datediff",
               "tsordstodate": "to_date", "strtotime": "to_timestamp", "timestrtotime": "to_timestamp",
               "rownumber": "row_number", "denserank": "dense_rank", "percentrank": "percent_rank",
               "cumedist": "cume_dist", "countif": "count_if", "lower": "lower", "upper": "upper",
               "length": "length", "substring": "substring", "concat": "concat", "concatws": "concat_ws",
               "coalesce": "coalesce", "abs": "abs", "sqrt": "SQRT", "ln": "ln", "exp": "EXP", "pow": "POWER",
               "round": "round", "floor": "FLOOR", "ceil": "CEIL", "trim": "trim", "initcap": "initcap",
               "explode": "explode", "size": "size", "arraysize": "size", "first": "first", "last": "last"}


def spark_name(e: exp.Expression, aliases: bool = True) -> str:
    """The name Spark gives the column an expression makes (its alias if it has one)."""
    if isinstance(e, exp.Alias):
        return e.alias if aliases else spark_name(e.this)
    if isinstance(e, exp.Column):
        return e.name if not isinstance(e.this, exp.Star) else "*"
    if isinstance(e, exp.Star):
        return "*"
    if isinstance(e, exp.Paren):
        return spark_name(e.this)
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.Null):
        return "NULL"
    if isinstance(e, exp.Boolean):
        return str(e.this).lower()
    if isinstance(e, exp.NEQ):
        return f"(NOT ({spark_name(e.this)} = {spark_name(e.expression)}))"
    if type(e) in _OPS:
        return f"({spark_name(e.this)} {_OPS[type(e)]} {spark_name(e.expression)})"
    if isinstance(e, exp.Not):
        inner = e.this.this if isinstance(e.this, exp.Paren) else e.this
        if isinstance(inner, exp.Is):
            return f"({spark_name(inner.this)} IS NOT NULL)"
        return f"(NOT {spark_name(inner)})"
    if isinstance(e, exp.Is):
        return f"({spark_name(e.this)} IS NULL)"
    if isinstance(e, exp.Neg):
        return f"(- {spark_name(e.this)})"
    if isinstance(e, exp.In):
        return f"({spark_name(e.this)} IN ({', '.join(spark_name(x) for x in e.expressions)}))"
    if isinstance(e, (exp.Cast, exp.TryCast)):
        return f"CAST({spark_name(e.this)} AS {e.to.sql('spark').upper()})"
    if isinstance(e, exp.Ordered):
        order = "DESC" if e.args.get("desc") else "ASC"
        nulls = "NULLS FIRST" if e.args.get("nulls_first") else "NULLS LAST"
        return f"{spark_name(e.this)} {order} {nulls}"
    if isinstance(e, exp.Count):
        arg = e.this
        if arg is None or isinstance(arg, exp.Star):
            return "count(1)"
        if isinstance(arg, exp.Distinct):
            return f"count(DISTINCT {', '.join(spark_name(x) for x in arg.expressions)})"
        return f"count({spark_name(arg)})"
    if isinstance(e, exp.Case):
        parts = ["CASE"] + [f"WHEN {spark_name(i.this)} THEN {spark_name(i.args['true'])}" for i in e.args["ifs"]]
        if e.args.get("default") is not None:
            parts.append(f"ELSE {spark_name(e.args['default'])}")
        return " ".join(parts + ["END"])
    if isinstance(e, exp.Window):
        return f"{spark_name(e.this)} OVER (...)"
    if isinstance(e, exp.Anonymous):
        return f"{e.name}({', '.join(spark_name(x) for x in e.expressions)})"
    if isinstance(e, exp.Func):
        name = e.meta.get("fn") if e._meta else None
        name = name or _FUNC_NAMES.get(e.key, e.key)
        args = [spark_name(a) for a in e.args.values() if isinstance(a, exp.Expression)]
        args += [spark_name(a) for v in e.args.values() if isinstance(v, list) for a in v]
        return f"{name}({', '.join(args)})"
    return e.sql("spark")
