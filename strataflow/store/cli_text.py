"""What ``strataflow store rm`` and ``balance`` did, as one line a person reads.

Why: ``rm`` printed nothing and ``balance`` printed ``[]``, so a user could not tell a
removal or a pass that did nothing from one that worked. The moves stay available as JSON
(``balance --json``) for scripts.
"""

from __future__ import annotations

from typing import Iterable

from strataflow.store.catalog import Entry

__all__ = ["size_text", "removed_text", "balance_text"]


def size_text(n: float) -> str:
    """``n`` bytes as ``12.0 MB`` (powers of 1024, as sizes are written to the store)."""
    if n < 1024:
        return f"{n:,.0f} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024:
            return f"{n:,.1f} {unit}"
    return f"{n / 1024:,.1f} TB"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def removed_text(entry: Entry, readers: int) -> str:
    """``removed 'points' (3 blocks, 12.0 MB)``, and when the blocks stay for a while:
    why and until when."""
    if entry.evicted:
        return f"removed {entry.name!r} (it was evicted: no blocks were left)"
    said = f"removed {entry.name!r} ({_count(entry.num_partitions, 'block')}, {size_text(entry.nbytes)})"
    if readers:
        said += (f"; {_count(readers, 'reader')} still hold{'s' if readers == 1 else ''} it: its blocks go when "
                 f"the last one closes it")
    return said


def balance_text(moves: Iterable[dict]) -> str:
    """``balance: moved 4 blocks (30.0 MB) ssd->disk; evicted 0 datasets``, or that
    nothing had to move."""
    moved: dict[tuple[str, str], list[int]] = {}
    evicted: list[dict] = []
    for m in moves:
        if m.get("evicted"):
            evicted.append(m)
            continue
        count = moved.setdefault((m["from"], m["to"]), [0, 0])
        count[0] += 1
        count[1] += int(m["bytes"])
    if not moved and not evicted:
        return ("balance: nothing to move: every tier is within its capacity, and no dataset read again waits "
                "below a tier with room for it")
    parts = [f"moved {_count(n, 'block')} ({size_text(b)}) {src}->{dst}" for (src, dst), (n, b) in moved.items()]
    if evicted:
        names = ", ".join(repr(e["dataset"]) for e in evicted)
        parts.append(f"evicted {_count(len(evicted), 'dataset')} ({size_text(sum(e['bytes'] for e in evicted))}) "
                     f"from {evicted[0]['from']}: {names}")
    else:
        parts.append("evicted 0 datasets")
    return "balance: " + "; ".join(parts)
