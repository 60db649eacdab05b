"""The conformance cases by family, as ``pyspark.sql.functions`` is split: ``core`` is
``cases.CASES`` (the first suite), each other family a module of this package with its
``CASES``. A family's goldens are files of their own (``record.golden_path``), so each is
recorded, and re-recorded, alone: ``record.py --family maths``.
"""

from __future__ import annotations

from conformance.cases import CASES as CORE, Case
from conformance.families import aggregates, arrays_maps, datetimes, maths, strings, structured

__all__ = ["FAMILIES", "ALL_CASES"]

FAMILIES: dict[str, list[Case]] = {"core": CORE, "maths": maths.CASES, "strings": strings.CASES,
                                   "datetimes": datetimes.CASES, "arrays_maps": arrays_maps.CASES,
                                   "aggregates": aggregates.CASES, "structured": structured.CASES}

ALL_CASES: list[Case] = [case for cases in FAMILIES.values() for case in cases]
