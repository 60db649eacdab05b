"""The names Spark gives unnamed columns: ``spark_name`` of an expression's syntax tree.

Programs read results by these names (``row["sum(x)"]``, ``df.select(df.a + 1).columns``),
so they follow Spark's rules (its ``usePrettyExpression``): a column is its own name
without the DataFrame it came from, an operator is parenthesised (``(a + 1)``), a literal
is its value (a string without quotes, a date ``DATE '2023-01-01'``, NaN ``NaN``), a
struct's field is ``r.b`` and an array's element or a map's value ``l[0]`` / ``d[key]``.

A struct's field and a map's value are both written ``x.key`` in Python (``df.d.key``);
which one it is depends on the column's type, so ``spark_name(e, fields=...)``, given the
DataFrame's fields, names a map's value ``d[key]`` and a struct's field ``r.b`` whichever
way it was written.

The trees whose names need care live here too: ``lit_expr`` (a Python value's literal,
marked so that it is named as Spark names it), ``isnan_expr``, and ``dropFields``' marker,
which ``expand_struct_ops`` writes out once the struct's type is known (the DataFrame's
fields, at resolution). This module imports nothing of strataflow's, so that ``column``
and ``resolve`` may both import it.
"""

from __future__ import annotations

from typing import Any, Sequence

from sqlglot import exp

__all__ = ["spark_name", "literal_name", "lit_expr", "isnan_expr", "drop_fields_expr", "expand_struct_ops", "LITERAL", "pretty_name"]

#: the meta key that marks a tree made from a Python value (``lit``), named as Spark names literals
LITERAL = "literal"

_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=", exp.LT: "<",
        exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.And: "AND", exp.Or: "OR", exp.NullSafeEQ: "<=>",
        exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^"}
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


def _tagged(e: exp.Expression) -> exp.Expression:
    e.meta[LITERAL] = True  # named as Spark names the literal (DATE '2023-01-01', NaN), not as a cast
    return e


