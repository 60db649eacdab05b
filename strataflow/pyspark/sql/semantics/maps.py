"""Maps as Spark builds and reads them: a map keeps its entries in the order they were
put in (as DuckDB's MAP does); building one with a null key is NULL_MAP_KEY and with a
key twice DUPLICATED_MAP_KEY (Spark's default ``spark.sql.mapKeyDedupPolicy``, checked
before DuckDB's own map errors, whose messages differ); a lookup of a missing key is null.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from strataflow.pyspark.sql.semantics.core import Rules, refusal, typed
from strataflow.pyspark.sql.semantics.lambdas import DUPLICATE_KEY, NULL_KEY, checked_map, spark_error
from strataflow.pyspark.sql.semantics.template import fill

__all__ = ["RULES", "ANONYMOUS", "map_value", "map_size"]

def _checked_arrays(keys: exp.Expression, values: exp.Expression, fn: str) -> exp.Expression:
    """``MAP(keys, values)`` of two lists of equal length, with Spark's key checks."""
    return fill(f"CASE WHEN list_contains(list_transform({{k}}, lambda __mk: __mk IS NULL), true) THEN "
                f"{spark_error(*NULL_KEY, fn)} WHEN len(list_distinct({{k}})) < len({{k}}) THEN "
                f"{spark_error(*DUPLICATE_KEY, fn)} ELSE map({{k}}, {{v}}) END", k=keys, v=values)


def _create_map(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``map(k1, v1, ...)``; ``map()``, Spark's ``map<void,void>``, is refused (Arrow cannot
    send a map of null keys between processes)."""
    keys, values = node.args["keys"], node.args["values"]
    if not keys.expressions:
        raise refusal("map", "an empty map of no type (map<void,void>) cannot travel between strataflow's "
                      "processes", "a map of at least one entry (map_filter can empty it)")
    return _checked_arrays(keys, values, "map")


def _map_from_arrays(node: exp.Expression, rules: Rules) -> exp.Expression:
    keys, values = node.args["keys"], node.args["values"]
    lengths = spark_error("_LEGACY_ERROR_TEMP_2128", "The key array and value array of MapData must have the same "
                          "length.", "map_from_arrays")
    return fill(f"CASE WHEN {{k}} IS NULL OR {{v}} IS NULL THEN NULL WHEN len({{k}}) <> len({{v}}) THEN {lengths} "
                f"ELSE {{m}} END", k=keys, v=values, m=_checked_arrays(keys, values, "map_from_arrays"))


def _map_from_entries(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``map_from_entries``: null for a null array or one with a null entry; the entries'
    structs' fields, whatever their names, are the key and the value."""
    a = node.this
    t = rules.type_of(a)
    if t is None or not pa.types.is_list(t) or not pa.types.is_struct(t.value_type) \
            or t.value_type.num_fields != 2:
        raise rules.refuse(node, "its argument is not known to be an array of two-field structs",
                           "map_from_arrays")
        # (Spark itself refuses any other argument: DATATYPE_MISMATCH)
    k, v = (t.value_type.field(i).name.replace('"', '""') for i in range(2))
    entries = fill(f'list_transform({{a}}, lambda __me: struct_pack(key := __me."{k}", value := __me."{v}"))', a=a)
    return fill("CASE WHEN {a} IS NULL OR list_contains(list_transform({a}, lambda __me: __me IS NULL), true) "
                "THEN NULL ELSE {m} END", a=a, m=checked_map(entries, "map_from_entries"))


def map_value(m: exp.Expression, key: exp.Expression) -> exp.Expression:
    """The value of ``key`` in map ``m``; null where it has none."""
    return fill("map_extract({m}, {k})[1]", m=m, k=key)


def map_size(m: exp.Expression, rules: Rules) -> exp.Expression:
    """``size``/``cardinality`` of a map: an int; -1 for a null map without ANSI."""
    if rules.conf.ansi:
        return typed(fill("CAST(cardinality({m}) AS INTEGER)", m=m), pa.int32())
    return typed(fill("CAST(coalesce(cardinality({m}), -1) AS INTEGER)", m=m), pa.int32())


