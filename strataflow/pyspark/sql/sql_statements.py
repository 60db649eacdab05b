"""``spark.sql``: the statements it takes (a query, ``CREATE [OR REPLACE] TEMP VIEW``,
``DROP VIEW``/``TABLE``, ``SHOW TABLES``, ``SET``/``RESET``) and what every query goes through before it
is planned: the result's names as Spark gives them, ``range(...)`` as a table,
``global_temp.`` views, and sqlglot's optimizer (``sql_query.py`` plans the result).
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql.sql_query import query_frame
from strataflow.pyspark.sql.spark_sql_dialect import SparkSQL

__all__ = ["run_sql"]


def run_sql(session: Any, text: str, args: Any = None, kwargs: dict | None = None) -> Any:
    made: list[str] = []
    if kwargs:
        text = _formatted(session, text, kwargs, made)
    if " ".join(text.split()).upper().rstrip(";") == "SHOW TABLES":
        return _show_tables(session)
    setting = _SET.fullmatch(text)
    if setting is not None:
        return _set(session, setting)
    try:
        tree = sqlglot.parse_one(text, read=SparkSQL)
    except sqlglot.errors.ParseError as exc:
        raise AnalysisException(f"[PARSE_SYNTAX_ERROR] {exc}", "PARSE_SYNTAX_ERROR") from None
    if args is not None:
        _bind(tree, args)
    _spark_calls(session, tree)
    try:
        return _statement(session, tree)
    finally:
        for name in made:
            session._views.pop(name, None)


def _spark_calls(session: Any, tree: exp.Expression) -> None:
    """Each call as Spark's parser reads it, so that it is named as Spark names it: a
    built-in function sqlglot has no node for spelled as Spark shows it (``Expm1(x)`` is
    ``EXPM1(x)``, ``shiftRightUnsigned`` ``shiftrightunsigned``: ``column_names.pretty_name``),
    ``isnotnull(x)`` as ``x IS NOT NULL``, ``positive(x)`` named ``(+ x)``, the one-argument
    ``log(x)`` (``ln``) named ``LOG(E(), x)``, and a typed literal (``2.5D``, ``2L``,
    ``1.5BD``) named by its digits with its sign (``-2.5D`` is the literal ``-2.5``), a
    number in scientific notation by Java's ``Double.toString`` (``1E10`` is ``1.0E10``). Inner
    calls come first, as a call's name holds its arguments' names."""
    from strataflow.pyspark.sql.column_names import LITERAL, java_double_text, pretty_name, spark_name
    from strataflow.pyspark.sql.semantics.registry import ANONYMOUS

    udfs = getattr(session, "_udfs", {})
    for node in reversed(list(tree.find_all(exp.Anonymous, exp.Ln, exp.TryCast, exp.Literal))):
        if isinstance(node, exp.Literal):
            if not node.is_string and "e" in node.this.lower():  # 1E10: a double, named as Java writes it
                node.meta["shown"] = java_double_text(float(node.this))
        elif isinstance(node, exp.TryCast):
            if _typed_literal(node):
                node.meta[LITERAL] = True
                if isinstance(node.parent, exp.Neg) and not str(node.this.this).startswith("-"):
                    node.set("this", exp.Literal(this=f"-{node.this.this}", is_string=node.this.is_string))
                    node.parent.replace(node)
        elif isinstance(node, exp.Ln):
            if node._meta and str(node.meta.get("written", "")).lower() == "log":
                node.meta["written"] = "ln"
                node.meta["shown"] = f"LOG(E(), {spark_name(node.this)})"
        elif node.name.lower() in udfs or node.name.lower() not in ANONYMOUS:
            continue
        elif node.name.lower() == "isnotnull" and len(node.expressions) == 1:
            node.replace(exp.Not(this=exp.Is(this=node.expressions[0], expression=exp.Null())))
        elif node.name.lower() == "positive" and len(node.expressions) == 1:
            node.meta["shown"] = f"(+ {spark_name(node.expressions[0])})"
        else:
            node.set("this", pretty_name(node.name))


def _typed_literal(node: exp.TryCast) -> bool:
    """True for a number with Spark's type suffix (``2.5D``, ``2L``, ``1.5BD``), which
    sqlglot reads as a cast without the options a written ``CAST`` has; its literal's span
    in the text is longer than its digits (``2.5::double`` is a cast, named as one)."""
    lit = node.this
    if "format" in node.args or not isinstance(lit, exp.Literal):
        return False
    if not lit._meta or "end" not in lit.meta:
        return True  # 1.5BD: sqlglot makes the decimal's digits a literal of its own
    return lit.meta["end"] - lit.meta["start"] + 1 > len(lit.this)


def _formatted(session: Any, text: str, kwargs: dict, made: list[str]) -> str:
    """``{name}`` filled as PySpark's ``spark.sql(text, **kwargs)`` does: a DataFrame as a
    view made for this query, a Column as its SQL, a string quoted, a number as it is."""
    import string

    from strataflow.pyspark.sql.column import Column, spark_name

    class _Spark(string.Formatter):
        def format_field(self, value: Any, spec: str) -> str:
            if hasattr(value, "_current") and hasattr(value, "createOrReplaceTempView"):
                name = f"__sql_arg{len(made)}_{id(value)}"
                session._views[name] = value
                made.append(name)
                return f"`{name}`"
            if isinstance(value, Column):
                return spark_name(value._expr)
            if isinstance(value, str):
                return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
            return super().format_field(value, spec)

    return _Spark().format(text, **kwargs)


def _bind(tree: exp.Expression, args: Any) -> None:
    """Parameter markers replaced by literals: ``:name`` from a dict, ``?`` from a list."""
    from strataflow.pyspark.sql.column import lit_expr

    marks = list(tree.find_all(exp.Placeholder))
    if isinstance(args, dict):
        for m in marks:
            if m.name not in args:
                raise AnalysisException(f"[UNBOUND_SQL_PARAMETER] Found the unbound parameter: {m.name}. Please, fix "
                                        f"`args` and provide a mapping of the parameter to a SQL literal.",
                                        "UNBOUND_SQL_PARAMETER")
            m.replace(lit_expr(args[m.name]))
    else:
        values = list(args)
        if len(values) != len(marks):
            raise AnalysisException(f"[UNBOUND_SQL_PARAMETER] {len(marks)} parameter markers and {len(values)} "
                                    f"values in `args`", "UNBOUND_SQL_PARAMETER")
        for m, v in zip(marks, values):
            m.replace(lit_expr(v))


def _statement(session: Any, tree: exp.Expression) -> Any:
    """Runs one parsed statement: a view made or dropped, or a query's DataFrame."""
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "VIEW":
        return _create_view(session, tree)
    if isinstance(tree, exp.Drop) and (tree.args.get("kind") or "").upper() in ("VIEW", "TABLE"):  # views only
        for t in tree.args.get("tables") or [tree.this]:
            if not session.dropTempView(t.name) and not tree.args.get("exists"):
                session.table(t.name)  # TABLE_OR_VIEW_NOT_FOUND, naming it
        return session.range(0)
    if isinstance(tree, exp.Values):  # a bare ``VALUES (1, 2)``: the inline table's rows
        tree = exp.select("*").from_(tree)
    names = _written_names(tree)
    made = _table_functions(session, tree) + _inline_tables(session, tree)
    try:
        return _as_written(session, query_frame(session, _udf_calls(session, _optimize(session, _global_names(tree))),
                                                {}), names)
    finally:
        for name in made:
            session._views.pop(name, None)


