"""The summary's rows about the store's input cache (issue 53), from the run's ``InputRead``
events (one per partition of a file reader, ``store/input_reader.py``): per input, its
partitions served from the cache, decoded, and not cacheable (with the reason), the bytes
mapped and the decode seconds saved. No rows when no reader went through the cache."""

from __future__ import annotations

from strataflow.report.summary import Row

__all__ = ["input_rows"]


def input_rows(events: list[dict]) -> list[Row]:
    per: dict[str, dict] = {}
    for e in events:
        if e.get("event") != "InputRead":
            continue
        d = per.setdefault(e.get("path", "?"), {"hit": 0, "miss": 0, "uncacheable": 0, "bytes": 0, "saved": 0.0,
                                                 "parse": 0.0, "reason": ""})
        d[e.get("result", "miss")] = d.get(e.get("result", "miss"), 0) + 1
        d["bytes"] += e.get("bytes", 0) or 0
        d["saved"] += e.get("parse_s_saved", 0.0) or 0.0
        d["parse"] += e.get("parse_s", 0.0) or 0.0
        d["reason"] = e.get("reason") or d["reason"]
    rows = []
    for i, (path, d) in enumerate(sorted(per.items())):
        text = (f"{d['hit']} hits ({d['bytes'] / (1 << 20):,.1f} MiB mapped, {d['saved']:.2f} s of decoding saved), "
                f"{d['miss']} decoded ({d['parse']:.2f} s)")
        if d["uncacheable"]:
            text += f", {d['uncacheable']} not cacheable: {d['reason']}"
        rows.append(Row(f"input_cache_{i}", f"input cache: {path}", d["hit"], text))
    return rows
