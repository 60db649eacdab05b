"""Runs a differential program on an engine: strataflow on a Context of any backend, or
PySpark (its camelCase names, through ``SparkApi``).

``build`` turns a Pipeline into a dataset, step by step, with the functions of
``fns.py``; ``act`` runs the action and returns its answer in the shape ``compare.py``
expects (``collect`` also returns the dataset's partition count). Every dataset a
program persists is recorded in a ``Built`` so the harness can unpersist it: programs
share a Context, and each starts from a clean one.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from differential import fns as F
from differential.programs import Pipeline, Program, Step

__all__ = ["Api", "SparkApi", "Built", "build", "act", "partition_rows"]


class Api:
    """strataflow's Dataset API, called by its own names."""

    name = "strataflow"

    def __init__(self, ctx) -> None:
        self.ctx = ctx

    # sources
    def parallelize(self, rows: list, n: int):
        return self.ctx.parallelize(rows, n)

    def from_numpy(self, array: np.ndarray, n: int):
        return self.ctx.from_numpy(array, n)

    def from_arrow(self, table, n: int):
        return self.ctx.from_arrow(table, n)

    def from_pandas(self, df, n: int):
        return self.ctx.from_pandas(df, n)

    def range(self, start: int, stop: int, step: int, n: int):
        return self.ctx.range(start, stop, step, num_partitions=n)

    def empty(self):
        return self.ctx.empty_dataset()

    # calls
    def call(self, ds, name: str, *args, **kw):
        return getattr(ds, name)(*args, **kw)

    def num_partitions(self, ds) -> int:
        return ds.num_partitions

    def persist(self, ds, level: str):
        from strataflow import StorageLevel

        return ds.persist(StorageLevel.parse(level))

    def is_cached(self, ds) -> bool:
        return ds.is_cached

    def checkpoint(self, ds, kind: str) -> None:
        (ds.local_checkpoint if kind == "local" else ds.checkpoint)()

    def stats(self, s) -> dict:
        if s.count() == 0:
            return {"count": 0}
        return {"count": s.count(), "mean": s.mean(), "variance": s.variance(), "max": s.max(), "min": s.min(),
                "sum": s.sum()}


_CAMEL = {
    "map_values": "mapValues", "flat_map": "flatMap", "flat_map_values": "flatMapValues",
    "map_partitions": "mapPartitions", "map_partitions_with_index": "mapPartitionsWithIndex",
    "partition_by": "partitionBy", "reduce_by_key": "reduceByKey", "fold_by_key": "foldByKey",
    "aggregate_by_key": "aggregateByKey", "combine_by_key": "combineByKey", "group_by_key": "groupByKey",
    "group_by": "groupBy", "sort_by_key": "sortByKey", "sort_by": "sortBy",
    "repartition_and_sort_within_partitions": "repartitionAndSortWithinPartitions", "left_outer_join": "leftOuterJoin",
    "right_outer_join": "rightOuterJoin", "full_outer_join": "fullOuterJoin", "subtract_by_key": "subtractByKey",
    "zip_with_index": "zipWithIndex", "zip_with_unique_id": "zipWithUniqueId", "sample_by_key": "sampleByKey",
    "count_by_key": "countByKey", "count_by_value": "countByValue", "take_ordered": "takeOrdered",
    "collect_as_map": "collectAsMap", "reduce_by_key_locally": "reduceByKeyLocally", "tree_reduce": "treeReduce",
    "tree_aggregate": "treeAggregate", "count_approx_distinct": "countApproxDistinct", "take_sample": "takeSample",
    "random_split": "randomSplit", "is_empty": "isEmpty", "local_checkpoint": "localCheckpoint",
}
_CAMEL_KW = {"num_partitions": "numPartitions", "key_func": "keyfunc", "partition_func": "partitionFunc",
             "seed": "seed"}


class SparkApi(Api):
    """PySpark's RDD API under strataflow's names (a SparkContext ``sc``)."""

    name = "pyspark"

    def parallelize(self, rows: list, n: int):
        return self.ctx.parallelize(rows, n)

    def from_numpy(self, array: np.ndarray, n: int):
        return self.ctx.parallelize(list(array), n)

    def from_arrow(self, table, n: int):
        return self.ctx.parallelize(list(zip(*(c.to_pylist() for c in table.columns))), n)

    def from_pandas(self, df, n: int):
        return self.ctx.parallelize(list(df.itertuples(index=False, name=None)), n)

    def range(self, start: int, stop: int, step: int, n: int):
        return self.ctx.range(start, stop, step, numSlices=n)

    def empty(self):
        return self.ctx.emptyRDD()

    def call(self, ds, name: str, *args, **kw):
        if name == "combine_by_key":
            kw.pop("map_side_combine", None)  # PySpark's combineByKey has none
        if name == "cogroup" and len(args) == 2:
            return ds.groupWith(*args)  # PySpark's cogroup takes one other dataset
        if name == "intersection":
            args = args[:1]  # no numPartitions
        kw = {_CAMEL_KW.get(k, k): v for k, v in kw.items()}
        return getattr(ds, _CAMEL.get(name, name))(*args, **kw)

    def num_partitions(self, ds) -> int:
        return ds.getNumPartitions()

    def persist(self, ds, level: str):
        from pyspark import StorageLevel

        spark_level = getattr(StorageLevel, level, None)
        return ds.persist(spark_level if isinstance(spark_level, StorageLevel) else StorageLevel.MEMORY_AND_DISK)

    def is_cached(self, ds) -> bool:
        return ds.is_cached

    def checkpoint(self, ds, kind: str) -> None:
        (ds.localCheckpoint if kind == "local" else ds.checkpoint)()

    def stats(self, s) -> dict:
        if s.count() == 0:
            return {"count": 0}
        return {"count": s.count(), "mean": s.mean(), "variance": s.variance(), "max": s.max(), "min": s.min(),
                "sum": s.sum()}