def _udf_calls(session: Any, tree: exp.Expression) -> exp.Expression:
    """Calls of the names ``spark.udf.register`` gave, made calls of those UDFs."""
    from strataflow.pyspark.sql.udf import sql_udfs

    sql_udfs(session, tree)
    return tree


def _table_functions(session: Any, tree: exp.Expression) -> list[str]:
    """``FROM range(...)`` (Spark's table-valued function) read as a view of ``spark.range``
    for the one query; the names of those views."""
    made = []
    for t in list(tree.find_all(exp.Table)):
        fn = t.this
        if isinstance(fn, exp.Anonymous) and fn.name.lower() == "range":
            args = [int(a.this) if isinstance(a, exp.Literal) else int(a.sql()) for a in fn.expressions]
            name = f"__range{len(made)}_{id(tree)}"
            session._views[name] = session.range(*args)
            alias = t.args.get("alias") or exp.TableAlias(this=exp.to_identifier("range"))
            t.replace(exp.Table(this=exp.to_identifier(name, quoted=True), alias=alias))
            made.append(name)
    return made


def _inline_tables(session: Any, tree: exp.Expression) -> list[str]:
    """``FROM VALUES (1, 'a'), (2, NULL) AS tab(x, y)`` (Spark's inline table) read as a view
    for the one query; the names of those views. Its columns are named by the alias, else
    ``col1``, ``col2``...; each column's type is its rows' values' types widened as Spark's
    (``2`` and ``1.5`` a decimal(11,1), ``1`` and ``NULL`` an int, ``NULL`` alone void), as
    a union of one-row selects gives them."""
    made = []
    for values in reversed(list(tree.find_all(exp.Values))):
        alias = values.args.get("alias")
        rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t] for t in values.expressions]
        last = rows[-1][-1] if rows and rows[-1] else None
        if isinstance(last, exp.Alias) and alias is not None and not alias.name:  # ``VALUES 1, 2 AS t(a)``:
            rows[-1][-1] = last.this  # sqlglot reads the table's alias as the last value's
            alias = exp.TableAlias(this=exp.to_identifier(last.alias), columns=alias.columns)
        width = len(rows[0])
        columns = [c.name for c in alias.columns] if alias is not None and alias.columns else \
            [f"col{i + 1}" for i in range(width)]
        for i, r in enumerate(rows):
            if len(r) != len(columns):
                raise AnalysisException(_INVALID_INLINE + f"NUM_COLUMNS_MISMATCH] Invalid inline table. Inline table "
                                        f"expected {len(columns)} columns but found {len(r)} columns in row {i}.",
                                        "INVALID_INLINE_TABLE.NUM_COLUMNS_MISMATCH")
        name = f"__values{len(made)}_{id(tree)}"
        session._views[name] = _inline_frame(session, rows, columns)
        table_alias = exp.TableAlias(this=exp.to_identifier(alias.name if alias is not None and alias.name else name))
        values.replace(exp.Table(this=exp.to_identifier(name, quoted=True), alias=table_alias))
        made.append(name)
    return made


