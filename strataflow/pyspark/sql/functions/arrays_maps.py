"""``pyspark.sql.functions``: array, map and struct functions, the higher-order ones and generators (PySpark's Collection, Map, Struct and Generator Functions).

Each function is defined with PySpark's signature and an example; ``call`` builds the
node by Spark's name, and ``sql/semantics`` gives it Spark's meaning or refuses it.
A Python function given to a higher-order function is called once with Columns for
its variables (``x_0``, ``y_1``...: numbered apart, as Spark's ``freshVarName``; a
column's name shows each as ``namedlambdavariable()``), and its Column becomes the
body of a sqlglot ``Lambda``.
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Callable

from sqlglot import exp as sx

from strataflow.pyspark.sql.column import Column
from strataflow.pyspark.sql.functions.builtin import arg, call

__all__ = ["transform", "filter", "exists", "forall", "aggregate", "reduce", "zip_with", "array_sort", "map_filter",
           "transform_keys", "transform_values", "map_zip_with", "array_append", "array_prepend", "array_compact",
           "array_insert", "array_position", "array_remove", "array_repeat", "array_size", "arrays_overlap",
           "cardinality", "get", "try_element_at", "element_at", "named_struct", "map_keys", "map_values",
           "create_map", "map_concat", "map_contains_key", "map_entries", "map_from_arrays", "map_from_entries",
           "str_to_map", "shuffle", "posexplode_outer", "inline", "inline_outer", "stack"]

#: Spark numbers every lambda variable a Python function gets (UnresolvedNamedLambdaVariable.freshVarName)
_VARIABLE_IDS = itertools.count()


def _lambda(f: Callable[..., Column]) -> sx.Lambda:
    """The Lambda of Python function ``f``: its variables ``x``, ``y``, ``z`` (as PySpark
    names them) numbered by the session's counter, its body ``f``'s Column."""
    params = [p for p in inspect.signature(f).parameters.values()]
    if not 1 <= len(params) <= 3 or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise ValueError(f"[WRONG_NUM_ARGS_FOR_HIGHER_ORDER_FUNCTION] Function `{f.__name__}` should take "
                                f"between 1 and 3 arguments, but the provided function takes {len(params)}.")
    names = [f"{n}_{next(_VARIABLE_IDS)}" for n in ("x", "y", "z")[:len(params)]]
    result = f(*[Column(_variable(n)) for n in names])
    if not isinstance(result, Column):
        raise ValueError(f"[HIGHER_ORDER_FUNCTION_SHOULD_RETURN_COLUMN] Function `{f.__name__}` should "
                                f"return Column, got {type(result).__name__}.")
    return sx.Lambda(this=result._expr, expressions=[sx.to_identifier(n) for n in names])


def _variable(name: str) -> sx.Identifier:
    """A lambda's variable: an identifier, as Spark SQL's parser writes one (not a column
    of the DataFrame, so resolution leaves it be)."""
    return sx.to_identifier(name)


def transform(col: "Column | str", f: Callable[..., Column]) -> Column:
    """``f`` applied to each element (and its 0-based index, given a 2-argument ``f``).

    >>> spark.createDataFrame([([1, 2, None],)], "a array<int>").select(F.transform("a", lambda x: x * 2).alias("t")).first()
    Row(t=[2, 4, None])
    """
    return call("transform", arg(col, "c"), _lambda(f))


def filter(col: "Column | str", f: Callable[..., Column]) -> Column:
    """The elements (with their 0-based index, given a 2-argument ``f``) where ``f`` is true.

    >>> spark.createDataFrame([([1, 2, None, 3],)], "a array<int>").select(F.filter("a", lambda x: x > 1).alias("f")).first()
    Row(f=[2, 3])
    """
    return call("filter", arg(col, "c"), _lambda(f))


def exists(col: "Column | str", f: Callable[[Column], Column]) -> Column:
    """True if ``f`` is true for an element; else null if it is null for one; else false.

    >>> spark.createDataFrame([([1, None],)], "a array<int>").select(F.exists("a", lambda x: x > 1).alias("e")).first()
    Row(e=None)
    """
    return call("exists", arg(col, "c"), _lambda(f))


def forall(col: "Column | str", f: Callable[[Column], Column]) -> Column:
    """False if ``f`` is false for an element; else null if it is null for one; else true.

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.forall("a", lambda x: x > 0).alias("e")).first()
    Row(e=True)
    """
    return call("forall", arg(col, "c"), _lambda(f))


def aggregate(col: "Column | str", initialValue: "Column | str", merge: Callable[[Column, Column], Column],
              finish: Callable[[Column], Column] | None = None) -> Column:
    """``merge`` folded over the elements from ``initialValue``, then ``finish`` applied.

    >>> df = spark.createDataFrame([([1, 2, 3],)], "a array<int>")
    >>> df.select(F.aggregate("a", F.lit(0), lambda acc, x: acc + x, lambda acc: acc * 10).alias("s")).first()
    Row(s=60)
    """
    return _fold("aggregate", col, initialValue, merge, finish)


def reduce(col: "Column | str", initialValue: "Column | str", merge: Callable[[Column, Column], Column],
           finish: Callable[[Column], Column] | None = None) -> Column:
    """``aggregate``'s other name: ``merge`` folded over the elements, then ``finish``.

    >>> df = spark.createDataFrame([([2, 3],)], "a array<int>")
    >>> df.select(F.reduce("a", F.lit(1), lambda acc, x: acc * x).alias("p")).first()
    Row(p=6)
    """
    return _fold("reduce", col, initialValue, merge, finish)


def _fold(name: str, col: Any, initial: Any, merge: Callable, finish: Callable | None) -> Column:
    parts = [arg(col, "c"), arg(initial, "c"), _lambda(merge)]
    done = _lambda(finish if finish is not None else (lambda x: x))
    return call(name, *parts, done)


def zip_with(left: "Column | str", right: "Column | str", f: Callable[[Column, Column], Column]) -> Column:
    """``f`` of the elements at each index of both arrays (the shorter padded with nulls).

    >>> df = spark.createDataFrame([([1, 2], [10])], "a array<int>, b array<int>")
    >>> df.select(F.zip_with("a", "b", lambda x, y: F.coalesce(x + y, x)).alias("z")).first()
    Row(z=[11, 2])
    """
    return call("zip_with", arg(left, "c"), arg(right, "c"), _lambda(f))


def array_sort(col: "Column | str", comparator: Callable[[Column, Column], Column] | None = None) -> Column:
    """The array sorted ascending, nulls last; or by ``comparator`` (negative, 0, positive), stably.

    >>> df = spark.createDataFrame([([3, None, 1],)], "a array<int>")
    >>> df.select(F.array_sort("a").alias("s")).first().s
    [1, 3, None]
    >>> df.select(F.array_sort(F.array_compact("a"), lambda l, r: r - l).alias("d")).first().d
    [3, 1]
    """
    if comparator is None:
        return call("array_sort", arg(col, "c"))
    return call("array_sort", arg(col, "c"), _lambda(comparator))


def map_filter(col: "Column | str", f: Callable[[Column, Column], Column]) -> Column:
    """The entries of the map where ``f(key, value)`` is true.

    >>> df = spark.createDataFrame([({"a": 1, "b": 5},)], "m map<string,int>")
    >>> df.select(F.map_filter("m", lambda k, v: v > 2).alias("f")).first()
    Row(f={'b': 5})
    """
    return call("map_filter", arg(col, "c"), _lambda(f))


def transform_keys(col: "Column | str", f: Callable[[Column, Column], Column]) -> Column:
    """The map with each key replaced by ``f(key, value)`` (a null or repeated key is an error).

    >>> df = spark.createDataFrame([({"a": 1},)], "m map<string,int>")
    >>> df.select(F.transform_keys("m", lambda k, v: F.upper(k)).alias("t")).first()
    Row(t={'A': 1})
    """
    return call("transform_keys", arg(col, "c"), _lambda(f))


def transform_values(col: "Column | str", f: Callable[[Column, Column], Column]) -> Column:
    """The map with each value replaced by ``f(key, value)``.

    >>> df = spark.createDataFrame([({"a": 1},)], "m map<string,int>")
    >>> df.select(F.transform_values("m", lambda k, v: v + 1).alias("t")).first()
    Row(t={'a': 2})
    """
    return call("transform_values", arg(col, "c"), _lambda(f))


def map_zip_with(col1: "Column | str", col2: "Column | str", f: Callable[[Column, Column, Column], Column]) -> Column:
    """A map of every key of either map to ``f(key, value1, value2)`` (null where a map lacks it).

    >>> df = spark.createDataFrame([({"a": 1}, {"a": 2, "b": 3})], "m map<string,int>, n map<string,int>")
    >>> df.select(F.map_zip_with("m", "n", lambda k, v1, v2: F.coalesce(v1, F.lit(0)) + v2).alias("z")).first()
    Row(z={'a': 3, 'b': 3})
    """
    return call("map_zip_with", arg(col1, "c"), arg(col2, "c"), _lambda(f))


def array_append(col: "Column | str", value: Any) -> Column:
    """The array with ``value`` added at its end (null for a null array).

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.array_append("a", 3)).first()
    Row(array_append(a, 3)=[1, 2, 3])
    """
    return call("array_append", arg(col, "c"), arg(value, "l"))


def array_prepend(col: "Column | str", value: Any) -> Column:
    """The array with ``value`` added at its start (null for a null array).

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.array_prepend("a", 0)).first()
    Row(array_prepend(a, 0)=[0, 1, 2])
    """
    return call("array_prepend", arg(col, "c"), arg(value, "l"))


def array_compact(col: "Column | str") -> Column:
    """The array without its null elements.

    >>> spark.createDataFrame([([1, None, 2],)], "a array<int>").select(F.array_compact("a")).first()
    Row(array_compact(a)=[1, 2])
    """
    return call("array_compact", arg(col, "c"))


def array_insert(arr: "Column | str", pos: "Column | str | int", value: Any) -> Column:
    """The array with ``value`` at 1-based ``pos`` (from the end if negative), padded with
    nulls past either end; position 0 is an error.

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.array_insert("a", 4, 9)).first()
    Row(array_insert(a, 4, 9)=[1, 2, None, 9])
    """
    return call("array_insert", arg(arr, "c"), arg(pos, "c"), arg(value, "l"))


def array_position(col: "Column | str", value: Any) -> Column:
    """The 1-based position (a bigint) of the first element equal to ``value``, 0 if none.

    >>> spark.createDataFrame([([3, 1, 3],)], "a array<int>").select(F.array_position("a", 3)).first()
    Row(array_position(a, 3)=1)
    """
    return call("array_position", arg(col, "c"), arg(value, "l"))


def array_remove(col: "Column | str", element: Any) -> Column:
    """The array without the elements equal to ``element`` (nulls stay).

    >>> spark.createDataFrame([([1, 2, None, 2],)], "a array<int>").select(F.array_remove("a", 2)).first()
    Row(array_remove(a, 2)=[1, None])
    """
    return call("array_remove", arg(col, "c"), arg(element, "l"))


def array_repeat(col: "Column | str", count: "Column | str | int") -> Column:
    """An array of ``count`` copies of ``col`` (empty for a count below 1).

    >>> spark.createDataFrame([("ab",)], ["s"]).select(F.array_repeat("s", 2)).first()
    Row(array_repeat(s, 2)=['ab', 'ab'])
    """
    return call("array_repeat", arg(col, "c"), arg(count, "c"))


def array_size(col: "Column | str") -> Column:
    """The number of elements of the array (null for a null array).

    >>> spark.createDataFrame([([1, 2],), (None,)], "a array<int>").select(F.array_size("a")).collect()
    [Row(array_size(a)=2), Row(array_size(a)=None)]
    """
    return call("array_size", arg(col, "c"))


def arrays_overlap(a1: "Column | str", a2: "Column | str") -> Column:
    """True if the arrays share a non-null element; else null if both are non-empty and
    either holds a null; else false.

    >>> df = spark.createDataFrame([([1, None], [2])], "a array<int>, b array<int>")
    >>> df.select(F.arrays_overlap("a", "b")).first()
    Row(arrays_overlap(a, b)=None)
    """
    return call("arrays_overlap", arg(a1, "c"), arg(a2, "c"))


def cardinality(col: "Column | str") -> Column:
    """The number of elements of an array or entries of a map (``size``'s other name).

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.cardinality("a")).first()
    Row(cardinality(a)=2)
    """
    return call("cardinality", arg(col, "c"))


def get(col: "Column | str", index: "Column | str | int") -> Column:
    """The element at 0-based ``index``; null outside the array.

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.get("a", 1), F.get("a", 5)).first()
    Row(get(a, 1)=2, get(a, 5)=None)
    """
    return call("get", arg(col, "c"), arg(index, "c"))


def try_element_at(col: "Column | str", extraction: "Column | str") -> Column:
    """``element_at`` that is null where it would fail (an index out of the array, a
    missing key); index 0 is still an error.

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.try_element_at("a", F.lit(5))).first()
    Row(try_element_at(a, 5)=None)
    """
    return call("try_element_at", arg(col, "c"), arg(extraction, "c"))


def element_at(col: "Column | str", extraction: Any) -> Column:
    """The array's element at 1-based ``extraction`` (from the end if negative), or the
    map's value for key ``extraction``.

    >>> spark.createDataFrame([([1, 2],)], "a array<int>").select(F.element_at("a", -1)).first()
    Row(element_at(a, -1)=2)
    """
    return call("element_at", arg(col, "c"), arg(extraction, "l"))


def named_struct(*cols: "Column | str") -> Column:
    """A struct of name, value, name, value... (the names literal strings).

    >>> spark.createDataFrame([(1,)], ["a"]).select(F.named_struct(F.lit("x"), "a").alias("s")).first()
    Row(s=Row(x=1))
    """
    parts = [arg(c, "c") for c in cols]
    return call("named_struct", *parts)


def map_keys(col: "Column | str") -> Column:
    """The map's keys, an array in the map's order.

    >>> spark.createDataFrame([({"a": 1},)], "m map<string,int>").select(F.map_keys("m")).first()
    Row(map_keys(m)=['a'])
    """
    return call("map_keys", arg(col, "c"))


def map_values(col: "Column | str") -> Column:
    """The map's values, an array in the map's order.

    >>> spark.createDataFrame([({"a": 1},)], "m map<string,int>").select(F.map_values("m")).first()
    Row(map_values(m)=[1])
    """
    return call("map_values", arg(col, "c"))


def create_map(*cols: "Column | str") -> Column:
    """A map of key, value, key, value... (a null key, or a key twice, is an error).

    >>> spark.createDataFrame([("a", 1)], ["k", "v"]).select(F.create_map("k", "v").alias("m")).first()
    Row(m={'a': 1})
    """
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    if not cols:  # map(): Spark's map<void,void>
        empty = sx.VarMap(keys=sx.Array(expressions=[]), values=sx.Array(expressions=[]))
        empty.meta["fn"] = "map"
        return Column(empty)
    return call("map", *[arg(c, "c") for c in cols])


def map_concat(*cols: "Column | str") -> Column:
    """The union of the maps (a key in two of them is an error); null if any is null.

    >>> df = spark.createDataFrame([({"a": 1}, {"b": 2})], "m map<string,int>, n map<string,int>")
    >>> df.select(F.map_concat("m", "n").alias("c")).first()
    Row(c={'a': 1, 'b': 2})
    """
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    return call("map_concat", *[arg(c, "c") for c in cols])


def map_contains_key(col: "Column | str", value: Any) -> Column:
    """True if the map has key ``value``.

    >>> spark.createDataFrame([({"a": 1},)], "m map<string,int>").select(F.map_contains_key("m", "a")).first()
    Row(map_contains_key(m, a)=True)
    """
    return call("map_contains_key", arg(col, "c"), arg(value, "l"))


def map_entries(col: "Column | str") -> Column:
    """The map's entries, an array of structs of ``key`` and ``value``.

    >>> spark.createDataFrame([({"a": 1},)], "m map<string,int>").select(F.map_entries("m")).first()
    Row(map_entries(m)=[Row(key='a', value=1)])
    """
    return call("map_entries", arg(col, "c"))


def map_from_arrays(col1: "Column | str", col2: "Column | str") -> Column:
    """A map of the keys of ``col1`` to the values of ``col2`` (same length; keys not null, once each).

    >>> df = spark.createDataFrame([(["a", "b"], [1, 2])], "k array<string>, v array<int>")
    >>> df.select(F.map_from_arrays("k", "v").alias("m")).first()
    Row(m={'a': 1, 'b': 2})
    """
    return call("map_from_arrays", arg(col1, "c"), arg(col2, "c"))


def map_from_entries(col: "Column | str") -> Column:
    """A map of an array of (key, value) structs.

    >>> df = spark.createDataFrame([([("a", 1)],)], "e array<struct<k:string,v:int>>")
    >>> df.select(F.map_from_entries("e").alias("m")).first()
    Row(m={'a': 1})
    """
    return call("map_from_entries", arg(col, "c"))


def str_to_map(text: "Column | str", pairDelim: "Column | str | None" = None,
               keyValueDelim: "Column | str | None" = None) -> Column:
    """A map of the text split into pairs at ``pairDelim`` (``,``) and each pair into key
    and value at ``keyValueDelim`` (``:``), both regular expressions.

    >>> spark.createDataFrame([("a:1,b:2",)], ["s"]).select(F.str_to_map("s").alias("m")).first()
    Row(m={'a': '1', 'b': '2'})
    """
    from strataflow.pyspark.sql.functions.builtin import lit

    pair = arg(pairDelim if pairDelim is not None else lit(","), "c")
    kv = arg(keyValueDelim if keyValueDelim is not None else lit(":"), "c")
    return call("str_to_map", arg(text, "c"), pair, kv)


def shuffle(col: "Column | str", seed: "Column | int | None" = None) -> Column:
    """A random permutation of the array (refused: Spark's random generator is not DuckDB's).

    >>> spark.range(1).select(F.shuffle(F.array(F.lit(1))))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `shuffle` here: ...
    """
    shown = [arg(col, "c")] + ([arg(seed, "l")] if seed is not None else [])
    return call("shuffle", shown[0], shown=shown)


def posexplode_outer(col: "Column | str") -> Column:
    """A row for each element with its position (``pos``, ``col``); one row of nulls for a
    null or empty array.

    Refused: strataflow's select makes one column of each expression (``posexplode`` of
    ``array_compact``, or ``explode_outer`` with ``array_position``, instead).

    >>> spark.createDataFrame([([7],)], "a array<int>").select(F.posexplode_outer("a"))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `posexplode_outer` here: ...
    """
    return call("posexplode_outer", arg(col, "c"))


def inline(col: "Column | str") -> Column:
    """A row for each struct of the array, its fields the columns.

    Refused: strataflow's select makes one column of each expression (``explode``, then
    ``select("col.*")``, instead).

    >>> df = spark.createDataFrame([([(1, "a")],)], "e array<struct<n:int,s:string>>")
    >>> df.select(F.inline("e"))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `inline` here: ...
    """
    return call("inline", arg(col, "c"))


def inline_outer(col: "Column | str") -> Column:
    """``inline``, with one row of nulls for a null or empty array.

    Refused, as ``inline``.

    >>> df = spark.createDataFrame([([],)], "e array<struct<n:int,s:string>>")
    >>> df.select(F.inline_outer("e"))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `inline_outer` here: ...
    """
    return call("inline_outer", arg(col, "c"))


def stack(*cols: "Column | str") -> Column:
    """The values after the first, ``n``, in ``n`` rows (columns ``col0``, ``col1``...).

    Refused, as ``inline`` (``explode`` of an array of structs instead).

    >>> spark.range(1).select(F.stack(F.lit(2), F.lit(1), F.lit(2)))
    Traceback (most recent call last):
    ...
    strataflow.pyspark.errors.AnalysisException: [STRATAFLOW_UNSUPPORTED] strataflow does not run `stack` here: ...
    """
    return call("stack", *[arg(c, "c") for c in cols])