@dataclass
class Built:
    """What a program made that outlives its run: the datasets it persisted."""

    persisted: list = field(default_factory=list)
    kill_marker: str | None = None


def _k(n):
    return {} if n is None else {"num_partitions": n}


def build(api: Api, p: Pipeline, built: Built) -> Any:
    s = p.source
    if s.kind == "empty":
        ds = api.empty()
    elif s.kind in ("list", "num_list"):
        ds = api.parallelize(list(s.data), s.nparts)
    elif s.kind in ("numpy2", "num_numpy"):
        ds = api.from_numpy(s.numpy(), s.nparts)
    elif s.kind == "arrow":
        ds = api.from_arrow(s.arrow(), s.nparts)
    elif s.kind == "pandas":
        ds = api.from_pandas(s.pandas(), s.nparts)
    elif s.kind == "num_range":
        ds = api.range(*s.spec, s.nparts)
    else:
        raise ValueError(s.kind)
    for st in p.steps:
        ds = _step(api, ds, st, built, s)
    return ds


def _step(api: Api, ds, st: Step, built: Built, source) -> Any:
    c, op, a = api.call, st.op, st.args
    sub = [build(api, x, built) if isinstance(x, Pipeline) else x for x in a]
    if op == "map_key":
        return c(ds, "map", functools.partial(F.r_map_key, getattr(F, a[0])))
    if op == "map_n":
        g = getattr(F, a[0])
        if a[1] == "map":
            return c(ds, "map", functools.partial(F.r_map_n, g))
        return c(ds, "map_values", functools.partial(F.v_map_n, g))
    if op in ("filter", "flat_map", "flat_map_values", "map_partitions", "map_partitions_with_index"):
        return c(ds, op, getattr(F, a[0]))
    if op in ("swap", "nest", "rekey_n"):
        return c(ds, "map", getattr(F, f"r_{op}"))
    if op == "to_pair":
        return c(ds, "map", F.row_to_pair if source.kind == "numpy2" else F.row3_to_pair)
    if op == "row_filter":
        return c(ds, "filter", F.row_n_even)
    if op == "num_filter":
        return c(ds, "filter", F.num_gt1)
    if op == "num_map":
        return c(ds, "map", F.num_sq)
    if op == "sample01":
        return c(ds, "sample", a[0], a[1], a[2])
    if op == "sample_by_key01":
        return c(ds, "sample_by_key", False, dict(a[0]), a[1])
    if op in ("persist", "cache"):
        if not api.is_cached(ds):  # partition_by of a dataset so partitioned returns it: persisted once
            ds = api.persist(ds, a[0]) if op == "persist" else c(ds, "cache")
            built.persisted.append(ds)
        return ds
    if op == "checkpoint":
        api.checkpoint(ds, a[0])
        return ds
    if op == "kill":
        return c(ds, "map", F.KillOnce(built.kill_marker or os.devnull, os.getpid()))
    if op == "coalesce":
        return c(ds, "coalesce", a[0])
    if op == "coalesce_shuffle":
        return c(ds, "coalesce", a[0], True)
    if op == "repartition":
        return c(ds, "repartition", a[0])
    if op == "partition_by":
        return c(ds, "partition_by", a[0], getattr(F, a[1])) if a[1] else c(ds, "partition_by", a[0])
    if op == "reduce_by_key":
        return c(ds, "reduce_by_key", getattr(F, a[0]), a[1])
    if op == "fold_by_key":
        return c(c(ds, "map_values", F.to_bag), "fold_by_key", (0, ()), F.v_add_bag, a[0])
    if op == "aggregate_by_key":
        return c(c(ds, "aggregate_by_key", (0, 0, ()), F.agg_seq, F.agg_comb, a[0]), "map_values", F.agg_to_value)
    if op == "combine_by_key":
        out = c(ds, "combine_by_key", F.cb_create, F.cb_merge_value, F.cb_merge_combiners, a[0],
                map_side_combine=a[1])
        return c(out, "map_values", F.group_merge)
    if op == "group_by_key":
        return c(c(ds, "group_by_key", a[0]), "map_values", F.group_merge)
    if op == "group_by":
        return c(c(ds, "group_by", F.first, a[0]), "map_values", F.group_records)
    if op == "distinct":
        return c(ds, "distinct", a[0])
    if op == "cogroup":
        others = [sub[0]] + ([sub[2]] if sub[2] is not None else [])
        return c(c(ds, "cogroup", *others, **_k(a[1])), "map_values", F.cogroup_merge)
    if op in ("join", "left_outer_join", "right_outer_join", "full_outer_join"):
        return c(c(ds, op, sub[0], a[1]), "map_values", F.join_merge)
    if op in ("subtract_by_key", "subtract", "intersection"):
        return c(ds, op, sub[0], a[1])
    if op == "union":
        return c(ds, "union", sub[0])
    if op == "cartesian":
        return c(c(ds, "cartesian", sub[0]), "map", F.cart_to_pair)
    if op == "zip_self":
        other = c(ds, "map_values", functools.partial(F.v_map_n, getattr(F, a[0])))
        return c(c(ds, "zip", other), "map", F.zip_to_pair)
    if op in ("zip_with_index", "zip_with_unique_id"):
        return c(c(ds, op), "map", F.index_to_pair)
    if op == "sort_by_key":
        kw = {"key_func": F.ck} if a[2] == "ck" else {}
        return c(ds, "sort_by_key", a[0], a[1], **kw)
    if op == "sort_by":
        return c(ds, "sort_by", F.record_ck, a[0], a[1])
    if op == "repartition_and_sort":
        kw = {"key_func": F.ck} if a[3] == "ck" else {}
        return c(ds, "repartition_and_sort_within_partitions", a[0], getattr(F, a[1]), a[2], **kw)
    raise ValueError(f"unknown step {op}")