def lit_expr(value: Any) -> exp.Expression:
    """A literal's syntax tree (None is NULL; dates, timestamps and decimals typed as Spark's)."""
    import datetime as dt
    import decimal

    if isinstance(getattr(value, "_expr", None), exp.Expression):  # a Column
        return value._expr
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            text = "NaN" if value != value else str(value).replace("inf", "Infinity")
            return _tagged(exp.cast(exp.Literal.string(text), "DOUBLE"))
        if isinstance(value, float):  # a double, as PySpark's lit(0.5): 0.5 written alone is a decimal
            return _tagged(exp.cast(exp.Literal.string(java_double_text(value)), "DOUBLE"))
        return exp.Literal.number(value)
    if isinstance(value, decimal.Decimal):
        return _tagged(exp.cast(exp.Literal.string(str(value)), f"DECIMAL(38,{max(0, -value.as_tuple().exponent)})"))
    if isinstance(value, dt.datetime):
        return _tagged(exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP"))
    if isinstance(value, dt.date):
        return _tagged(exp.cast(exp.Literal.string(value.isoformat()), "DATE"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[lit_expr(v) for v in value])
    raise TypeError(f"lit: unsupported literal type {type(value).__name__} ({value!r})")


def java_double_text(v: float) -> str:
    """Java's ``Double.toString``, as Spark names a double literal: plain digits from 10^-3
    to 10^7 (``0.5``, ``2.0``), else ``d.dddE<n>`` (``1.0E20``, ``1.0E-4``)."""
    import decimal

    if v == 0 or 1e-3 <= abs(v) < 1e7:
        return repr(v)
    sign, digits, exponent = decimal.Decimal(repr(v)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent + len(digits) - 1}"


def isnan_expr(e: exp.Expression) -> exp.Expression:
    """Spark's ``isnan(e)``: true for NaN, false for anything else, null included (DuckDB's
    ``isnan`` is null there), named ``isnan(e)``."""
    guard = exp.Coalesce(this=exp.IsNan(this=e), expressions=[exp.false()])
    guard.meta["name_of_this"] = True
    return guard


def literal_name(e: exp.Expression) -> str | None:
    """Spark's name for a literal made from a Python value, or None if ``e`` is not one."""
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return f"-{e.this.this}"  # -1, as Spark's parser and lit(-1) give it (not (- 1))
    if not (e._meta and e.meta.get(LITERAL)):
        return None
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        text, kind = e.this.this, e.to.this
        if kind == exp.DataType.Type.DATE:
            return f"DATE '{text}'"
        if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
            return f"TIMESTAMP '{text}'"
        return text  # NaN, Infinity, -Infinity, a decimal's digits
    return None


#: the names Spark shows in capitals (their ``prettyName``), by the name called
_PRETTY = {"regexp": "REGEXP", "regexp_like": "REGEXP_LIKE",
           "power": "POWER", "ceil": "CEIL", "floor": "FLOOR", "sqrt": "SQRT", "log10": "LOG10", "log2": "LOG2",
           "exp": "EXP", "cos": "COS", "sin": "SIN", "tan": "TAN", "degrees": "DEGREES", "radians": "RADIANS",
           "cbrt": "CBRT", "signum": "SIGNUM", "rlike": "RLIKE",
           "array_agg": "collect_list",
           "acos": "ACOS", "asin": "ASIN", "atan": "ATAN", "atan2": "ATAN2", "acosh": "ACOSH", "asinh": "ASINH",
           "atanh": "ATANH", "cosh": "COSH", "sinh": "SINH", "tanh": "TANH", "cot": "COT", "csc": "CSC", "sec": "SEC",
           "expm1": "EXPM1", "log1p": "LOG1P", "hypot": "HYPOT", "e": "E", "pi": "PI", "log": "LOG",
           "current_database": "current_schema", "dateadd": "date_add", "curdate": "current_date"}
#: the arguments Spark shows where the call left them out
_DEFAULTS = {"position": [None, None, "1"], "regexp_instr": [None, None, "0"], "regexp_extract_all": [None, None, "1"],
             "substr": [None, None, "2147483647"], "substring": [None, None, "2147483647"], "overlay": [None, None, None, "-1"], "mask": [None, "X", "x", "n", "NULL"],
             "round": [None, "0"], "bround": [None, "0"], "regexp_replace": [None, None, None, "1"],
             "split": [None, None, "-1"], "months_between": [None, None, "true"], "replace": [None, None, ""],
             "sort_array": [None, "true"], "from_unixtime": [None, "yyyy-MM-dd HH:mm:ss"],
             "to_unix_timestamp": [None, "yyyy-MM-dd HH:mm:ss"],
             "aggregate": [None, None, None, "lambdafunction(namedlambdavariable(), namedlambdavariable())"],
             "reduce": [None, None, None, "lambdafunction(namedlambdavariable(), namedlambdavariable())"],
             "array_sort": [None, "lambdafunction((IF(((namedlambdavariable() IS NULL) AND (namedlambdavariable() IS NULL)), 0, (IF((namedlambdavariable() IS NULL), 1, (IF((namedlambdavariable() IS NULL), -1, (IF((namedlambdavariable() < namedlambdavariable()), -1, (IF((namedlambdavariable() > namedlambdavariable()), 1, 0)))))))))), namedlambdavariable(), namedlambdavariable())"]}
_UNIT_WORDS = {"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"}
#: SQL-text calls sqlglot builds without their written name
_CLASS_NAMES = {exp.StrPosition: "position", exp.Overlay: "overlay", exp.Substring: "substring", exp.ArgMin: "min_by", exp.ArgMax: "max_by", exp.Lambda: "lambdafunction", exp.Identifier: "namedlambdavariable"}
#: how many arguments Spark shows (sqlglot adds some of its own)
_SHOWN = {"sort_array": 2, "log10": 1, "log2": 1, "ln": 1, "first": 1, "last": 1, "date_add": 2, "date_sub": 2,
          "dateadd": 2,
          "mode": 1, "from_json": 1, "to_json": 1,
          "schema_of_json": 1}
#: SQL-text calls whose node keeps its arguments in another order than Spark's
_SQL_ORDER = {"timestampadd": ("unit", "expression", "this"), "timestampdiff": ("unit", "expression", "this"),
              "locate": ("substr", "this", "position"), "position": ("substr", "this", "position"),
              "instr": ("this", "substr"), "trunc": ("this", "unit"), "date_trunc": ("unit", "this"),
              "log10": ("expression",), "log2": ("expression",), "array_sort": ("this", "expression")}


def call_name(e: exp.Expression, n: Any) -> str | None:
    """Spark's name of a function call as the program wrote it: ``functions`` keep the
    call (``meta["call"]``: name and arguments), Spark SQL text keeps the written name
    (``spark_sql_dialect``); None for a node made some other way."""
    if not e._meta and type(e) not in _CLASS_NAMES:
        return None
    call = e.meta.get("call")
    if call is not None:
        name, args = call
        shown = [n(a) for a in args]
    elif (e.meta.get("written") or type(e) in _CLASS_NAMES) and not isinstance(e, (exp.Anonymous, exp.VarMap)):
        name = str(e.meta.get("written") or _CLASS_NAMES[type(e)]).lower()
        order = _SQL_ORDER.get(name)
        if isinstance(e, exp.IgnoreNulls):  # first(x, true): shown as first(x)
            e = e.this
        parts = [e.args.get(k) for k in order] if order else list(e.args.values())
        parts = [a for a in parts if not isinstance(a, exp.DataType)]
        shown = [n(_as_written(a)) for a in parts if isinstance(a, exp.Expression)]
        if name in ("trunc", "date_trunc"):  # sqlglot writes a unit word in capitals
            shown = [x.lower() if x in _UNIT_WORDS else x for x in shown]
        if name in _PATTERN_CALLS:  # sqlglot turns a Spark pattern into strftime letters: back again
            shown = [_spark_pattern_text(x) if "%" in x else x for x in shown]
        shown += [n(_as_written(a)) for v in (parts if not order else []) if isinstance(v, list) for a in v]
    else:
        return None
    defaults = _DEFAULTS.get(name)
    if defaults and len(shown) < len(defaults):
        shown += [d if d is not None else "" for d in defaults[len(shown):]]
        if name in ("round", "bround") and len(shown) > 2:
            shown = shown[:2]
    shown = shown[:_SHOWN.get(name, len(shown))]
    if name == "isnull":
        return f"({shown[0]} IS NULL)"
    if name == "like" and len(shown) == 2:
        return f"{shown[0]} LIKE {shown[1]}"
    if name in ("date_add", "date_sub") and call is None and isinstance(e.expression, exp.Mul):
        shown = [shown[0], n(e.expression.this)]  # sqlglot's date_sub(d, n) is date_add(d, n * -1)
    if name in ("explode", "explode_outer"):  # a generator's output is named by the generator, not the call
        return "col"
    return f"{_PRETTY.get(name, name)}({', '.join(shown)})"


def pretty_name(written: str) -> str:
    """Spark's name of a function Spark SQL text calls ``written``: names are case-blind, so
    Spark shows its own spelling, the ``prettyName`` (``EXPM1``, ``E``, ``HYPOT``), else the
    name in lower case (``shiftRightUnsigned(x, 1)`` is ``shiftrightunsigned(x, 1)``)."""
    low = written.lower()
    pretty = _PRETTY.get(low, low)
    return pretty if pretty.lower() == low else low


_PATTERN_CALLS = {"date_format", "from_unixtime", "to_date", "to_timestamp", "unix_timestamp"}


def _spark_pattern_text(text: str) -> str:
    from sqlglot.dialects.spark import Spark
    from sqlglot.time import format_time

    spark = Spark()
    return format_time(text, spark.INVERSE_TIME_MAPPING, spark.INVERSE_TIME_TRIE) or text


def _as_written(a: exp.Expression) -> exp.Expression:
    """An argument as the SQL text had it: sqlglot wraps some in a conversion of its own
    (``to_date(x)`` inside ``year(x)``) and writes a unit as an upper-case variable."""
    if isinstance(a, (exp.TsOrDsToDate, exp.TsOrDsToTimestamp, exp.TimeStrToTime)) and not a.args.get("format") \
            and not (a._meta and a.meta.get("written")):
        return a.this
    if isinstance(a, exp.Var):
        return exp.var(a.name.lower())
    return a


def spark_name(e: exp.Expression, aliases: bool = True, fields: Sequence[Any] | None = None) -> str:
    """The name Spark gives the column an expression makes (its alias if it has one).

    ``fields`` (the DataFrame's ``resolve.Field`` list), when given, tells a map's value
    (``d[key]``) from a struct's field (``r.b``) where the expression does not.

    >>> from strataflow.pyspark.sql import functions as F
    >>> spark_name((F.col("a") + 1)._expr), spark_name(F.col("age").between(2, 4)._expr)
    ('(a + 1)', '((age >= 2) AND (age <= 4))')
    """
    return _Namer(fields).name(e, aliases)


class _Namer:
    def __init__(self, fields: Sequence[Any] | None) -> None:
        self.fields = fields

    def name(self, e: exp.Expression, aliases: bool = False) -> str:  # noqa: C901 - one case per node kind
        n = self.name
        if isinstance(e, exp.Alias):
            return e.alias if aliases else n(e.this)
        if e._meta and e.meta.get("shown"):  # a tree written out for another (dropFields)
            return e.meta["shown"]
        if e._meta and e.meta.get("name_of_this"):  # a wrapper Spark does not show (isNaN's null guard)
            return n(e.this)
        if e._meta and e.meta.get("with_field"):  # withField's CASE WHEN s IS NULL ... STRUCT_UPDATE(s, f := v)
            update = e.args["default"]
            base, value = update.expressions[0], update.expressions[1].expression
            return f"update_fields({n(base)}, WithField({e.meta['with_field']}, {n(value)}))"
        called = call_name(e, n)
        if called is not None:
            return called
        lit = literal_name(e)
        if lit is not None:
            return lit
        if isinstance(e, exp.Column):
            return e.name if not isinstance(e.this, exp.Star) else "*"
        if isinstance(e, exp.Star):
            return "*"
        if isinstance(e, exp.Paren):
            return n(e.this)
        if isinstance(e, exp.Literal):
            return e.this
        if isinstance(e, exp.Null):
            return "NULL"
        if isinstance(e, exp.Boolean):
            return str(e.this).lower()
        if isinstance(e, exp.Dot):
            return self._extract(e.this, e.expression, struct_style=True)
        if isinstance(e, exp.Bracket):
            return self._extract(e.this, e.expressions[0], struct_style=False)
        if isinstance(e, exp.NEQ):
            return f"(NOT ({n(e.this)} = {n(e.expression)}))"
        if type(e) in _OPS:
            return f"({n(e.this)} {_OPS[type(e)]} {n(e.expression)})"
        if isinstance(e, exp.Not):
            inner = e.this.this if isinstance(e.this, exp.Paren) else e.this
            if isinstance(inner, exp.Is):
                return f"({n(inner.this)} IS NOT NULL)"
            return f"(NOT {n(inner)})"
        if isinstance(e, exp.Is):
            return f"({n(e.this)} IS NULL)"
        if isinstance(e, exp.Neg):
            return f"(- {n(e.this)})"
        if isinstance(e, exp.In):
            return f"({n(e.this)} IN ({', '.join(n(x) for x in e.expressions)}))"
        if isinstance(e, exp.Between):
            return f"(({n(e.this)} >= {n(e.args['low'])}) AND ({n(e.this)} <= {n(e.args['high'])}))"
        if isinstance(e, (exp.Cast, exp.TryCast)):
            if (e._meta and e.meta.get("try_cast")) or (isinstance(e.this, exp.Column) and not e.this.table
                                                       or isinstance(e.this, exp.Column) and
                                                       e.this.table.startswith("__df")):
                return n(e.this)  # a column cast keeps its name, as Spark's (so does try_cast(x) in Spark 4)
            cast = "TRY_CAST" if isinstance(e, exp.TryCast) and e.args.get("safe") else "CAST"  # as written
            return f"{cast}({n(e.this)} AS {e.to.sql('spark').upper()})"
        if isinstance(e, exp.Ordered):
            order = "DESC" if e.args.get("desc") else "ASC"
            nulls = "NULLS FIRST" if e.args.get("nulls_first") else "NULLS LAST"
            return f"{n(e.this)} {order} {nulls}"
        if isinstance(e, exp.Count):
            arg = e.this
            if arg is None or isinstance(arg, exp.Star):
                return "count(1)"
            if isinstance(arg, exp.Distinct):
                return f"count(DISTINCT {', '.join(n(x) for x in arg.expressions)})"
            return f"count({n(arg)})"
        if isinstance(e, exp.Case):
            parts = ["CASE"] + [f"WHEN {n(i.this)} THEN {n(i.args['true'])}" for i in e.args["ifs"]]
            if e.args.get("default") is not None:
                parts.append(f"ELSE {n(e.args['default'])}")
            return " ".join(parts + ["END"])
        if isinstance(e, exp.Window):
            return f"{n(e.this)} OVER (...)"
        if isinstance(e, exp.VarMap):  # create_map(k1, v1, ...): Spark names it map(k1, v1, ...)
            pairs = zip(e.args["keys"].expressions, e.args["values"].expressions)
            return f"map({', '.join(n(x) for kv in pairs for x in kv)})"
        if isinstance(e, exp.PropertyEQ):  # struct(a, b), not struct(a := a, b := b); named_struct('x', a): x, a
            named = e.parent is not None and e.parent.meta.get("written") == "named_struct"
            return (f"{e.this.name}, " if named else "") + n(e.expression)
        if isinstance(e, exp.IgnoreNulls):
            return n(e.this)  # Spark's name of first(x, true) is first(x)
        if isinstance(e, exp.Like) and not e.args.get("escape"):
            return f"{n(e.this)} LIKE {n(e.expression)}"
        if isinstance(e, exp.ILike):
            return f"ilike({n(e.this)}, {n(e.expression)})"
        if isinstance(e, exp.Distinct):
            return "DISTINCT " + ", ".join(n(x) for x in e.expressions)
        if isinstance(e, exp.Anonymous):
            name = (e.meta.get("fn") if e._meta else None) or e.name
            shown = [n(x) for x in e.expressions]
            defaults = _DEFAULTS.get(str(name).lower())
            if defaults and len(shown) < len(defaults):
                shown += [d if d is not None else "" for d in defaults[len(shown):]]
            if str(name).lower() == "isnull" and len(shown) == 1:
                return f"({shown[0]} IS NULL)"
            return f"{name}({', '.join(shown)})"
        if isinstance(e, exp.Func):
            name = e.meta.get("fn") if e._meta else None
            name = name or _FUNC_NAMES.get(e.key, e.key)
            args = [n(a) for a in e.args.values() if isinstance(a, exp.Expression)]
            args += [n(a) for v in e.args.values() if isinstance(v, list) for a in v]
            return f"{name}({', '.join(args)})"
        return e.sql("spark")

    # -- a struct's field, an array's element, a map's value -------------------------------------------------
    def _extract(self, base: exp.Expression, key: exp.Expression, struct_style: bool) -> str:
        kind = self._kind(base)
        key_name = key.name if isinstance(key, exp.Identifier) else self.name(key)
        if kind == "struct" or (kind is None and struct_style):
            return f"{self.name(base)}.{key_name}"
        return f"{self.name(base)}[{key_name}]"

    def _kind(self, base: exp.Expression) -> str | None:
        """'struct', 'map', 'list' or None (not known): the type of ``base``, from the fields."""
        t = self._type(base)
        if t is None:
            return None
        import pyarrow as pa

        if pa.types.is_struct(t):
            return "struct"
        if pa.types.is_map(t):
            return "map"
        return "list" if pa.types.is_list(t) or pa.types.is_large_list(t) else None

    def _type(self, e: exp.Expression) -> Any:
        import pyarrow as pa

        if self.fields is None:
            return None
        if isinstance(e, exp.Paren):
            return self._type(e.this)
        if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
            return self._column_type(e.name, e.table)
        if isinstance(e, (exp.Dot, exp.Bracket)):
            t = self._type(e.this)
            if t is None:
                return None
            if pa.types.is_struct(t):
                key = e.expression if isinstance(e, exp.Dot) else e.expressions[0]
                return _field_type(t, key.name if isinstance(key, (exp.Identifier, exp.Literal)) else "")
            if pa.types.is_map(t):
                return t.item_type
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                return t.value_type
        return None

    def _column_type(self, name: str, table: str) -> Any:
        """The type of column ``table.name`` (as ``resolve.lookup`` finds it; ``s.b`` where ``s``
        is no DataFrame's name: field ``b`` of struct column ``s``), None if not one column."""
        fields = list(self.fields or ())
        hits = [f for f in fields if f.name.lower() == name.lower()]
        if table:
            tag: Any = int(table[4:]) if table.startswith("__df") and table[4:].isdigit() else table
            tagged = [f for f in hits if tag in f.origins or (isinstance(tag, str) and tag.lower() in
                                                               {str(o).lower() for o in f.origins})]
            if not tagged and not table.startswith("__df"):
                base = [f for f in fields if f.name.lower() == table.lower()]
                return _field_type(base[0].type, name) if len(base) == 1 else None
            hits = tagged
        return hits[0].type if len(hits) == 1 else None


def _field_type(t: Any, name: str) -> Any:
    """The type of struct type ``t``'s field ``name`` (matched without regard to case), or None."""
    import pyarrow as pa

    if not pa.types.is_struct(t):
        return None
    hit = [t.field(i).type for i in range(t.num_fields) if t.field(i).name.lower() == name.lower()]
    return hit[0] if hit else None


def drop_fields_expr(base: exp.Expression, names: Sequence[str]) -> exp.Expression:
    """The tree ``Column.dropFields`` makes: a marker that ``expand_struct_ops`` turns into a
    struct of the remaining fields once the struct's type is known (at resolution)."""
    e = exp.Anonymous(this="DROP_FIELDS", expressions=[base] + [exp.Literal.string(n) for n in names])
    e.meta["drop_fields"] = True
    return e


def expand_struct_ops(e: exp.Expression, fields: Sequence[Any]) -> exp.Expression:
    """``e`` with each ``dropFields`` marker written out, given the DataFrame's fields (as
    ``resolve.Field``, logical names): ``CASE WHEN s IS NULL THEN NULL ELSE STRUCT_PACK(c := s.c,
    ...) END``. A name no field has drops nothing; dropping every field is an error, as Spark's.

    >>> from strataflow.pyspark.sql.column import Column
    >>> df = spark.createDataFrame([(Row(b=1, c=2, d=Row(f=3, g=4)),)], ["a"])
    >>> c = F.col("a").dropFields("b", "d.g")
    >>> df.select(Column(expand_struct_ops(c._expr, df._current.fields)).alias("a")).first().a
    Row(c=2, d=Row(f=3))
    """
    markers = [m for m in e.find_all(exp.Anonymous) if m._meta and m.meta.get("drop_fields")]
    if not markers:
        return e
    e = e.copy()
    namer = _Namer(fields)
    for m in reversed([m for m in e.find_all(exp.Anonymous) if m._meta and m.meta.get("drop_fields")]):
        base, names = m.expressions[0], [x.this for x in m.expressions[1:]]
        new = _dropped(namer, base, [n.split(".") for n in names])
        new.meta["shown"] = f"update_fields({namer.name(base)}, {', '.join(f'dropfield({n})' for n in names)})"
        if m is e:
            return new
        m.replace(new)
    return e


def _dropped(namer: "_Namer", base: exp.Expression, paths: list[list[str]]) -> exp.Expression:
    import pyarrow as pa

    t = namer._type(base)
    if t is None or not pa.types.is_struct(t):
        raise TypeError(f"dropFields: {namer.name(base)} is not a struct column of this DataFrame "
                        "(dropFields needs a column or a struct's field, whose type is known)")
    kept = []
    for i in range(t.num_fields):
        f = t.field(i)
        mine = [p[1:] for p in paths if p[0].lower() == f.name.lower()]
        if any(not rest for rest in mine):
            continue
        value: exp.Expression = exp.Dot(this=base.copy(), expression=exp.to_identifier(f.name, quoted=True))
        if mine and pa.types.is_struct(f.type):
            value = _dropped(namer, value, mine)
        kept.append(exp.PropertyEQ(this=exp.to_identifier(f.name, quoted=True), expression=value))
    if not kept:
        raise ValueError(f"[CANNOT_DROP_ALL_FIELDS] Cannot drop all fields in struct {namer.name(base)}.")
    return exp.Case(ifs=[exp.If(this=exp.Is(this=base.copy(), expression=exp.Null()), true=exp.Null())],
                    default=exp.Anonymous(this="STRUCT_PACK", expressions=kept))
