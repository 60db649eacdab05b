"""The conformance suite's ``structured`` family against PySpark's recorded answers, in the 8
configurations (``tests/conformance/family_tests.py``; the cases:
``tests/conformance/families/structured.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance.family_tests import family_tests  # noqa: E402

globals().update(family_tests("structured"))