def partition_rows(value) -> list:
    """A partition's value (a glom record: a list, an ndarray, an Arrow table) as its rows."""
    if isinstance(value, np.ndarray):
        return [value[()]] if value.ndim == 0 else list(value)
    if hasattr(value, "column_names") and hasattr(value, "columns"):
        return list(zip(*(c.to_pylist() for c in value.columns)))
    return list(value)


def act(api: Api, ds, action: Step, kind: str) -> Any:
    """The action's answer (an exception is returned, not raised)."""
    try:
        return _act(api, ds, action, kind)
    except Exception as exc:  # noqa: BLE001 - compared against the model's expectation
        return exc


def _act(api: Api, ds, action: Step, kind: str) -> Any:
    c, op, a = api.call, action.op, action.args
    if op == "collect":
        return (c(ds, "collect"), api.num_partitions(ds))
    if op == "glom":
        return [partition_rows(p) for p in c(c(ds, "glom"), "collect")]
    if op in ("count", "is_empty", "first", "count_by_key", "count_by_value", "collect_as_map"):
        return c(ds, op)
    if kind == "num":
        if op == "reduce":
            return c(ds, "reduce", F.NUMERIC_REDUCERS[a[0]])
        if op == "stats":
            return api.stats(c(ds, "stats"))
        if op == "histogram":
            return c(ds, "histogram", list(a[0]))
        return c(ds, op, *a)
    if op == "sum_n":
        return c(c(ds, "map", F.n_of), "sum")
    if op == "mean_n":
        return c(c(ds, "map", F.n_of), "mean")
    if op == "stats_n":
        return api.stats(c(c(ds, "map", F.n_of), "stats"))
    if op in ("reduce", "tree_reduce"):
        return c(c(ds, "values"), op, getattr(F, a[0]))
    if op == "fold":
        return c(c(c(ds, "values"), "map", F.to_bag), "fold", (0, ()), F.v_add_bag)
    if op == "aggregate":
        return c(c(ds, "values"), "aggregate", (0, 0, ()), F.agg_seq, F.agg_comb)
    if op == "tree_aggregate":
        return c(c(ds, "values"), "tree_aggregate", (0, 0, ()), F.agg_seq, F.agg_comb, a[0])
    if op == "reduce_by_key_locally":
        return c(ds, op, getattr(F, a[0]))
    if op in ("lookup", "take"):
        return c(ds, op, a[0])
    if op in ("top", "take_ordered"):
        return c(ds, op, a[0], key=F.record_ck)
    if op == "take_ordered_keys":
        return c(c(ds, "keys"), "take_ordered", a[0])
    if op == "top_keys":
        return c(c(ds, "keys"), "top", a[0])
    if op in ("max", "min"):
        return c(ds, op, key=F.record_ck)
    if op == "histogram_n":
        return c(c(ds, "map", F.n_of), "histogram", list(a[0]))
    if op == "count_approx_distinct":
        return c(c(ds, "keys"), "count_approx_distinct")
    if op == "sample":
        s = c(ds, "sample", *a)
        return (c(s, "collect"), c(s, "collect"))
    if op == "take_sample":
        return (c(ds, "take_sample", *a), c(ds, "take_sample", *a))
    if op == "random_split":
        splits = c(ds, "random_split", list(a[0]), a[1])
        return ([c(s, "collect") for s in splits], [c(s, "collect") for s in splits])
    raise ValueError(f"unknown action {op}")


def program_kind(program: Program) -> str:
    from differential.model import evaluate

    return evaluate(program.pipe).kind
