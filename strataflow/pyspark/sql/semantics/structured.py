"""JSON, CSV and XML functions and the rest of Spark's misc functions as Spark computes them: the
rules of the ``functions.structured`` family (merged by ``registry``).

``typeof`` is known when the plan is made: the Spark type of its argument's Arrow type,
written as Spark's ``simpleString``; so are the session's user, database and catalog.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, typed
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["KEEP", "RULES", "ANONYMOUS", "REFUSE"]


def _constant(text: str) -> exp.Expression:
    lit = exp.Literal.string(text)
    lit.meta["internal"] = True
    return typed(lit, pa.string())


def _typeof(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``typeof(x)``: the argument's Spark type as text, a constant of the plan."""
    from strataflow.pyspark.sql.types import from_arrow

    t = rules.type_of(node.this)
    if t is None:
        raise rules.refuse(node, "the argument's type is not known before it runs", "df.schema or df.dtypes")
    return _constant(from_arrow(t).simpleString())


def _user(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``current_user()``, ``user()``, ``session_user()``: the application's user, as
    ``SparkContext.sparkUser`` (``HADOOP_USER_NAME``, else the OS user)."""
    import getpass
    import os

    return _constant(os.environ.get("HADOOP_USER_NAME") or getpass.getuser())


def _uuid(node: exp.Expression, rules: Rules) -> exp.Expression:
    if node.args.get("this") is not None or isinstance(node, exp.Anonymous) and node.expressions:
        raise rules.refuse(node, "a seed needs Spark's random generator", "uuid() without a seed")
    return typed(fill("CAST(gen_random_uuid() AS VARCHAR)"), pa.string())


def _assert_true(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``assert_true(c[, msg])``: null where ``c`` is true, else the query fails with
    USER_RAISED_EXCEPTION (``'<c>' is not true!`` without a message), null ``c`` included."""
    from strataflow.pyspark.sql.column_names import spark_name

    args = node.expressions
    cond = args[0]
    if len(args) == 1 and not (node._meta and node.meta.get("call")):
        raise rules.refuse(node, "Spark names the column of Spark SQL text's assert_true with its default message",
                           "F.assert_true(col), or assert_true(cond, message)")
    if len(args) > 1:
        msg = fill("'[USER_RAISED_EXCEPTION] ' || coalesce(CAST({m} AS VARCHAR), 'null')", m=args[1])
    else:
        shown = node.meta["call"][1][0]
        text = f"'{spark_name(shown)}' is not true!".replace("'", "''")
        msg = fill(f"'[USER_RAISED_EXCEPTION] {text}'")
    return fill("CASE WHEN {c} THEN NULL ELSE error({m}) END", c=cond, m=msg)


def _udf(func: Any, return_type: str, *args: exp.Expression) -> exp.Expression:
    """A call of the Python function ``func`` (row by row, None for null) on ``args``."""
    from strataflow.pyspark.sql.column import Column
    from strataflow.pyspark.sql.udf import UserDefinedFunction

    return UserDefinedFunction(func, return_type)(*[Column(a) for a in args])._expr


def _literal_text(node: exp.Expression, what: str, e: exp.Expression | None, rules: Rules) -> str:
    if isinstance(e, exp.Literal) and e.is_string:
        return e.this
    raise rules.refuse(node, f"{what} that is not a literal string", f"a literal {what}")


def _path_steps(node: exp.Expression, rules: Rules) -> list | None:
    """The steps of ``get_json_object``'s path, from its text (the ``functions`` form keeps
    it; the Spark SQL parser rewrites it into a tree of its own, whose column name and
    reading of a path without ``$`` are not Spark's)."""
    from strataflow.pyspark.sql.semantics.json_values import parse_path

    if not isinstance(node, exp.Anonymous):
        raise rules.refuse(node, "the SQL parser rewrites the JSON path of Spark SQL text (Spark's column name and "
                           "its reading of a path without '$' would differ)", "F.get_json_object(col, path)")
    return parse_path(_literal_text(node, "JSON path", node.expressions[1], rules))


def _get_json_object(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``get_json_object(json, path)``: a string's text, other values as compact JSON
    (numbers as Java writes them), null where the text is not JSON or the path finds nothing."""
    from strataflow.pyspark.sql.semantics import json_values

    steps = _path_steps(node, rules)
    if steps is not None and "*" in steps:
        raise rules.refuse(node, "a wildcard in the JSON path", "from_json with a schema, then explode")
    text = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    return _udf(lambda j: json_values.get_json_object(j, steps), "string", text)


def _json_array_length(node: exp.Expression, rules: Rules) -> exp.Expression:
    from strataflow.pyspark.sql.semantics import json_values

    text = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    return _udf(json_values.json_array_length, "int", text)


def _json_object_keys(node: exp.Expression, rules: Rules) -> exp.Expression:
    from strataflow.pyspark.sql.semantics import json_values

    text = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    return _udf(json_values.json_object_keys, "array<string>", text)


def _schema_of_json(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``schema_of_json(text)``: the type Spark infers for one JSON literal, as DDL (a
    constant of the plan)."""
    from strataflow.pyspark.sql.semantics.json_values import infer_ddl

    if len(node.expressions) > 1:
        raise rules.refuse(node, "options", "schema_of_json(json) without options")
    text = _literal_text(node, "JSON text", node.expressions[0], rules)
    ddl = infer_ddl(text)
    if ddl is None:
        raise rules.refuse(node, "text that is not one JSON value", "a literal JSON value")
    return _constant(ddl)


def _options(node: exp.Expression, opts: exp.Expression | None, known: dict, rules: Rules) -> dict:
    """The options map (``map('k', 'v', ...)``) as a dict of lower-cased names; an option
    not in ``known`` (name -> the values read as Spark, None: any), or a value not literal, is refused."""
    if opts is None:
        return {}
    pairs = _constant_map(opts)
    if pairs is None:
        raise rules.refuse(node, "options that are not a literal map", "a dict of literal options")
    out = {}
    for key, val in pairs:
        name, value = str(key).lower(), str(val).lower()
        allowed = {a.lower(): vs for a, vs in known.items()}
        if name not in allowed or allowed[name] is not None and value not in allowed[name]:
            raise rules.refuse(node, f"the option {key}={val}", f"options it reads: {', '.join(known)}")
        out[name] = value
    return out


def _constant_map(opts: exp.Expression) -> list | None:
    """The (key, value) pairs of a map of literals (``map('k', 'v')``, as written or as the
    maps family rewrote it), evaluated when the plan is made; None where it reads a column."""
    if isinstance(opts, exp.VarMap):
        keys, values = opts.args["keys"].expressions, opts.args["values"].expressions
        if all(isinstance(x, (exp.Literal, exp.Boolean)) for x in keys + values):
            return [(k.this, v.this) for k, v in zip(keys, values)]
    if any(isinstance(n, exp.Column) for n in opts.walk()):
        return None
    from strataflow.pyspark.sql.dialect import to_sql
    from strataflow.pyspark.sql.engine import run_query

    try:
        got = run_query(to_sql(exp.select(opts.copy())), {}).column(0)[0].as_py()
    except Exception:  # noqa: BLE001 - not a constant map: refused by the caller
        return None
    return list(got.items()) if isinstance(got, dict) else got


def _to_json(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``to_json(struct | array | map)``: compact JSON as Spark's Jackson writes it (see
    ``json_values.writer``); options are refused."""
    from strataflow.pyspark.sql.semantics.json_values import writer

    args = node.expressions if isinstance(node, exp.Anonymous) else [node.this, node.args.get("options")]
    opts = _options(node, args[1] if len(args) > 1 else None, {"ignoreNullFields": ("true", "false")}, rules)
    t = rules.type_of(args[0])
    if t is None or not (pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_map(t)):
        raise rules.refuse(node, "an argument that is not a struct, array or map", "a struct of the columns")
    w = writer(t, rules.conf.tz, opts.get("ignorenullfields", "true") == "true")
    if w is None:
        raise rules.refuse(node, "a field of a type it does not write as Spark", "cast the field to string first")
    return _udf(lambda v: None if v is None else w(v), "string", args[0])


def _to_csv(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``to_csv(struct)``: one CSV line as Spark's writer makes it (``csv_values``); options refused."""
    from strataflow.pyspark.sql.semantics.csv_values import csv_writer

    args = node.expressions
    _options(node, args[1] if len(args) > 1 else None, {}, rules)
    t = rules.type_of(args[0])
    if t is None or not pa.types.is_struct(t):
        raise rules.refuse(node, "an argument that is not a struct", "to_csv(struct(...))")
    w = csv_writer(t, rules.conf.tz)
    if w is None:
        raise rules.refuse(node, "a field that is not of an atomic type it writes as Spark", "cast it to string")
    return _udf(lambda v: None if v is None else w(v), "string", args[0])


def _schema(node: exp.Expression, e: exp.Expression, rules: Rules) -> Any:
    """A schema argument (DDL text: ``a INT, b STRING`` or ``struct<...>``, ``array<...>``, ``map<...>``)."""
    from strataflow.pyspark.sql import types as T

    text = _literal_text(node, "schema", e, rules).strip()
    try:
        if re.match(r"(?i)(struct|array|map)\s*<", text) or " " not in text and ":" not in text:
            return T._parse_type(text)
        return T._parse_ddl(text)
    except Exception as exc:  # noqa: BLE001 - Spark's parse error, named
        from strataflow.pyspark.errors import AnalysisException

        raise AnalysisException(f"[PARSE_SYNTAX_ERROR] the schema {text!r} is not a DDL type: {exc}",
                                "PARSE_SYNTAX_ERROR") from None


def _from_json(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``from_json(text, schema)``: the JSON text read into ``schema`` as Spark's PERMISSIVE
    mode reads it (``json_reader``); options are refused."""
    from strataflow.pyspark.sql import types as T
    from strataflow.pyspark.sql.semantics.json_reader import Unreadable, reader

    args = node.expressions if isinstance(node, exp.Anonymous) else [node.this, node.expression,
                                                                       node.args.get("options")]
    _options(node, args[2] if len(args) > 2 else None, {"mode": ("permissive",)}, rules)
    dt = _schema(node, args[1], rules)
    if not isinstance(dt, (T.StructType, T.ArrayType, T.MapType)):
        from strataflow.pyspark.errors import AnalysisException

        raise AnalysisException(f"[DATATYPE_MISMATCH.INVALID_JSON_SCHEMA] Input schema \"{dt.simpleString()}\" must "
                                "be a struct, an array, a map or a variant.", "DATATYPE_MISMATCH")
    try:
        read = reader(dt)
    except Unreadable as exc:
        raise rules.refuse(node, str(exc), "read the field as a string, then cast or parse it") from None
    if isinstance(dt, T.MapType) and not (node._meta and node.meta.get("shown") == "entries"):
        raise rules.refuse(node, "Spark names the column of Spark SQL text's from_json into a map 'entries'",
                           "F.from_json(col, 'map<...>'), or an alias")
    return _udf(read, dt, args[0])


def _transform(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``years``, ``months``, ``days``, ``hours``, ``bucket``: partition transforms, which Spark
    accepts only in ``writeTo(...).partitionedBy``: a column of them fails in the JVM
    (``functions``), and Spark SQL text has no such function."""
    from strataflow.pyspark.errors import AnalysisException, Py4JJavaError

    name = str(node.name).lower()
    if node._meta and node.meta.get("transform"):
        raise Py4JJavaError(f"{name}(...) is a partition transform: Spark runs it only in "
                            "DataFrameWriterV2.partitionedBy, not as a column")
    raise AnalysisException(f"[UNRESOLVED_ROUTINE] Cannot resolve routine `{name}` on search path "
                            "[`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`].",
                            "UNRESOLVED_ROUTINE")


#: kinds whose DuckDB answer the suite found equal to Spark's
KEEP: frozenset[type] = frozenset()
#: kinds rewritten to Spark's meaning
RULES: dict = {
    exp.Typeof: _typeof, exp.CurrentUser: _user, exp.SessionUser: _user, exp.Uuid: _uuid,
    exp.CurrentDatabase: lambda node, rules: _constant("default"),
    exp.CurrentSchema: lambda node, rules: _constant("default"),
    exp.CurrentCatalog: lambda node, rules: _constant("spark_catalog"),
    exp.JSONExtractScalar: _get_json_object, exp.JSONKeys: _json_object_keys, exp.JSONFormat: _to_json,
    exp.FromJson: _from_json,
}
#: Anonymous functions (no sqlglot kind) by name: rules
ANONYMOUS: dict = {"user": _user, "assert_true": _assert_true, "get_json_object": _get_json_object,
                   "json_array_length": _json_array_length, "json_object_keys": _json_object_keys,
                   "schema_of_json": _schema_of_json, "to_json": _to_json,
                   "from_json": _from_json,
                   "uuid": _uuid, "to_csv": _to_csv,
                   **{name: _transform for name in ("years", "months", "days", "hours", "bucket")}}
#: kinds refused: (why, instead)
REFUSE: dict[type, tuple[str, str]] = {}
