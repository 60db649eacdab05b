"""Conformance cases of the ``functions.arrays_maps`` family (see ``cases.py`` for ``Case``)."""

from __future__ import annotations

from conformance.cases import C, Case, Lit  # noqa: F401

__all__ = ["CASES"]

CASES: list[Case] = []
