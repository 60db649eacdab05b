"""``pyspark.sql.functions``: JSON, CSV and XML functions, sort-order helpers and the rest of PySpark's Misc Functions.

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__: list[str] = ["typeof", "asc_nulls_first", "asc_nulls_last", "desc_nulls_first", "desc_nulls_last",
                      "current_user", "user", "session_user", "current_database", "current_schema",
                      "current_catalog", "assert_true", "uuid", "call_function", "get_json_object",
                      "json_array_length", "json_object_keys", "schema_of_json", "to_json", "from_json",
                      "years", "months", "days", "hours", "bucket", "to_csv"]


class NotExpectedType(TypeError):
    """PySpark's ``PySparkTypeError`` of class ``NOT_EXPECTED_TYPE``: an argument PySpark
    wants a Column or a column name for was given something else."""

    def getCondition(self) -> str:
        return "NOT_EXPECTED_TYPE"

    getErrorClass = getCondition


def _col(v: Any, param: str = "col") -> sx.Expression:
    """A ``ColumnOrName`` argument: a Column, or a string naming one (anything else is
    PySpark's NOT_EXPECTED_TYPE)."""
    if not isinstance(v, (Column, str)):
        raise NotExpectedType(f"[NOT_EXPECTED_TYPE] Argument `{param}` should be a Column or str, "
                              f"got {type(v).__name__}.")
    return arg(v, "c")


def typeof(col: "Column | str") -> Column:
    """The Spark type of ``col`` as its DDL text (``simpleString``: ``int``, ``decimal(10,2)``, ``array<string>``).

    >>> spark.createDataFrame([(1, 1.5)], "a int, b double").select(F.typeof("a"), F.typeof("b")).first()
    Row(typeof(a)='int', typeof(b)='double')
    """
    return call("typeof", _col(col))


def _ordered(col: "Column | str", how: str) -> Column:
    c = col if isinstance(col, Column) else Column(_col(col))
    return getattr(c, how)()


def asc_nulls_first(col: "Column | str") -> Column:
    """Sort order: ascending, nulls before values (as ``asc``).

    >>> [r.a for r in spark.createDataFrame([(2,), (None,), (1,)], "a int").orderBy(F.asc_nulls_first("a")).collect()]
    [None, 1, 2]
    """
    return _ordered(col, "asc_nulls_first")


def asc_nulls_last(col: "Column | str") -> Column:
    """Sort order: ascending, nulls after values.

    >>> [r.a for r in spark.createDataFrame([(2,), (None,), (1,)], "a int").orderBy(F.asc_nulls_last("a")).collect()]
    [1, 2, None]
    """
    return _ordered(col, "asc_nulls_last")


def desc_nulls_first(col: "Column | str") -> Column:
    """Sort order: descending, nulls before values.

    >>> [r.a for r in spark.createDataFrame([(2,), (None,), (1,)], "a int").orderBy(F.desc_nulls_first("a")).collect()]
    [None, 2, 1]
    """
    return _ordered(col, "desc_nulls_first")


def desc_nulls_last(col: "Column | str") -> Column:
    """Sort order: descending, nulls after values (as ``desc``).

    >>> [r.a for r in spark.createDataFrame([(2,), (None,), (1,)], "a int").orderBy(F.desc_nulls_last("a")).collect()]
    [2, 1, None]
    """
    return _ordered(col, "desc_nulls_last")


def current_user() -> Column:
    """The user running the application (``sc.sparkUser()``), as Spark's ``current_user()``.

    >>> import getpass; spark.range(1).select(F.current_user()).first()[0] == getpass.getuser()
    True
    """
    return call("current_user")


def user() -> Column:
    """The user running the application, as ``current_user`` (named ``user()``).

    >>> spark.range(1).select(F.user()).columns
    ['user()']
    """
    return call("user")


def session_user() -> Column:
    """The user running the application, as ``current_user`` (named ``session_user()``).

    >>> spark.range(1).select(F.session_user()).columns
    ['session_user()']
    """
    return call("session_user")


def current_database() -> Column:
    """The session's current database: ``default``.

    >>> spark.range(1).select(F.current_database()).first()  # Spark names it current_schema()
    Row(current_schema()='default')
    """
    return call("current_database")


def current_schema() -> Column:
    """The session's current database (a schema is a database): ``default``.

    >>> spark.range(1).select(F.current_schema()).first()
    Row(current_schema()='default')
    """
    return call("current_schema")


def current_catalog() -> Column:
    """The session's current catalog: ``spark_catalog``.

    >>> spark.range(1).select(F.current_catalog()).first()
    Row(current_catalog()='spark_catalog')
    """
    return call("current_catalog")


def assert_true(col: "Column | str", errMsg: "Column | str | None" = None) -> Column:
    """Null where ``col`` is true; fails the query (USER_RAISED_EXCEPTION) where it is false or null.

    >>> spark.createDataFrame([(0, 1)], "a int, b int").select(F.assert_true(F.col("a") < F.col("b"))).first()
    Row(assert_true((a < b), '(a < b)' is not true!)=None)
    """
    from strataflow.pyspark.sql.column_names import spark_name

    parts = [_col(col)] + ([] if errMsg is None else [arg(errMsg, "l")])
    shown = parts if errMsg is not None else [parts[0], sx.Literal.string(f"'{spark_name(parts[0])}' is not true!")]
    return call("assert_true", *parts, shown=shown)  # Spark names it with its message


def uuid(seed: "Column | int | None" = None) -> Column:
    """A random universally unique identifier (version 4) as a 36-character string, a new one each
    row (a ``seed`` would need Spark's generator: refused).

    >>> len(spark.range(1).select(F.uuid()).first()[0])
    36
    """
    if seed is not None:
        return _anonymous("uuid", arg(seed, "l"))  # refused: Spark's generator is not DuckDB's
    return call("uuid")


def call_function(funcName: str, *cols: "Column | str") -> Column:
    """The Spark SQL function ``funcName`` applied to ``cols`` (as ``spark.sql`` would call it).

    >>> spark.createDataFrame([(-2,)], "a int").select(F.call_function("abs", "a")).first()
    Row(abs(a)=2)
    """
    import sqlglot

    from strataflow.pyspark.sql.spark_sql_dialect import SparkSQL

    parts = [_col(c, "cols") for c in cols]
    udf = _registered_udf(funcName)
    if udf is not None:  # a function spark.udf.register named
        return udf(*[Column(p) for p in parts])
    holes = ", ".join(f"__arg{i}" for i in range(len(parts)))
    e = sqlglot.parse_one(f"{funcName}({holes})", read=SparkSQL)
    for node in list(e.find_all(sx.Column)):
        if node.name.startswith("__arg"):
            part = parts[int(node.name[5:])]
            if node is e:
                e = part
            else:
                node.replace(part.copy())
    return Column(e)


def _anonymous(name: str, *parts: sx.Expression) -> Column:
    """A call Spark SQL text would make, kept as written (sqlglot rewrites some of these
    calls' arguments, a JSON path into its own tree)."""
    e = sx.Anonymous(this=name, expressions=list(parts))
    e.meta["fn"] = name
    e.meta["call"] = (name, list(parts))
    return Column(e)


def _registered_udf(name: str) -> Any:
    """The UDF the active session registered as ``name`` (``spark.udf.register``), or None."""
    import sys

    module = sys.modules.get("strataflow.pyspark.sql.session")  # loaded where a session exists
    session = module.SparkSession.getActiveSession() if module is not None else None
    return getattr(session, "_udfs", {}).get(name.lower()) if session is not None else None


def get_json_object(col: "Column | str", path: str) -> Column:
    """The value at JSON ``path`` (``$.a.b[0]``) of the JSON text ``col``: a string's own text, an
    object or array as compact JSON; null where the text is not JSON or the path finds nothing.

    >>> df = spark.createDataFrame([('{"a": {"b": [1, "x"]}}',)], "j string")
    >>> df.select(F.get_json_object("j", "$.a"), F.get_json_object("j", "$.a.b[1]").alias("x")).first()
    Row(get_json_object(j, $.a)='{"b":[1,"x"]}', x='x')
    """
    return _anonymous("get_json_object", _col(col), arg(path, "l"))


def json_array_length(col: "Column | str") -> Column:
    """The number of elements of the JSON array ``col`` (null for any other JSON, or text that is not JSON).

    >>> spark.createDataFrame([("[1, [2, 3]]",), ("{}",)], "j string").select(F.json_array_length("j")).collect()
    [Row(json_array_length(j)=2), Row(json_array_length(j)=None)]
    """
    return _anonymous("json_array_length", _col(col))


def json_object_keys(col: "Column | str") -> Column:
    """The field names of the JSON object ``col``, in order (null for any other JSON).

    >>> spark.createDataFrame([('{"b": 1, "a": {"c": 2}}',)], "j string").select(F.json_object_keys("j")).first()
    Row(json_object_keys(j)=['b', 'a'])
    """
    return _anonymous("json_object_keys", _col(col))


def schema_of_json(json: "Column | str", options: "dict[str, str] | None" = None) -> Column:
    """The type Spark infers for the JSON literal ``json``, as DDL (``STRUCT<a: BIGINT>``).

    >>> spark.range(1).select(F.schema_of_json('{"a": [1.5], "b": "x"}').alias("s")).first().s
    'STRUCT<a: ARRAY<DOUBLE>, b: STRING>'
    """
    parts = [arg(json, "l")] + ([] if options is None else [_options(options)])
    return _anonymous("schema_of_json", *parts)


def to_json(col: "Column | str", options: "dict[str, str] | None" = None) -> Column:
    """The struct, array or map ``col`` as compact JSON text, as Spark writes it (a struct's null
    fields left out; timestamps in the session time zone with milliseconds).

    >>> df = spark.createDataFrame([(1, None, [1.5])], "a int, b string, c array<double>")
    >>> df.select(F.to_json(F.struct("a", "b", "c")).alias("j")).first().j
    '{"a":1,"c":[1.5]}'
    """
    parts = [_col(col)] + ([] if options is None else [_options(options)])
    return _anonymous("to_json", *parts)


def from_json(col: "Column | str", schema: Any, options: "dict[str, str] | None" = None) -> Column:
    """The JSON text ``col`` read into ``schema`` (a StructType, ArrayType or MapType, or its DDL text) as
    Spark's PERMISSIVE mode reads it: a field whose value does not fit its type is null.

    >>> df = spark.createDataFrame([('{"a": 1, "b": [1.5]}',), ('{"a": "x"}',), ("not json",)], "j string")
    >>> df.select(F.from_json("j", "a INT, b ARRAY<DOUBLE>").alias("r")).collect()
    [Row(r=Row(a=1, b=[1.5])), Row(r=Row(a=None, b=None)), Row(r=Row(a=None, b=None))]
    """
    from strataflow.pyspark.sql.types import DataType

    if isinstance(schema, DataType):
        schema = schema.simpleString()
    parts = [_col(col), arg(schema, "l")] + ([] if options is None else [_options(options)])
    out = _anonymous("from_json", *parts)
    if isinstance(schema, str) and schema.strip().lower().startswith("map"):
        out._expr.meta["shown"] = "entries"  # Spark's name of from_json into a map
    return out


def to_csv(col: "Column | str", options: "dict[str, str] | None" = None) -> Column:
    """The struct ``col`` as one CSV line, as Spark writes it (a null as nothing, ``""`` for an empty
    string, a value with a comma or quote quoted).

    >>> df = spark.createDataFrame([(1, "a,b", None)], "a int, b string, c string")
    >>> df.select(F.to_csv(F.struct("a", "b", "c")).alias("csv")).first().csv
    '1,"a,b",'
    """
    parts = [_col(col)] + ([] if options is None else [_options(options)])
    return call("to_csv", *parts, shown=parts[:1])


def _options(options: "dict[str, str]") -> sx.Expression:
    """A Python dict of options as Spark's ``map('k', 'v', ...)``."""
    from strataflow.pyspark.sql.column import lit_expr

    return sx.VarMap(keys=sx.Array(expressions=[lit_expr(str(k)) for k in options]),
                     values=sx.Array(expressions=[lit_expr(str(v)) for v in options.values()]))


def _transform(name: str, *parts: sx.Expression) -> Column:
    c = _anonymous(name, *parts)
    c._expr.meta["transform"] = True
    return c


def years(col: "Column | str") -> Column:
    """Partition transform by year of a date or timestamp, for ``writeTo(...).partitionedBy`` only
    (a column of it fails, as in Spark).

    >>> F.years("d")._expr.name
    'years'
    """
    return _transform("years", _col(col))


def months(col: "Column | str") -> Column:
    """Partition transform by month, for ``writeTo(...).partitionedBy`` only.

    >>> F.months("d")._expr.name
    'months'
    """
    return _transform("months", _col(col))


def days(col: "Column | str") -> Column:
    """Partition transform by day, for ``writeTo(...).partitionedBy`` only.

    >>> F.days("d")._expr.name
    'days'
    """
    return _transform("days", _col(col))


def hours(col: "Column | str") -> Column:
    """Partition transform by hour of a timestamp, for ``writeTo(...).partitionedBy`` only.

    >>> F.hours("t")._expr.name
    'hours'
    """
    return _transform("hours", _col(col))


def bucket(numBuckets: "Column | int", col: "Column | str") -> Column:
    """Partition transform into ``numBuckets`` hash buckets, for ``writeTo(...).partitionedBy`` only.

    >>> F.bucket(4, "a")._expr.name
    'bucket'
    """
    if not isinstance(numBuckets, (int, Column)) or isinstance(numBuckets, bool):
        raise NotExpectedType(f"[NOT_COLUMN_OR_INT] Argument `numBuckets` should be a Column or int, "
                              f"got {type(numBuckets).__name__}.")
    return _transform("bucket", arg(numBuckets, "l"), _col(col))