_INVALID_INLINE = "[INVALID_INLINE_TABLE."
#: calls whose value is not one constant, which Spark's inline table cannot hold
_NOT_CONSTANT = (exp.Rand, exp.Randn, exp.Uuid)


def _inline_frame(session: Any, rows: list[list[exp.Expression]], columns: list[str]) -> Any:
    """The rows of an inline table as one DataFrame: each row a one-row select of its
    values (Spark's types and errors for each), unioned (the types widened as Spark's)."""
    from strataflow.pyspark.sql.column import Column

    frames = []
    for row in rows:
        for value in row:
            if value.find(exp.Column, exp.Select, *_NOT_CONSTANT) is not None:
                raise AnalysisException(_INVALID_INLINE + "CANNOT_EVALUATE_EXPRESSION_IN_INLINE_TABLE] Invalid inline "
                                        f"table. Cannot evaluate the expression \"{_shown(value)}\" in inline table "
                                        "definition.", "INVALID_INLINE_TABLE.CANNOT_EVALUATE_EXPRESSION_IN_INLINE_TABLE")
        frames.append(session.range(1).select(*[Column(v.copy()).alias(c) for v, c in zip(row, columns)]))
    for i, c in enumerate(columns):  # Spark widens without making a string of a number (a union would)
        kinds = {f.schema.fields[i].dataType.simpleString() for f in frames} - {"void"}
        if "string" in kinds and len(kinds) > 1:
            raise AnalysisException(_INVALID_INLINE + "INCOMPATIBLE_TYPES_IN_INLINE_TABLE] Invalid inline table. "
                                    f"Found incompatible types in the column `{c}` for inline table.",
                                    "INVALID_INLINE_TABLE.INCOMPATIBLE_TYPES_IN_INLINE_TABLE")
    out = frames[0]
    for one in frames[1:]:
        out = out.union(one)
    return out


def _shown(value: exp.Expression) -> str:
    from strataflow.pyspark.sql.column import spark_name

    return spark_name(value)


def _written_names(tree: exp.Expression) -> list[str | None] | None:
    """The result's column names as Spark gives them: as the query writes them (sqlglot's
    optimizer lowercases every identifier, Spark keeps ``MyId`` as it is), an unnamed
    expression as Spark names it (``(id + 1)``, ``count(1)``), None for a ``*``."""
    from strataflow.pyspark.sql.column import spark_name

    top = tree
    while isinstance(top, (exp.Union, exp.Subquery)):
        top = top.left if isinstance(top, exp.Union) else top.this
    if not isinstance(top, exp.Select):
        return None
    names: list[str | None] = []
    for e in top.expressions:
        if isinstance(e, exp.Alias):
            names.append(e.alias)
        elif isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            names.append(None)
        elif isinstance(e, exp.Column):
            names.append(e.name)
        else:
            names.append(spark_name(e))
    return names


def _as_written(session: Any, df: Any, names: list[str | None] | None) -> Any:
    """``df`` with the names ``_written_names`` gave; a ``*``'s columns take their case
    from the views they come from."""
    if not names:
        return df
    cols = df.columns
    stars = names.count(None)
    width = len(cols) - (len(names) - stars)
    if stars > 1 or width < 0 or (stars == 0 and width != 0):
        return df
    case = {c.lower(): c for v in session._views.values() for c in v.columns}
    out: list[str] = []
    for n in names:
        if n is None:
            out += [case.get(c.lower(), c) for c in cols[len(out):len(out) + width]]
        else:
            out.append(n)
    return df if out == cols else df.toDF(*out)


