"""One Dask run of K-means, in its own process (run by ``dask_peer.py``):

    python -m strataflow.bench.peers.dask_job CONFIG.json RESULT.json

The process starts a ``dask.distributed`` ``LocalCluster`` (``processes``: worker
processes under nannies, bound to 127.0.0.1, no dashboard; or in-process workers on the
``inproc://`` transport, for the tests), loads the text points as a Python user would
with ``dask.delayed`` (``dask.bytes.read_bytes`` splits the file at line boundaries, each
block parsed to a float64 array by pyarrow, the parser strataflow's batches use),
``persist()``s them, counts them, and runs Lloyd's algorithm with strataflow's kernel
(``kmeans_partition``) on every persisted block, one ``dask.compute`` per iteration.

The initial centres are our numpy reference's (``init_centres``: seeded rows of the whole
file, found by their global index in the blocks), so the result can be checked against
``kmeans_numpy`` run from the same start, not only for plausibility.

Why a process of its own: the parent must never hang on a stalled cluster (paused
workers wait for memory that never frees); it kills this process's group after its
time limit. Why the result file and a progress file: a run that dies (``KilledWorker``,
the process killed) still tells how far it got. ``fault`` (tests only) makes a run fail
in a chosen way: ``exit`` ends the process after the load; ``stall`` blocks a task
forever; ``worker_exit`` ends the worker process that runs an iteration's task.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys
import threading
import time
import traceback

import numpy as np

__all__ = ["main", "parse_block"]


def parse_block(block: bytes, dims: int) -> np.ndarray:
    """A block of whole text lines (space-separated coordinates) as a ``(rows, dims)``
    float64 array; an empty block (the file's end) as zero rows."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not block.strip():
        return np.zeros((0, dims))
    names = [f"x{i}" for i in range(dims)]
    table = pacsv.read_csv(pa.py_buffer(block), read_options=pacsv.ReadOptions(column_names=names),
                           parse_options=pacsv.ParseOptions(delimiter=" "),
                           convert_options=pacsv.ConvertOptions(column_types={n: pa.float64() for n in names}))
    out = np.empty((table.num_rows, dims), dtype=np.float64, order="F")
    for i, col in enumerate(table.columns):
        out[:, i] = col.to_numpy()
    return out


def _rows(block: np.ndarray, offsets: list[int]) -> np.ndarray:
    return np.asarray(block[offsets], dtype=np.float64)


def _stall_forever(_block: np.ndarray) -> None:
    threading.Event().wait()  # fault "stall": a task that never ends; the parent kills the process


def _exit_worker(_block: np.ndarray) -> None:
    os._exit(9)  # fault "worker_exit": the worker process dies under its task


class _Progress:
    """Phase marks appended to a JSON-lines file as the run goes (read by the parent
    when the run does not finish)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def mark(self, phase: str, **more) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"phase": phase, "t": time.time(), **more}) + "\n")


def _spill_metrics(client, timeout_s: float = 20.0) -> dict | None:
    """Each live worker's spill counters (``SpillBuffer.cumulative_metrics``:
    ``disk-write``/``disk-read`` bytes, counts, seconds) as ``{"label/unit": value}``
    summed over the workers, with the workers counted and the largest worker's peak RSS
    (in-process workers: the whole process's); None when the workers do not
    answer in ``timeout_s`` (a worker restarted by its nanny starts from zero: its
    predecessor's counters are lost)."""

    def read(dask_worker):
        import resource

        data = dask_worker.data
        metrics = getattr(data, "cumulative_metrics", {})
        out = {f"{label}/{unit}": float(v) for (label, unit), v in metrics.items()}
        out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
        return out

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        per_worker = pool.submit(client.run, read).result(timeout=timeout_s)
    except Exception:  # noqa: BLE001 - a dead or stalled cluster: no counters
        return None
    finally:
        pool.shutdown(wait=False)
    total: dict = {"workers_answering": len(per_worker), "peak_rss_bytes": 0}
    for metrics in per_worker.values():
        for k, v in metrics.items():
            total[k] = max(total[k], v) if k == "peak_rss_bytes" else total.get(k, 0.0) + v
    return total


def _cached(client) -> dict:
    """What the workers hold after the load: bytes in memory (Dask's ``sizeof``) and on
    disk (pickled), over all workers; read outside the timed phases."""

    def read(dask_worker):
        data = dask_worker.data
        fast = getattr(data, "fast", None)
        memory = int(getattr(fast, "total_weight", 0)) if fast is not None else 0
        spilled = getattr(data, "spilled_total", None)
        return memory, int(spilled.disk) if spilled is not None else 0

    held = list(client.run(read).values())
    return {"memory_bytes": sum(m for m, _ in held), "disk_bytes": sum(d for _, d in held)}


def _cluster(cfg: dict):
    from distributed import LocalCluster

    kw = dict(n_workers=cfg["workers"], threads_per_worker=cfg["threads"], processes=cfg["processes"],
              memory_limit=cfg["memory_limit"], local_directory=cfg["spill_dir"], dashboard_address=None)
    if cfg["processes"]:
        kw.update(host="127.0.0.1", protocol="tcp")
    return LocalCluster(**kw)


def _kmeans(client, cfg: dict, res: dict, progress: _Progress) -> None:
    import dask
    from dask.bytes import read_bytes

    from strataflow.workloads.kmeans import new_centres, kmeans_partition

    dims, k, seed, fault = cfg["dims"], cfg["k"], cfg["seed"], cfg.get("fault")
    t0 = time.perf_counter()
    _, blocks = read_bytes(cfg["data_file"], delimiter=b"\n", blocksize=cfg["blocksize"], sample=False)
    points = [dask.delayed(parse_block)(b, dims) for b in blocks[0]]
    points = client.persist(points)
    counts = [int(n) for n in dask.compute(*[dask.delayed(len)(p) for p in points])]
    res["load_s"] = time.perf_counter() - t0
    res.update(points=sum(counts), blocks=len(points))
    progress.mark("loaded", points=sum(counts))
    res["cached_after_load"] = _cached(client)
    if fault == "exit":
        os._exit(3)

    t1 = time.perf_counter()
    n = sum(counts)
    rng = np.random.default_rng(seed)  # init_centres' draw, by global row index
    picked = np.sort(rng.choice(n, size=min(k, n), replace=False))
    starts = np.cumsum([0, *counts])
    wanted: dict[int, list[int]] = {}
    for i in picked:
        b = int(np.searchsorted(starts, i, side="right") - 1)
        wanted.setdefault(b, []).append(int(i - starts[b]))
    rows = dask.compute(*[dask.delayed(_rows)(points[b], offs) for b, offs in sorted(wanted.items())])
    centres = np.concatenate(rows)
    res["init_s"] = time.perf_counter() - t1
    res["iteration_s"], res["costs"] = [], []
    for it in range(cfg["iterations"]):
        t = time.perf_counter()
        if fault in ("stall", "worker_exit"):
            dask.compute(dask.delayed(_stall_forever if fault == "stall" else _exit_worker)(points[0]))
        parts = dask.compute(*[dask.delayed(kmeans_partition)(p, centres) for p in points])
        sums = sum(p[0] for p in parts)
        cnt = sum(p[1] for p in parts)
        res["costs"].append(float(sum(p[2] for p in parts)))
        centres = new_centres(centres, sums, cnt)
        res["iteration_s"].append(time.perf_counter() - t)
        progress.mark("iteration", iteration=it + 1)
    res["fit_s"] = time.perf_counter() - t1
    res["centres"] = centres.tolist()
    res["training_cost"] = res["costs"][-1] if res["costs"] else None


def main(argv: list[str]) -> int:
    cfg_path, out_path = argv
    with open(cfg_path) as f:
        cfg = json.load(f)
    import dask

    dask.config.set(cfg.get("dask_config") or {})
    progress = _Progress(cfg["progress_file"])
    res: dict = {"ok": False}
    cluster = client = None
    try:
        from distributed import Client

        t0 = time.perf_counter()
        cluster = _cluster(cfg)
        client = Client(cluster)
        res["cluster_start_s"] = time.perf_counter() - t0
        progress.mark("started")
        res["workers"] = client.run(lambda dask_worker: {
            "memory_limit": dask_worker.memory_manager.memory_limit,
            "target": dask_worker.memory_manager.memory_target_fraction,
            "spill": dask_worker.memory_manager.memory_spill_fraction,
            "pause": dask_worker.memory_manager.memory_pause_fraction,
            "terminate": dask.config.get("distributed.worker.memory.terminate"),  # the nanny's, from the config
            "threads": dask_worker.state.nthreads})
        import distributed

        res["versions"] = {"dask": dask.__version__, "distributed": distributed.__version__}
        _kmeans(client, cfg, res, progress)
        res["ok"] = True
    except Exception as exc:  # noqa: BLE001 - every failure is reported, with its kind
        res.update(error_type=type(exc).__name__, error=str(exc)[-2000:], traceback=traceback.format_exc(limit=8))
    if client is not None:
        res["spill"] = _spill_metrics(client)
    with open(out_path + ".tmp", "w") as f:
        json.dump(res, f)
    os.replace(out_path + ".tmp", out_path)  # whole or absent: the parent never reads half a result
    try:
        if client is not None:
            client.close(timeout=30)
        if cluster is not None:
            cluster.close(timeout=30)
    except Exception:  # noqa: BLE001 - the result is written; a slow teardown is the parent's to end
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