def _map_keys(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("map_keys({m})", m=node.this if not isinstance(node, exp.Anonymous) else node.expressions[0])


def _map_values(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("map_values({m})", m=node.expressions[0])


def _map_entries(node: exp.Expression, rules: Rules) -> exp.Expression:
    return fill("map_entries({m})", m=node.expressions[0])


def _contains_key(node: exp.Expression, rules: Rules) -> exp.Expression:
    m, k = node.this, node.args["key"]
    return typed(fill("CASE WHEN {m} IS NULL OR {k} IS NULL THEN NULL ELSE list_contains(map_keys({m}), {k}) END",
                      m=m, k=k), pa.bool_())


def _map_concat(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``map_concat``: null if any map is null; a key in two maps is DUPLICATED_MAP_KEY;
    the maps' types widened to one (DuckDB's ``map_concat`` wants them equal)."""
    maps = list(node.expressions)
    if not maps:
        return fill("MAP()")
    types = [rules.type_of(m) for m in maps]
    if any(t is None or not pa.types.is_map(t) for t in types):
        raise rules.refuse(node, "an argument is not known to be a map", "map_concat of map columns")
    from strataflow.pyspark.sql.semantics.types import duck

    try:
        kt = duck(_wider([t.key_type for t in types]))
        vt = duck(_wider([t.item_type for t in types]))
        parts = [fill(f"CAST({{m}} AS MAP({kt}, {vt}))", m=m) for m in maps]
    except (TypeError, ValueError):
        raise rules.refuse(node, "its maps' key or value types have no common type strataflow can name",
                           "cast the maps to one map type") from None
    if len(maps) == 1:
        return parts[0]
    nulls = " OR ".join(f"{{m{i}}} IS NULL" for i in range(len(maps)))
    keys = "list_concat(" + ", ".join(f"map_keys({{m{i}}})" for i in range(len(maps))) + ")"
    body = f"CASE WHEN {nulls} THEN NULL WHEN len(list_distinct({keys})) < len({keys}) THEN " \
           f"{spark_error(*DUPLICATE_KEY, 'map_concat')} " \
           f"ELSE map_concat({', '.join(f'{{m{i}}}' for i in range(len(maps)))}) END"
    return fill(body, **{f"m{i}": p for i, p in enumerate(parts)})


def _wider(types: list) -> pa.DataType:
    """The common type of ``types``: equal ones, or the widest integral or floating one (a
    null type, an empty map's, widens to any)."""
    types = [t for t in types if not pa.types.is_null(t)] or types
    if all(t == types[0] for t in types):
        return types[0]
    order = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()]
    if all(t in order for t in types):
        return max(types, key=order.index)
    raise ValueError("no common type")


_PLAIN = re.compile(r"[^\\^$.|?*+()\[\]{}]+")


def _str_to_map(node: exp.Expression, rules: Rules) -> exp.Expression:
    """``str_to_map``: the text split at every match of ``pairDelim`` (Java's
    ``split(regex, -1)``), each pair at the first match of ``keyValueDelim`` into its key
    and value (null where it has none). Delimiters with regular-expression syntax are
    refused where Java's and RE2's readings could differ (only plain text and ``[...]``)."""
    text = node.this
    pair, kv = node.args.get("pair_delim"), node.args.get("key_value_delim")
    pair = pair if pair is not None else exp.Literal.string(",")
    kv = kv if kv is not None else exp.Literal.string(":")
    for d in (pair, kv):
        if not (isinstance(d, exp.Literal) and d.is_string and d.this and
                (_PLAIN.fullmatch(d.this) or re.fullmatch(r"\[[^\]\\^]+\]", d.this))):
            raise rules.refuse(node, "a delimiter that is not a literal of plain text or one [...] class "
                               "(Java's and DuckDB's regular expressions could split it apart)",
                               "str_to_map with plain delimiters, or split and map_from_arrays")
    p = "__sp"
    pairs = fill("regexp_split_to_array({t}, {d})", t=text, d=pair)
    entry = fill(f"struct_pack(key := regexp_split_to_array({p}, {{k}})[1], value := CASE WHEN "
                 f"regexp_matches({p}, {{k}}) THEN regexp_replace({p}, '(?s)^.*?(?:' || {{k}} || ')', '') END)", k=kv)
    entries = fill(f"list_transform({{ps}}, lambda {p}: {{e}})", ps=pairs, e=entry)
    return fill("CASE WHEN {t} IS NULL THEN NULL ELSE {m} END", t=text, m=checked_map(entries, "str_to_map"))


RULES = {exp.VarMap: _create_map, exp.Map: _map_from_arrays, exp.MapFromEntries: _map_from_entries,
         exp.MapKeys: _map_keys, exp.MapContainsKey: _contains_key, exp.StrToMap: _str_to_map}
ANONYMOUS = {"map_values": _map_values, "map_entries": _map_entries, "map_concat": _map_concat}
