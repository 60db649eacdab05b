"""Pooling the runs of earlier ``bench`` invocations with this one's (``bench --pool``).

Why. A paired median's 95% interval narrows with the number of repeats, and showing
"AUTO within 1.05x" where the truth is 1.0 takes 30-100 repeats a point on a noisy
machine: hours, more than one sitting. Each invocation's repeats are independent paired
samples (the levels of one repeat ran back to back), so repeats stored by earlier
invocations add to this one's without breaking a pair: evidence accumulates.

What may be pooled: runs of the same experiment, data scale, backend (AUTO's ratio to a
level is not the same on threads as on executor processes) and warm-up (a run that
follows a warm-up of its own configuration meets other memory than one that follows
another level's run: see ``bench --warmup``). A pooled run keeps its
pairs apart from every other invocation's: its ``repeat`` becomes ``"<n>:<repeat>"``,
``n`` numbering the pooled files in the order given.
"""

from __future__ import annotations

import json
import os
import re

__all__ = ["load_results", "meta_backend", "pool_rows"]

_BACKEND_NOTE = re.compile(r"^backend: ([^,]+),")


def load_results(path: str) -> dict:
    """A ``results.json`` written by ``bench`` (or its directory), with a clear error for
    a missing, unreadable or foreign file."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"bench --pool: no results file at {path!r}")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"bench --pool: {path!r} is not a bench results file: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not isinstance(doc.get("meta"), dict):
        raise ValueError(f"bench --pool: {path!r} is not a bench results file (no 'runs' and 'meta')")
    doc["path"] = path
    return doc


def meta_backend(meta: dict) -> str:
    """The backend an invocation ran on: its meta's field, or for files written before
    it existed the backend note; ``default`` where the Context chose."""
    if meta.get("backend"):
        return str(meta["backend"])
    for note in meta.get("notes", []):
        m = _BACKEND_NOTE.match(str(note))
        if m:
            return "default" if m.group(1) == "the Context default" else m.group(1)
    return "default"


def pool_rows(docs: list[dict], experiment: str, scale: float, backend: str,
              warmup: int = 0) -> tuple[list[dict], list[str]]:
    """The rows of ``docs`` to add to an invocation of ``experiment`` at ``scale`` on
    ``backend`` with ``warmup`` untimed runs before each timed one (files written before
    ``--warmup`` existed had none), their repeats renamed apart, and one note per file.
    Raises ValueError naming the file whose runs cannot be compared with this invocation's."""
    rows: list[dict] = []
    notes: list[str] = []
    for n, doc in enumerate(docs, 1):
        meta, path = doc["meta"], doc.get("path", f"file {n}")
        theirs = {"experiment": doc.get("experiment", meta.get("experiment")), "scale": meta.get("scale"),
                  "backend": meta_backend(meta), "warmup": int(meta.get("warmup", 0))}
        ours = {"experiment": experiment, "scale": scale, "backend": backend, "warmup": warmup}
        for key, value in ours.items():
            if key == "scale" and theirs[key] is not None and float(theirs[key]) == float(value):
                continue
            if theirs[key] != value:
                raise ValueError(f"bench --pool: {path!r} holds {key} {theirs[key]!r}, this run {value!r}: "
                                 f"their runs are not comparable")
        repeats = set()
        for row in doc["runs"]:
            row = dict(row)
            repeats.add(row.get("repeat"))
            row["repeat"] = f"{n}:{row.get('repeat')}"
            rows.append(row)
        notes.append(f"pooled {len(doc['runs'])} runs ({len(repeats)} repeats) from {path}")
    return rows, notes
