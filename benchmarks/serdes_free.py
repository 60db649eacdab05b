"""Serdes-free caching (issue 5): the mapped levels and the GC-free records cache, against
their targets.

    python benchmarks/serdes_free.py [--points 2000000] [--repeat 3] [--iterations 5]
        [--pressure 4] [--rddtest-mb 1024] [--gc-records 5000000] [--parts a,b,c,d,rddtest]
        [--cache-dir DIR] [--data DIR] [--out FILE]

Every part runs its variants interleaved (the order is reversed on every other repeat),
``--repeat`` times, and reports medians. The JSON document goes to stdout (and to
``--out``); progress, the table and the target checks go to stderr.

a. K-means batches (npy points, 20 dims, K=10; points and, as MLlib does, their norms
   persisted; run through ``run_workload``) with the cached data ``--pressure`` (4) times
   the memory budget: DISK_MMAP against MEMORY_AND_DISK with the ``pickle`` and with the
   ``arrow`` serializer. Per-iteration time (median of iterations 2.., the first also
   computes the norms) and ``deserialize_s`` as a fraction of the iterations' total time.
   DISK_MMAP's memory part is the page cache (``mmap_memory`` unbounded); the budget bounds
   the heap storage of MEMORY_AND_DISK. Target: below 2% with DISK_MMAP.
b. Cold DISK_MMAP K-means (points only, ``kmeans(norms=None)`` one iteration at a time):
   before each iteration the segment files' pages are dropped (``madvise(MADV_DONTNEED)``
   on the store's maps through ``release_pages``, then ``posix_fadvise(DONTNEED)`` on every
   segment file; ``mincore`` confirms what stays resident). Reported: MB/s of cached bytes
   per iteration, beside the device's cold sequential read bandwidth measured here on the
   same directory (``probe_bandwidth``) and beside the compute floor: the same kernel on
   the same partitions copied into memory, on ``--parallelism`` threads with the
   Context's BLAS limits. Target: >= 0.8 of the device's bandwidth, or the iteration
   within 1.2x of the compute floor.
c. Warm DISK_MMAP K-means (as a.) against MEMORY_ONLY, both with ample memory
   (``--ample-memory``). Target: iterations within 1.2x.
d. GC: ``--gc-records`` (5M) Python records ``(int, str, [int])`` built inside tasks and
   persisted MEMORY_ONLY, then ``gc.collect(2)`` timed ``--gc-collects`` times, and the
   ``gc_s`` metric over three jobs over the cached records; ``gc_free_cache`` on and off,
   each in its own subprocess (frozen objects of one must not help the other). Target:
   gen-2 collection time >= 5x lower with the GC-free cache.
rddtest. RDDTest vectors (batches: one (rows, 20) float64 array per task) of
   ``--rddtest-mb`` at DISK_MMAP against MEMORY_AND_DISK with pickle and arrow, under the
   same pressure: time to cache (first job), time to read (median read pass),
   deserialize_s.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import mmap
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from strataflow import Context  # noqa: E402
from strataflow.bench.devices import probe_bandwidth  # noqa: E402
from strataflow.storage.level import StorageLevel  # noqa: E402
from strataflow.workloads import kmeans_job, rddtest_job  # noqa: E402
from strataflow.workloads.api import read_manifest  # noqa: E402
from strataflow.workloads.kmeans import kmeans, kmeans_numpy, kmeans_partition, sample_centres  # noqa: E402
from strataflow.workloads.runner import run_workload  # noqa: E402
from strataflow.bench.report import emit_json  # noqa: E402

MB = 2**20
med = statistics.median
console = Console(stderr=True, width=160)


def log(msg: str) -> None:
    console.print(msg, highlight=False)


def orders(variants: list, rep: int) -> list:
    return list(variants) if rep % 2 == 0 else list(reversed(variants))


# -- data -----------------------------------------------------------------------------------------
def kmeans_data(root: str, points: int) -> str:
    out = os.path.join(root, f"kmeans-{points}-npy")
    if not os.path.exists(os.path.join(out, "manifest.json")):
        log(f"generating {points:,} K-means points (npy) in {out}")
        kmeans_job.gen(out, size=points * 20 * 8, points=points, seed=0, fmt="npy")
    return out


def rddtest_data(root: str, mb: int) -> str:
    out = os.path.join(root, f"rddtest-vectors-{mb}mb")
    if not os.path.exists(os.path.join(out, "manifest.json")):
        rddtest_job.gen(out, size=mb * MB, kind="vectors")
    return out


# -- a and c: K-means through the runner ------------------------------------------------------------
def kmeans_run(data: str, level: str, serializer: str | None, memory: int, args, cache_base: str,
               check: bool) -> dict:
    gc.collect()
    r = run_workload("kmeans", data, api="batches", level=level, serializer=serializer, memory=memory,
                     parallelism=args.parallelism, local_dirs=[cache_base], iterations=args.iterations,
                     check=check)
    if r["result_check"] != "ok":
        raise SystemExit(f"kmeans {level} {serializer}: {r['result_check']}")
    it = r["iteration_s"]
    m = r["metrics"]
    return {"iteration_s": med(it[1:] if len(it) > 1 else it), "first_iteration_s": it[0],
            "iterations_total_s": sum(it), "total_s": r["total_s"], "deserialize_s": m["deserialize_s"],
            "deserialize_fraction": m["deserialize_s"] / sum(it), "serialize_s": m["serialize_s"],
            "disk_bytes_read": m["disk_bytes_read"], "disk_hits": m["disk_hits"], "memory_hits": m["memory_hits"],
            "major_page_faults": m["major_page_faults"], "mmap_bytes_mapped": m["mmap_bytes_mapped"],
            "cached_memory_mb": r["cached_memory_bytes"] / MB, "cached_disk_mb": r["cached_disk_bytes"] / MB,
            "gc_s": m["gc_s"], "all_iteration_s": it}


def medians(runs: list[dict]) -> dict:
    out = {}
    for k, v in runs[0].items():
        if isinstance(v, (int, float)):
            out[k] = med(r[k] for r in runs)
    out["runs_iteration_s"] = [r["iteration_s"] for r in runs]
    return out


def kmeans_parts(data: str, args, cache_base: str, do_a: bool, do_c: bool) -> tuple[dict, dict]:
    ample = args.ample_memory
    log("measuring the cached size (MEMORY_ONLY, ample memory)")
    probe = run_workload("kmeans", data, api="batches", level="MEMORY_ONLY", memory=ample,
                         parallelism=args.parallelism, local_dirs=[cache_base], iterations=1, check=False)
    cached = probe["cached_memory_bytes"]
    budget = max(1 << 20, int(cached / args.pressure))
    log(f"K-means: {args.points:,} points, cached points+norms {cached / MB:,.1f} MB, "
        f"budget {budget / MB:,.1f} MB (x{args.pressure:g}), ample {ample}")
    variants = []
    if do_a:
        variants += [("a", "DISK_MMAP", None, budget), ("a", "MEMORY_AND_DISK", "pickle", budget),
                     ("a", "MEMORY_AND_DISK", "arrow", budget)]
    if do_c:
        variants += [("c", "DISK_MMAP", None, ample), ("c", "MEMORY_ONLY", None, ample)]
    runs: dict = {v: [] for v in variants}
    for rep in range(args.repeat):
        for v in orders(variants, rep):
            part, level, ser, memory = v
            r = kmeans_run(data, level, ser, memory, args, cache_base, check=(rep == 0))
            runs[v].append(r)
            log(f"  {part} {level:<16} {ser or 'auto':<7} rep {rep}: iteration {r['iteration_s']:.3f} s, "
                f"deserialize {r['deserialize_s']:.3f} s ({100 * r['deserialize_fraction']:.2f}%)")
    a = {"points": args.points, "cached_mb": cached / MB, "budget_mb": budget / MB, "pressure": args.pressure,
         "note": "deserialize_s is summed over the task threads; deserialize_fraction = deserialize_s / the "
                 "wall time of all iterations; iteration_s = median of iterations 2..",
         "variants": {}}
    c = {"points": args.points, "cached_mb": cached / MB, "memory": ample, "variants": {}}
    for (part, level, ser, _), rs in runs.items():
        key = f"{level}/{ser}" if ser else level
        (a if part == "a" else c)["variants"][key] = medians(rs)
    if do_c:
        mm, mo = c["variants"]["DISK_MMAP"], c["variants"]["MEMORY_ONLY"]
        c["mmap_over_memory_only"] = mm["iteration_s"] / mo["iteration_s"]
    return a, c


# -- b: cold K-means ------------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def resident_bytes(paths: list[str]) -> int:
    """Bytes of these files in the page cache (mincore on a fresh map of each)."""
    total = 0
    for p in paths:
        try:
            size = os.stat(p).st_size
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            if size == 0:
                continue
            addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                continue
            try:
                pages = -(-size // mmap.PAGESIZE)
                vec = (ctypes.c_ubyte * pages)()
                if _libc.mincore(addr, size, vec) == 0:
                    total += int((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) * mmap.PAGESIZE
            finally:
                _libc.munmap(addr, size)
        finally:
            os.close(fd)
    return total


def drop_cache(ctx) -> None:
    """Out of the page cache: the store's maps' pages (madvise, so fadvise can drop them),
    then every segment file whole (fadvise DONTNEED)."""
    for bid, _ in ctx.regions.entries():
        ctx.regions.release_pages(bid)
    for path in ctx.regions.segments():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def fsync_segments(ctx) -> None:
    for path in ctx.regions.segments():  # dirty pages would stay in the page cache
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def cold_once(data: str, args, cache_base: str, check: bool) -> dict:
    manifest = read_manifest(data)
    parts_n = 4 * args.parallelism  # as kmeans_job.run
    gc.collect()
    with Context(memory=max(1 << 20, int(args.points * 21 * 8 / args.pressure)), parallelism=args.parallelism,
                 local_dirs=[cache_base], progress=False) as ctx, \
            ThreadPoolExecutor(max_workers=args.parallelism) as pool:
        points = kmeans_job.load(ctx, data, manifest, "batches", parts_n)
        points.name = "points"
        points.persist(StorageLevel.DISK_MMAP)
        init = sample_centres(points, 10, 0)  # the pass that caches the points
        cached = sum(e.length for _, e in ctx.regions.entries())
        in_memory = [np.array(p) for p in points.collect_partitions()]  # first read: checksums verified here
        fsync_segments(ctx)
        centres = init
        cold, floor, faults, resident, warm = [], [], [], [], []
        for it in range(args.iterations):
            c = centres
            t0 = time.perf_counter()
            list(pool.map(lambda a: kmeans_partition(a, c), in_memory))
            floor.append(time.perf_counter() - t0)
            drop_cache(ctx)
            resident.append(resident_bytes(ctx.regions.segments()))
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
            res = kmeans(points, 10, 1, init=c, norms=None)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_majflt - f0)
            cold.append(res.iteration_s[0])
            centres = res.centres
        res = kmeans(points, 10, 1, init=centres, norms=None)  # one warm iteration, for reference
        warm.append(res.iteration_s[0])
        deser = ctx.metrics()["deserialize_s"]
    checked = None
    if check:
        ref = kmeans_numpy(np.load(os.path.join(data, manifest["files"][0])), init, args.iterations, parts_n)
        checked = bool(np.allclose(ref.centres, centres, rtol=1e-9, atol=1e-6))
        if not checked:
            raise SystemExit("cold K-means: centres differ from the numpy loop")
    del in_memory
    log(f"  b rep: cold iteration {med(cold):.3f} s ({cached / MB / med(cold):,.0f} MB/s), floor {med(floor):.3f} s, "
        f"major faults/iter {med(faults):,.0f}, resident before {max(resident) / MB:.1f} MB")
    return {"cached_mb": cached / MB, "cold_iteration_s": med(cold), "floor_s": med(floor),
            "cold_runs": cold, "floor_runs": floor, "warm_iteration_s": warm[0],
            "major_page_faults_per_iteration": med(faults),
            "resident_mb_before_iteration_max": max(resident) / MB, "deserialize_s": deser,
            "read_mb_per_s": cached / MB / med(cold), "checked_against_numpy": checked}


def cold_part(data: str, args, cache_base: str) -> dict:
    runs, probes = [], []
    size = max(256 * MB, min(2048 * MB, args.points * 20 * 8))
    for rep in range(args.repeat):
        steps = orders(["probe", "kmeans"], rep)
        for s in steps:
            if s == "probe":
                gc.collect()
                p = probe_bandwidth(cache_base, size, cold=True)
                probes.append(p["read_mb_per_s"])
                log(f"  b rep {rep}: device cold sequential read {p['read_mb_per_s']:,.0f} MB/s "
                    f"({p['bytes'] / MB:,.0f} MB), write {p['write_mb_per_s']:,.0f} MB/s")
            else:
                runs.append(cold_once(data, args, cache_base, check=(rep == 0)))
    cold_s = med(r["cold_iteration_s"] for r in runs)
    floor_s = med(r["floor_s"] for r in runs)
    cached = runs[0]["cached_mb"]
    device = med(probes)
    return {"points": args.points, "cached_mb": cached, "cold_iteration_s": cold_s, "compute_floor_s": floor_s,
            "warm_iteration_s": med(r["warm_iteration_s"] for r in runs),
            "read_mb_per_s": cached / cold_s, "device_read_mb_per_s": device,
            "read_bw_fraction": cached / cold_s / device, "iteration_over_floor": cold_s / floor_s,
            "major_page_faults_per_iteration": med(r["major_page_faults_per_iteration"] for r in runs),
            "resident_mb_before_iteration_max": max(r["resident_mb_before_iteration_max"] for r in runs),
            "probe_mb": size / MB, "device_runs": probes, "runs": runs,
            "directory": cache_base}


# -- d: GC ----------------------------------------------------------------------------------------
def _record(i: int) -> tuple:
    return (i, f"record-{i}", [i])


def gc_child(flag: bool, args) -> dict:
    """One process, one Context: cache the records, time full collections and jobs."""
    with tempfile.TemporaryDirectory(prefix="sf-serdes-gc-", dir=args.cache_dir) as tmp, \
            Context(memory=args.gc_memory, parallelism=args.parallelism, local_dirs=[tmp], progress=False,
                    gc_free_cache=flag) as ctx:
        ds = ctx.range(args.gc_records, num_partitions=args.gc_partitions).map(_record)
        ds.persist(StorageLevel.MEMORY_ONLY)
        t0 = time.perf_counter()
        n = ds.count()
        cache_s = time.perf_counter() - t0
        cache_gc = ctx.metrics()
        status = ctx.storage_status()[0]
        if status.memory_partitions != status.num_partitions:
            raise SystemExit(f"gc child: only {status.memory_partitions}/{status.num_partitions} partitions cached; "
                             f"raise --gc-memory")
        collect_s = []
        for _ in range(args.gc_collects):
            t0 = time.perf_counter()
            gc.collect(2)
            collect_s.append(time.perf_counter() - t0)
        gen2 = {"s": 0.0, "n": 0, "t0": 0.0}

        def full_collections(phase: str, info: dict) -> None:  # gen-2 collections the jobs trigger
            if info.get("generation") == 2:
                if phase == "start":
                    gen2["t0"] = time.perf_counter()
                else:
                    gen2["s"] += time.perf_counter() - gen2["t0"]
                    gen2["n"] += 1

        m0 = ctx.metrics()
        gc.callbacks.append(full_collections)
        t0 = time.perf_counter()
        for _ in range(3):
            ds.map(lambda r: (r[0], r[2][0])).count()
        jobs_s = time.perf_counter() - t0
        gc.callbacks.remove(full_collections)
        m1 = ctx.metrics()
        return {"gc_free_cache": flag, "records": n, "cache_s": cache_s, "cache_gc_s": cache_gc["gc_s"],
                "cache_gc_collections": cache_gc["gc_collections"], "cached_memory_mb": status.memory_bytes / MB,
                "gc_collect_s": med(collect_s), "gc_collect_runs": collect_s,
                "jobs_s": jobs_s, "jobs_gc_s": m1["gc_s"] - m0["gc_s"],
                "jobs_gc_collections": m1["gc_collections"] - m0["gc_collections"],
                "jobs_gen2_s": gen2["s"], "jobs_gen2_collections": gen2["n"],
                "gc_frozen_puts": m1["gc_frozen_puts"], "freeze_count_after_cache": gc.get_freeze_count(),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def gc_part(args) -> dict:
    runs: dict[bool, list] = {True: [], False: []}
    for rep in range(args.repeat):
        for flag in orders([True, False], rep):
            cmd = [sys.executable, os.path.abspath(__file__), "--gc-child", "on" if flag else "off",
                   "--gc-records", str(args.gc_records), "--gc-partitions", str(args.gc_partitions),
                   "--gc-collects", str(args.gc_collects), "--gc-memory", args.gc_memory,
                   "--parallelism", str(args.parallelism)]
            if args.cache_dir:
                cmd += ["--cache-dir", args.cache_dir]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"gc child failed ({p.returncode}):\n{p.stderr[-3000:]}")
            r = json.loads(p.stdout.strip().splitlines()[-1])
            runs[flag].append(r)
            log(f"  d gc_free_cache={flag!s:<5} rep {rep}: gc.collect(2) {1e3 * r['gc_collect_s']:.3f} ms, "
                f"jobs gc_s {r['jobs_gc_s']:.3f} s ({r['jobs_gc_collections']} collections, of which "
                f"{r['jobs_gen2_collections']} gen-2 taking {r['jobs_gen2_s']:.3f} s), "
                f"cache {r['cache_s']:.1f} s (gc_s {r['cache_gc_s']:.2f} s), peak RSS {r['peak_rss_mb']:,.0f} MB")
    on = {k: med(r[k] for r in runs[True]) for k in ("gc_collect_s", "jobs_gc_s", "jobs_s", "cache_s", "peak_rss_mb",
                                                     "cached_memory_mb", "jobs_gc_collections", "jobs_gen2_s",
                                                     "jobs_gen2_collections", "cache_gc_s")}
    off = {k: med(r[k] for r in runs[False]) for k in on}
    return {"records": args.gc_records, "record": "(int, str, [int])", "partitions": args.gc_partitions,
            "gc_free": on, "plain": off, "runs": {"gc_free": runs[True], "plain": runs[False]},
            "gc_collect_ratio": off["gc_collect_s"] / max(on["gc_collect_s"], 1e-9),
            "jobs_gc_s_ratio": off["jobs_gc_s"] / max(on["jobs_gc_s"], 1e-9),
            "note": "gc_collect_s: median of timed gc.collect(2) after caching; jobs_*: three jobs over the "
                    "cached records (gc_s: every collection, mostly young ones; gen2: full collections only); "
                    "cache_gc_s: the gc_s metric of the job that builds and caches the records"}


# -- rddtest --------------------------------------------------------------------------------------
def rddtest_part(data: str, args, cache_base: str) -> dict:
    payload = args.rddtest_mb * MB
    budget = max(1 << 20, int(payload / args.pressure))
    variants = [("DISK_MMAP", None), ("MEMORY_AND_DISK", "pickle"), ("MEMORY_AND_DISK", "arrow")]
    runs: dict = {v: [] for v in variants}
    for rep in range(args.repeat):
        for level, ser in orders(variants, rep):
            gc.collect()
            r = run_workload("rddtest", data, api="batches", level=level, serializer=ser, memory=budget,
                             parallelism=args.parallelism, local_dirs=[cache_base], iterations=3, check=(rep == 0))
            if r["result_check"] != "ok":
                raise SystemExit(f"rddtest {level} {ser}: {r['result_check']}")
            m = r["metrics"]
            x = {"cache_s": r["extra"]["cache_s"], "read_s": med(r["iteration_s"]),
                 "deserialize_s": m["deserialize_s"], "serialize_s": m["serialize_s"],
                 "deserialize_fraction_of_reads": m["deserialize_s"] / sum(r["iteration_s"]),
                 "cached_memory_mb": r["cached_memory_bytes"] / MB, "cached_disk_mb": r["cached_disk_bytes"] / MB}
            runs[(level, ser)].append(x)
            log(f"  rddtest {level:<16} {ser or 'auto':<7} rep {rep}: cache {x['cache_s']:.2f} s, "
                f"read {x['read_s']:.3f} s, deserialize {m['deserialize_s']:.3f} s")
    out = {"payload_mb": args.rddtest_mb, "budget_mb": budget / MB, "read_passes": 3, "variants": {}}
    for (level, ser), rs in runs.items():
        out["variants"][f"{level}/{ser}" if ser else level] = {k: med(r[k] for r in rs) for k in rs[0]}
    return out


# -- report ---------------------------------------------------------------------------------------
def targets(result: dict) -> list[dict]:
    out = []
    a = result.get("a_kmeans_pressure")
    if a:
        mm = a["variants"]["DISK_MMAP"]
        others = ", ".join(f"{k} {100 * v['deserialize_fraction']:.1f}%" for k, v in a["variants"].items()
                           if k != "DISK_MMAP")
        out.append({"target": "a. deserialize_s < 2% of iteration time with DISK_MMAP",
                    "value": mm["deserialize_fraction"], "ok": mm["deserialize_fraction"] < 0.02,
                    "text": f"DISK_MMAP {100 * mm['deserialize_fraction']:.3f}% "
                            f"({mm['deserialize_s'] * 1e3:.1f} ms of {mm['iterations_total_s']:.2f} s); {others}"})
    b = result.get("b_kmeans_cold")
    if b:
        ok = b["read_bw_fraction"] >= 0.8 or b["iteration_over_floor"] <= 1.2
        out.append({"target": "b. cold DISK_MMAP: >= 0.8 of device read bandwidth or <= 1.2x the compute floor",
                    "value": [b["read_bw_fraction"], b["iteration_over_floor"]], "ok": ok,
                    "text": f"{b['read_mb_per_s']:,.0f} MB/s = {b['read_bw_fraction']:.2f} of the device's "
                            f"{b['device_read_mb_per_s']:,.0f} MB/s; iteration {b['cold_iteration_s']:.3f} s = "
                            f"{b['iteration_over_floor']:.2f}x the floor {b['compute_floor_s']:.3f} s"})
    c = result.get("c_kmeans_warm")
    if c:
        r = c["mmap_over_memory_only"]
        out.append({"target": "c. warm DISK_MMAP iteration <= 1.2x MEMORY_ONLY", "value": r, "ok": r <= 1.2,
                    "text": f"{c['variants']['DISK_MMAP']['iteration_s']:.3f} s vs "
                            f"{c['variants']['MEMORY_ONLY']['iteration_s']:.3f} s = {r:.2f}x"})
    d = result.get("d_gc")
    if d:
        r = d["gc_collect_ratio"]
        out.append({"target": "d. gen-2 GC time >= 5x lower with gc_free_cache", "value": r, "ok": r >= 5,
                    "text": f"gc.collect(2) {1e3 * d['plain']['gc_collect_s']:.1f} ms plain vs "
                            f"{1e6 * d['gc_free']['gc_collect_s']:.1f} us GC-free = {r:,.0f}x; over 3 jobs: gc_s "
                            f"{d['plain']['jobs_gc_s']:.3f} s vs {d['gc_free']['jobs_gc_s']:.3f} s, gen-2 "
                            f"{d['plain']['jobs_gen2_s']:.3f} s vs {d['gc_free']['jobs_gen2_s']:.3f} s"})
    return out


def print_table(result: dict) -> None:
    t = Table(title="serdes-free caching (medians)")
    for col in ("part", "variant", "iteration / read s", "cache s", "deserialize s", "deser. % of iter/read",
                "notes"):
        t.add_column(col, justify="left" if col in ("part", "variant", "notes") else "right")
    for part, key in (("a", "a_kmeans_pressure"), ("c", "c_kmeans_warm")):
        sec = result.get(key)
        for name, v in (sec or {}).get("variants", {}).items():
            t.add_row(f"{part} kmeans", name, f"{v['iteration_s']:.3f}", "", f"{v['deserialize_s']:.3f}",
                      f"{100 * v['deserialize_fraction']:.2f}",
                      f"mem {v['cached_memory_mb']:,.0f} MB, disk {v['cached_disk_mb']:,.0f} MB")
    b = result.get("b_kmeans_cold")
    if b:
        t.add_row("b cold", "DISK_MMAP", f"{b['cold_iteration_s']:.3f}", "", "", "",
                  f"{b['read_mb_per_s']:,.0f} MB/s, device {b['device_read_mb_per_s']:,.0f} MB/s, "
                  f"floor {b['compute_floor_s']:.3f} s, warm {b['warm_iteration_s']:.3f} s")
    rd = result.get("rddtest_vectors")
    for name, v in (rd or {}).get("variants", {}).items():
        t.add_row("rddtest", name, f"{v['read_s']:.3f}", f"{v['cache_s']:.2f}", f"{v['deserialize_s']:.3f}",
                  f"{100 * v['deserialize_fraction_of_reads']:.2f}",
                  f"mem {v['cached_memory_mb']:,.0f} MB, disk {v['cached_disk_mb']:,.0f} MB")
    d = result.get("d_gc")
    if d:
        for name in ("plain", "gc_free"):
            v = d[name]
            t.add_row("d gc", name, "", f"{v['cache_s']:.1f}", "", "",
                      f"gc.collect(2) {1e3 * v['gc_collect_s']:.3f} ms; caching gc_s {v['cache_gc_s']:.2f} s; "
                      f"3 jobs: gc_s {v['jobs_gc_s']:.3f} s, "
                      f"gen-2 {v['jobs_gen2_s']:.3f} s")
    console.print(t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=2_000_000)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--pressure", type=float, default=4.0, help="cached data / memory budget (a, rddtest)")
    p.add_argument("--ample-memory", default="4GB", help="memory for c")
    p.add_argument("--rddtest-mb", type=int, default=1024)
    p.add_argument("--gc-records", type=int, default=5_000_000)
    p.add_argument("--gc-partitions", type=int, default=16)
    p.add_argument("--gc-collects", type=int, default=5)
    p.add_argument("--gc-memory", default="8GB")
    p.add_argument("--parts", default="a,b,c,d,rddtest")
    p.add_argument("--cache-dir", default=None, help="base directory of the cache files (default: temp dir)")
    p.add_argument("--data", default=None, help="directory for the generated data (kept; default: a temp dir)")
    p.add_argument("--out", default=None, help="also write the JSON here")
    p.add_argument("--gc-child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.gc_child:
        print(json.dumps(gc_child(args.gc_child == "on", args)))
        return
    parts = set(args.parts.split(","))
    cache_base = args.cache_dir or tempfile.gettempdir()
    data_root = args.data or tempfile.mkdtemp(prefix="sf-serdes-data-")
    result: dict = {"machine": {"cpus": os.cpu_count(), "parallelism": args.parallelism,
                                "python": sys.version.split()[0], "numpy": np.__version__},
                    "config": vars(args) | {"cache_dir": cache_base}}
    t0 = time.perf_counter()
    try:
        if parts & {"a", "b", "c"}:
            km = kmeans_data(data_root, args.points)
            if parts & {"a", "c"}:
                log("[bold]a/c[/]: K-means through run_workload")
                a, c = kmeans_parts(km, args, cache_base, "a" in parts, "c" in parts)
                if "a" in parts:
                    result["a_kmeans_pressure"] = a
                if "c" in parts:
                    result["c_kmeans_warm"] = c
            if "b" in parts:
                log("[bold]b[/]: cold DISK_MMAP K-means")
                result["b_kmeans_cold"] = cold_part(km, args, cache_base)
        if "rddtest" in parts:
            log("[bold]rddtest[/]: vectors")
            result["rddtest_vectors"] = rddtest_part(rddtest_data(data_root, args.rddtest_mb), args, cache_base)
        if "d" in parts:
            log("[bold]d[/]: GC, one subprocess per run")
            result["d_gc"] = gc_part(args)
    finally:
        if not args.data:
            shutil.rmtree(data_root, ignore_errors=True)
    result["wall_s"] = time.perf_counter() - t0
    result["targets"] = targets(result)
    print_table(result)
    for tg in result["targets"]:
        log(f"{'PASS' if tg['ok'] else 'FAIL'} {tg['target']}: {tg['text']}")
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
