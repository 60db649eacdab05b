"""An engine's answer against the model's expectation: a message saying how they differ,
or None. Values are compared through ``fns.canon`` (``1 == 1.0``, ``-0.0 == 0.0``,
NaN equal to NaN, one instant in two zones); ordered answers record by record, records
in no promised order as multisets, block by block (see ``model.MData``)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from differential import fns as F
from differential.engine import partition_rows
from differential.model import Expect, MData, match_blocks

__all__ = ["verdict"]


def _close(a, b, rel: float = 1e-9) -> bool:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError, OverflowError):
        return F.canon(a) == F.canon(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) < 500 else text[:500] + "..."


def error_text(exc: BaseException) -> str:
    """An error in a line: for PySpark's Py4JJavaError, the Python worker's own exception
    (the last ``...Error: ...`` line of the trace it carries), not the JVM's frames."""
    text = str(exc)
    if type(exc).__name__ == "Py4JJavaError":
        import re

        found = re.findall(r"^(\w+(?:Error|Exception|Exit)\b.*)$", text, flags=re.M)
        if found:
            return f"{type(exc).__name__} from the worker: {found[-1][:300]}"
    return _short(text)


def verdict(e: Expect, got: Any) -> str | None:
    if isinstance(got, BaseException):
        if e.kind == "error":
            if isinstance(got, ValueError):
                return None
            return f"raised {type(got).__name__}, wanted a ValueError: {error_text(got)}"
        return f"raised {type(got).__name__}: {error_text(got)}"
    if e.kind == "error":
        return f"answered {_short(got)}; the model says: a ValueError (the dataset is empty)"
    if e.kind == "blocks":
        rows, nparts = got if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], list) else (got, None)
        if e.extra.get("nparts") is not None and nparts is not None and nparts != e.extra["nparts"]:
            return f"{nparts} partitions, the model (the docs) say {e.extra['nparts']}"
        return match_blocks(list(rows), e.value)
    if e.kind == "value":
        return None if F.canon(got) == F.canon(e.value) else f"answered {_short(got)}, the model {_short(e.value)}"
    if e.kind == "seq":
        g, w = [F.canon(x) for x in got], [F.canon(x) for x in e.value]
        return None if g == w else f"answered {_short(got)}, the model {_short(e.value)}"
    if e.kind == "dict":
        g = {F.canon(k): F.canon(v) for k, v in dict(got).items()}
        w = {F.canon(k): F.canon(v) for k, v in e.value.items()}
        if g == w:
            return None
        missing = {k: v for k, v in w.items() if g.get(k) != v}
        extra = {k: v for k, v in g.items() if w.get(k) != v}
        return f"dict differs: the model's entries not given {_short(missing)}; given instead {_short(extra)}"
    if e.kind == "approx":
        return None if _close(got, e.value) else f"answered {got!r}, the model {e.value!r}"
    if e.kind == "stats":
        if got.get("count") != e.value.get("count"):
            return f"stats count {got.get('count')}, the model {e.value.get('count')}"
        bad = [k for k in e.value if k != "count" and not _close(got.get(k), e.value[k], 1e-6)]
        return f"stats differ in {bad}: {got}, the model {e.value}" if bad else None
    if e.kind == "check":
        return e.check(got)
    if e.kind == "glom":
        return _glom(e.value, got)
    raise ValueError(e.kind)


def _glom(m: MData, parts: list) -> str | None:
    parts = [partition_rows(p) for p in parts]
    if m.nparts is not None and len(parts) != m.nparts:
        return f"glom: {len(parts)} partitions, the model (the docs) say {m.nparts}"
    flat = [r for p in parts for r in p]
    if Counter(F.canon(r) for r in flat) != Counter(F.canon(r) for r in m.rows):
        return f"glom: the records differ from the model's: {_short(flat)} vs {_short(m.rows)}"
    if m.parts is not None:
        for i, (mine, theirs) in enumerate(zip(parts, m.parts)):
            msg = match_blocks(mine, theirs)
            if msg:
                return f"glom: partition {i}: {msg}"
    if m.hash_keyed:
        where: dict = {}
        for i, p in enumerate(parts):
            for r in p:
                where.setdefault(F.canon(r[0]), set()).add(i)
        split = {k: sorted(v) for k, v in where.items() if len(v) > 1}
        if split:
            k, v = next(iter(split.items()))
            return f"glom: equal keys in several partitions of a hash-partitioned dataset: {len(split)} keys, " \
                   f"e.g. {_short(k)} in partitions {v}"
    return None