def _global_names(tree: exp.Expression) -> exp.Expression:
    """``global_temp.v`` read as the one table name ``"global_temp.v"`` (``spark.table``'s)."""
    from strataflow.pyspark.sql.catalog import GLOBAL_TEMP

    for t in list(tree.find_all(exp.Table)):
        if t.db and t.db.lower() == GLOBAL_TEMP:
            alias = t.args.get("alias") or exp.TableAlias(this=exp.to_identifier(t.name))
            t.replace(exp.Table(this=exp.to_identifier(f"{GLOBAL_TEMP}.{t.name}", quoted=True), alias=alias))
    return tree


_SET = re.compile(r"\s*(SET|RESET)(?:\s+(-v)|\s+([^=\s;]+)(?:\s*=\s*(.*?))?)?\s*;?\s*", re.I | re.S)


def _set(session: Any, m: re.Match) -> Any:
    """``SET key=value`` (the session's setting, as ``spark.conf.set``: ANSI mode and the
    time zone change what queries mean), ``SET key`` (its value), ``SET`` (all of them),
    ``RESET key``; a DataFrame of ``key`` and ``value`` as Spark's."""
    verb, verbose, key, value = m.group(1).upper(), m.group(2), m.group(3), m.group(4)
    schema = "key string, value string"
    if verb == "RESET":
        if key is None:
            session._options.clear()
        else:
            session.conf.unset(key)
        return session.createDataFrame([], schema)
    if key is None:
        rows = sorted(session.conf.getAll().items())
        return session.createDataFrame(rows if not verbose else [(k, v) for k, v in rows], schema)
    if value is None:
        return session.createDataFrame([(key, session.conf.get(key, "<undefined>"))], schema)
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    session.conf.set(key, value)
    return session.createDataFrame([(key, value)], schema)


def _show_tables(session: Any) -> Any:
    """``SHOW TABLES``: the temporary views, as Spark lists them."""
    rows = [("", t.name, True) for t in session.catalog.listTables()]
    return session.createDataFrame(rows, "namespace string, tableName string, isTemporary boolean")


#: sqlglot's optimizer rules spark.sql applies: names qualified, projections and predicates
#: pushed down (a comma join's WHERE equalities become its join keys), correlated
#: subqueries rewritten as joins
_RULES = ("qualify", "pushdown_projections", "normalize", "unnest_subqueries", "pushdown_predicates",
          "optimize_joins")


def _optimize(session: Any, tree: exp.Expression) -> exp.Expression:
    from sqlglot.optimizer import optimize
    from sqlglot.optimizer.optimizer import RULES

    from strataflow.pyspark.sql.types import from_arrow

    from strataflow.pyspark.sql.catalog import GLOBAL_TEMP, global_views

    views = {**session._views, **{f"{GLOBAL_TEMP}.{n}": df for n, df in global_views(session.sparkContext).items()}}
    schema = {name: {f.name: from_arrow(f.type).simpleString() for f in df._current.fields}
              for name, df in views.items()}
    missing = sorted({t.name for t in tree.find_all(exp.Table)} - set(schema) - _cte_names(tree), key=str)
    if missing:
        session.table(missing[0])  # the TABLE_OR_VIEW_NOT_FOUND error, naming it
    rules = [r for r in RULES if r.__name__ in _RULES]
    try:
        return optimize(tree, schema=schema, dialect="spark", rules=rules)
    except sqlglot.errors.OptimizeError as exc:
        raise AnalysisException(f"[UNRESOLVED_COLUMN] {exc}", "UNRESOLVED_COLUMN") from None


def _cte_names(tree: exp.Expression) -> set[str]:
    return {c.alias for c in tree.find_all(exp.CTE)}


def _create_view(session: Any, tree: exp.Create) -> Any:
    """``CREATE [OR REPLACE] TEMP VIEW name [(columns)] AS query``."""
    target = tree.this
    name = target.this.name if isinstance(target, exp.Schema) else target.name
    df = _as_written(session, query_frame(session, _optimize(session, tree.expression), {}), _written_names(tree.expression))
    if isinstance(target, exp.Schema) and target.expressions:
        df = df.toDF(*[c.name for c in target.expressions])
    from strataflow.pyspark.sql.catalog import register

    register(session, name, df, replace=bool(tree.args.get("replace")))
    return session.range(0)
