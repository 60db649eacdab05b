"""Spark master URLs as strataflow Context options: ``local`` is 1 thread, ``local[N]`` is
N, ``local[*]`` (and no master at all) every core, ``local[N, F]`` also allows F attempts
per task; ``ray`` or ``ray://host:port`` runs on a Ray cluster. Other masters
(``spark://``, ``yarn``, ``k8s://``) fail with a clear error.

Apart from ``context.py`` because it is a pure function of a string, tested on its own
(``strataflow.pyspark.context.parse_master`` still names it).
"""

from __future__ import annotations

import os
import re
from typing import Any

from strataflow.config.backends import backend_for_master

__all__ = ["parse_master"]

_LOCAL = re.compile(r"^local(?:\[\s*(\*|\d+)\s*(?:,\s*(\d+)\s*)?\])?$")


def parse_master(master: str | None) -> dict[str, Any]:
    """Context arguments for a master URL."""
    if master is None:
        master = "local[*]"
    m = _LOCAL.match(master.strip())
    if m:
        if m.group(1) == "*":
            n = os.cpu_count() or 1
        else:
            n = int(m.group(1) or 1)  # plain "local": one thread
        if n < 1:
            raise ValueError(f"SparkContext: master {master!r} asks for {n} threads; at least 1 is needed")
        out: dict[str, Any] = {"parallelism": n}
        if m.group(2) is not None:
            out["task_max_failures"] = int(m.group(2))  # Spark's maxFailures: see retries.py
        return out
    if (cluster := backend_for_master(master)) is not None:  # "ray", "ray://host:port"
        return {"backend": cluster[0], "address": cluster[1]}
    raise ValueError(f"SparkContext: master {master!r} is not supported by strataflow; use local, local[N], "
                     "local[*], local[N, maxFailures], ray or ray://host:port")
