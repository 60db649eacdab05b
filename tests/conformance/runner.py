"""Runs the conformance cases on a session — real PySpark's or strataflow's, whose APIs are
the same — and gives each case's outcome in a form both sides encode alike.

An outcome is ``{"name", "type", "rows"}`` (the column Spark names, its type's
``simpleString`` and the values, tagged so that NaN, -0.0, decimals, dates, timestamps,
bytes, maps and structs survive JSON) or ``{"error": class}`` (Spark's error class, or
the exception's type where it has none). Cases run in batches of one query (a select of
many columns); a batch that fails is run again case by case, so one case's error does not
hide the others' values.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any, Iterable

from conformance.cases import Case
from conformance.values import SCHEMA, rows

__all__ = ["CONFIGS", "encode", "run_cases", "error_class"]

#: (form, spark.sql.ansi.enabled, spark.sql.session.timeZone)
CONFIGS = [(form, ansi, tz) for form in ("df", "sql") for ansi in ("false", "true")
           for tz in ("UTC", "America/Los_Angeles")]

#: cases whose element order Spark does not define (a set's order is its hash table's)
UNORDERED = {"collect_set"}

_BATCH = 40


def config_key(form: str, ansi: str, tz: str) -> str:
    return f"{form}|ansi={ansi}|tz={tz}"


def encode(v: Any) -> Any:
    """A value as JSON that tells its type apart (a float is ``{"f": repr}``)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return {"f": "nan" if math.isnan(v) else repr(v)}
    if isinstance(v, Decimal):
        return {"dec": str(v)}
    if isinstance(v, dt.datetime):
        return {"ts": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"bin": bytes(v).hex()}
    if isinstance(v, dict):
        return {"map": [[encode(k), encode(x)] for k, x in v.items()]}
    if hasattr(v, "asDict") and hasattr(v, "__fields__"):
        return {"row": [[k, encode(x)] for k, x in zip(v.__fields__, v)]}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    return {"other": f"{type(v).__name__}:{v!r}"}


def error_class(exc: BaseException) -> str:
    """Spark's error class of ``exc`` (``DIVIDE_BY_ZERO``), else its type's name."""
    for getter in ("getCondition", "getErrorClass"):
        f = getattr(exc, getter, None)
        if f is not None:
            try:
                got = f()
            except Exception:
                got = None
            if got:
                return str(got).split(".")[0]
    return f"{type(exc).__module__}.{type(exc).__name__}"


def _outcome(case: Case, name: str, type_: str, values: list) -> dict:
    enc = [encode(v) for v in values]
    if case.fn in UNORDERED:
        enc = [sorted(v, key=repr) if isinstance(v, list) else v for v in enc]
    return {"name": name, "type": type_, "rows": enc}


def _table(spark: Any) -> Any:
    df = spark.createDataFrame(rows(), SCHEMA).coalesce(1)
    df.createOrReplaceTempView("vals")
    return df


def _select(spark: Any, F: Any, df: Any, form: str, cases: list[Case], alias: bool) -> Any:
    if form == "df":
        cols = [c.column(F) for c in cases]
        return df.select(*[x.alias(f"c{i}") for i, x in enumerate(cols)] if alias else cols)
    items = [f"{c.sql()} AS c{i}" if alias else c.sql() for i, c in enumerate(cases)]
    return spark.sql(f"SELECT {', '.join(items)} FROM vals")


def run_cases(spark: Any, F: Any, cases: Iterable[Case], form: str, ansi: str, tz: str) -> dict[str, dict]:
    """case id -> outcome, for ``cases`` run in ``form`` (``df`` or ``sql``) under the
    given ANSI mode and session time zone."""
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    spark.conf.set("spark.sql.session.timeZone", tz)
    df = _table(spark)
    out: dict[str, dict] = {}
    typed: list[tuple[Case, str, str]] = []
    cases = list(cases)

    def analyse(batch: list[Case]) -> None:
        """Names and types of ``batch`` in one query; where one case is refused, each half
        again, down to the case whose outcome is its error."""
        try:
            fields = _select(spark, F, df, form, batch, alias=False).schema.fields
            typed.extend((case, f.name, f.dataType.simpleString()) for case, f in zip(batch, fields))
        except Exception as exc:  # noqa: BLE001 - the outcome is the error
            if len(batch) == 1:
                out[batch[0].id] = {"error": error_class(exc)}
            else:
                analyse(batch[:len(batch) // 2])
                analyse(batch[len(batch) // 2:])

    for start in range(0, len(cases), _BATCH):
        analyse(cases[start:start + _BATCH])
    order = {id(case): i for i, case in enumerate(cases)}
    typed.sort(key=lambda t: order[id(t[0])])
    for agg in (False, True):
        group = [t for t in typed if t[0].agg == agg]
        for start in range(0, len(group), _BATCH):
            batch = group[start:start + _BATCH]
            try:
                got = _select(spark, F, df, form, [c for c, _, _ in batch], alias=True).collect()
                for i, (case, name, type_) in enumerate(batch):
                    out[case.id] = _outcome(case, name, type_, [r[i] for r in got])
            except Exception:  # noqa: BLE001 - one case's error: run them one by one
                for case, name, type_ in batch:
                    try:
                        got = _select(spark, F, df, form, [case], alias=True).collect()
                        out[case.id] = _outcome(case, name, type_, [r[0] for r in got])
                    except Exception as exc:  # noqa: BLE001
                        out[case.id] = {"error": error_class(exc)}
    return out
