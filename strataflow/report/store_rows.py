"""The summary's rows about the shared store (issue 42): what this application did with it
(saves, opens, rebuilds, blocks read; ``StorageLevel.STORE`` hits and puts) and the
store's own figures at the application's end (``StoreFigures``: bytes per tier, moves
between tiers, evictions, rebuilds by every application). No rows when the run never
used the store."""

from __future__ import annotations

from strataflow.report.summary import Row

__all__ = ["store_rows"]

MIB = 1 << 20


def _mib(n: float) -> str:
    return f"{n / MIB:,.2f} MiB"


def store_rows(events: list[dict], cache: dict) -> list[Row]:
    """Rows from the store's events and the run's cache totals (``run_totals()["cache"]``)."""
    kinds = [e["event"] for e in events]
    figures = next((e for e in reversed(events) if e["event"] == "StoreFigures"), None)
    if figures is None and not cache.get("store_puts") and "StoreOpen" not in kinds and "StoreSave" not in kinds:
        return []
    rows = [Row("store_saves", "store: datasets saved", kinds.count("StoreSave"), str(kinds.count("StoreSave"))),
            Row("store_opens", "store: datasets opened (rebuilt from lineage)", kinds.count("StoreOpen"),
                f"{kinds.count('StoreOpen')} ({kinds.count('StoreRebuild')})")]
    if cache.get("store_puts") or cache.get("store_hits"):
        rows.append(Row("store_hits", "store: STORE-level hits (blocks put)", cache.get("store_hits", 0),
                        f"{cache.get('store_hits', 0):,.0f} ({cache.get('store_puts', 0):,.0f}, "
                        f"{_mib(cache.get('store_bytes_written', 0))})"))
    if figures is not None:
        app = figures.get("app") or {}
        rows.append(Row("store_block_reads", "store: blocks this application read (MiB)", app.get("block_reads", 0),
                        f"{app.get('block_reads', 0):,.0f} ({_mib(app.get('bytes_read', 0))})"))
        for tier, n in (figures.get("tiers") or {}).items():
            rows.append(Row(f"store_tier_{tier}", f"store: bytes in tier {tier} at the end", n, _mib(n)))
        rows.append(Row("store_moves", "store: moves down / up between tiers (all applications)",
                        figures.get("moves_down", 0) + figures.get("moves_up", 0),
                        f"{figures.get('moves_down', 0)} ({_mib(figures.get('bytes_moved_down', 0))}) / "
                        f"{figures.get('moves_up', 0)} ({_mib(figures.get('bytes_moved_up', 0))})"))
        if "fetches" in figures:  # a Ray cluster's: blocks sent from one node's store to another's
            rows.append(Row("store_fetches", "store: blocks fetched between nodes (all applications)",
                            figures["fetches"], f"{figures['fetches']} ({_mib(figures.get('bytes_fetched', 0))})"))
        rows.append(Row("store_evictions", "store: evictions / rebuilds (all applications)",
                        figures.get("evictions", 0), f"{figures.get('evictions', 0)} / {figures.get('rebuilds', 0)}"))
    return rows
