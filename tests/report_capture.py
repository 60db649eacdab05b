"""A report rendered with each chart read before it is saved (the report tests' one way
to see what a chart draws: x limits, legends, texts, plot areas)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from strataflow.report import charts, render_report


def render_reading_charts(log: Any, out: Any, read: Callable[..., dict]) -> tuple[dict, dict[str, dict], str]:
    """``render_report(log, out)`` with ``read(fig, path, **kw)`` called on every chart,
    laid out (``fig.canvas.draw()``), as it is saved; returns the result, what ``read``
    gave by chart file name, and the page's HTML."""
    seen: dict[str, dict] = {}
    real_save = charts._save

    def keep(fig, path, **kw):
        fig.canvas.draw()
        seen[str(path).rsplit("/", 1)[-1]] = read(fig, path, **kw)
        return real_save(fig, path, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(charts, "_save", keep)
    try:
        result = render_report(log, out)
    finally:
        mp.undo()
    with open(result["html"], encoding="utf-8") as fh:
        return result, seen, fh.read()
