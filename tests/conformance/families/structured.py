"""Conformance cases of the ``functions.structured`` family (see ``cases.py`` for ``Case``)."""

from __future__ import annotations

from conformance.cases import C, Case, Lit  # noqa: F401
from conformance.values import COLUMNS

__all__ = ["CASES"]


def _build() -> list[Case]:
    out: list[Case] = []
    add = out.extend
    # -- typeof: every type of the value table, and literals ------------------------------------------
    add([Case("typeof", (C(name),)) for name in COLUMNS])
    add([Case("typeof", (v,)) for v in (1, Lit("x"), True, None)])
    return out


CASES: list[Case] = _build()
