"""The applications of the store's tests, each run as its own Python process (``python -c``)
so that the application that saves and the one that opens share nothing but the store's
files: ``run_app(source, ...)`` runs ``source`` with ``ROOT`` (the store's root) and
``ARGS`` set, and returns what it printed last, as JSON."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

REPO = str(pathlib.Path(__file__).resolve().parent.parent)

PRELUDE = """
import json, os, sys
import numpy as np
import pyarrow as pa
from strataflow import Context
ROOT, ARGS = sys.argv[1], json.loads(sys.argv[2])
"""

SAVE_ALL = """
with Context(memory="128MB", parallelism=2, progress=False, store=ROOT) as ctx:
    n = ARGS["rows"]
    points = ctx.from_numpy(np.arange(n * 4, dtype=np.float64).reshape(n, 4), 4)
    ctx.store.save(points.map_partitions(lambda a: a * 2.0), "features")
    ctx.store.save(ctx.parallelize([(i % 7, str(i)) for i in range(100)], 3), "records")
    ctx.store.save(ctx.from_arrow(pa.table({"x": list(range(50)), "y": [str(i) for i in range(50)]}), 2), "table")
    print(json.dumps({"pid": os.getpid(), "names": [e.name for e in ctx.store.ls()]}))
"""

# Each partition of B: where its data lies (the file of /proc/self/maps holding the array's
# first byte, the task's pid), and the values, so the test sees that B's executors mapped
# the store's files themselves and read what A wrote.
OPEN_ALL = """
def mapped_file(addr):
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5].strip() if len(parts) > 5 else ""
    return None

def where(a):
    addr = a.__array_interface__["data"][0]
    return [{"file": mapped_file(addr), "pid": os.getpid(), "writeable": bool(a.flags.writeable),
             "owns": bool(a.flags.owndata), "sum": float(a.sum()), "shape": list(a.shape)}]

with Context(memory="128MB", parallelism=2, progress=False, store=ROOT) as ctx:
    feats = ctx.store.open("features")
    out = {"pid": os.getpid(), "where": feats.map_partitions(where).collect(),
           "features": feats.collect_partitions()[1].tolist(),
           "records": ctx.store.open("records").collect(),
           "table": ctx.store.open("table").map_partitions(lambda t: [t.to_pydict()]).collect()}
    print(json.dumps(out))
"""


def run_app(source: str, root: str, timeout: float = 300, wait: bool = True, **args) -> dict | subprocess.Popen:
    cmd = [sys.executable, "-c", PRELUDE + textwrap.dedent(source), root, json.dumps(args)]
    env = {**os.environ, "PYTHONPATH": REPO}
    if not wait:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"application failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
