"""Spark's event log of a PySpark peer run, read back: the cache's activity per block
(:func:`block_metrics`) and the stages, jobs, task totals and iteration jobs
(:func:`event_summary`).

Cache events: the event log with ``spark.eventLog.logBlockUpdates.enabled`` has one
``SparkListenerBlockUpdated`` per block status the block manager reports to its master:
when a block is stored, when it is dropped from memory (``dropFromMemory``: to disk, or
discarded for a memory-only level) and when a block is removed singly. Replaying them per
block (see :func:`block_metrics`) gives blocks and bytes dropped, blocks written straight
to disk, disk bytes written, and re-caching as far as Spark shows it: it re-caches a
MEMORY_AND_DISK block read from disk without a report, so a re-cache is seen when that
block is dropped again (a drop report for a block last reported on disk only).

Apart from ``pyspark_peer.py`` because it is a pure replay of JSON events, tested without
pyspark or Java.
"""

from __future__ import annotations

import json

__all__ = ["read_event_log", "block_metrics", "event_summary"]


def read_event_log(path: str) -> list[dict]:
    """The events of a (JSON lines, uncompressed) Spark event log, in order."""
    events = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                events.append(json.loads(line))
    return events


def _rdd_id(block_id: str) -> int | None:
    parts = block_id.split("_")
    return int(parts[1]) if len(parts) == 3 and parts[0] == "rdd" else None


def block_metrics(events: list[dict]) -> dict:
    """Cache activity replayed from ``SparkListenerBlockUpdated`` events, per rdd block.

    Each event is a status the block manager reported: ``Use Memory`` / ``Use Disk`` say
    where the block is now; ``Memory Size`` is its memory size, or, on a drop from memory,
    the size dropped (Spark reports ``max(memSize, droppedMemorySize)``, so a drop shows
    ``Use Memory: false`` with a memory size). Against the block's previous state:

    - none -> in memory: stored in memory (``blocks_stored_memory``);
    - none -> on disk only: stored straight to disk (``blocks_stored_disk``: a
      MEMORY_AND_DISK block with no room in memory, or any DISK_ONLY block);
    - in memory -> not in memory: dropped from memory (``blocks_dropped``,
      ``bytes_dropped``), to disk (``blocks_dropped_to_disk``) or, for a memory-only level,
      discarded (``blocks_discarded``);
    - on disk only -> on disk only with a dropped memory size: the block had been read from
      disk and re-cached in memory, which Spark does not report, and is now dropped again:
      one re-cache (``blocks_recached``, ``bytes_recached``) and one drop;
    - on disk only -> in memory: a reported re-cache (``blocks_recached``).

    ``disk_bytes_written`` adds a block's disk size whenever it goes from not on disk to on
    disk. Blocks of an unpersisted RDD are forgotten (``removeRdd`` removes them without
    reports). ``blocks_recached`` is a lower bound: a re-cached block that is never dropped
    again leaves no trace in the log."""
    state: dict[str, dict] = {}
    m = dict(blocks_stored_memory=0, blocks_stored_disk=0, blocks_dropped=0, bytes_dropped=0,
             blocks_dropped_to_disk=0, blocks_discarded=0, blocks_recached=0, bytes_recached=0,
             disk_bytes_written=0, block_updates=0)
    per_rdd: dict[int, dict] = {}
    empty = {"mem": False, "disk": False, "mem_size": 0, "disk_size": 0}
    for ev in events:
        kind = ev.get("Event")
        if kind == "SparkListenerUnpersistRDD":
            rid = ev.get("RDD ID")
            for bid in [b for b in state if _rdd_id(b) == rid]:
                del state[bid]
            continue
        if kind != "SparkListenerBlockUpdated":
            continue
        info = ev["Block Updated Info"]
        bid = info["Block ID"]
        rid = _rdd_id(bid)
        if rid is None:
            continue
        m["block_updates"] += 1
        lvl = info.get("Storage Level", {})
        mem, disk = int(info.get("Memory Size", 0)), int(info.get("Disk Size", 0))
        new = {"mem": bool(lvl.get("Use Memory")), "disk": bool(lvl.get("Use Disk")), "mem_size": mem,
               "disk_size": disk}
        prev = state.get(bid, empty)
        r = per_rdd.setdefault(rid, {"rdd": rid, "blocks_stored_memory": 0, "blocks_stored_disk": 0,
                                     "blocks_dropped": 0, "bytes_dropped": 0, "blocks_recached": 0})

        def dropped(size: int) -> None:
            m["blocks_dropped"] += 1
            m["bytes_dropped"] += size
            r["blocks_dropped"] += 1
            r["bytes_dropped"] += size
            m["blocks_dropped_to_disk" if new["disk"] else "blocks_discarded"] += 1

        if new["disk"] and not prev["disk"]:
            m["disk_bytes_written"] += disk
        if not prev["mem"] and not prev["disk"]:
            if new["mem"]:
                m["blocks_stored_memory"] += 1
                r["blocks_stored_memory"] += 1
            elif new["disk"]:
                m["blocks_stored_disk"] += 1
                r["blocks_stored_disk"] += 1
        elif prev["mem"] and not new["mem"]:
            dropped(mem or prev["mem_size"])
        elif not prev["mem"] and not new["mem"] and mem > 0:
            m["blocks_recached"] += 1
            m["bytes_recached"] += mem
            r["blocks_recached"] += 1
            dropped(mem)
        elif not prev["mem"] and new["mem"]:
            m["blocks_recached"] += 1
            m["bytes_recached"] += mem
            r["blocks_recached"] += 1
        state[bid] = new if new["mem"] or new["disk"] else empty
    m["per_rdd"] = sorted(per_rdd.values(), key=lambda r: r["rdd"])
    return m


def event_summary(events: list[dict], marks: dict, iteration_job: str = "collectAsMap at KMeans.scala") -> dict:
    """Stages, jobs, task totals, and the iteration jobs' times from the event log."""
    stages, jobs, names = [], {}, {}
    tasks = dict(gc_s=0.0, executor_run_s=0.0, disk_bytes_spilled=0, memory_bytes_spilled=0,
                 shuffle_bytes_written=0, input_bytes=0, tasks=0)
    block_manager_max = None
    rdd_names: dict[int, str] = {}
    for ev in events:
        kind = ev.get("Event")
        if kind == "SparkListenerBlockManagerAdded" and block_manager_max is None:
            block_manager_max = {"max_memory": ev.get("Maximum Memory"), "max_onheap": ev.get("Maximum Onheap Memory"),
                                 "max_offheap": ev.get("Maximum Offheap Memory")}
        elif kind == "SparkListenerStageCompleted":
            si = ev["Stage Info"]
            sub, done = si.get("Submission Time"), si.get("Completion Time")
            for rdd in si.get("RDD Info", []):
                rdd_names[rdd["RDD ID"]] = " ".join(rdd.get("Name", "").split())[:100]
            stages.append({"name": si.get("Stage Name", ""), "seconds": (done - sub) / 1000 if sub and done else None,
                           "tasks": si.get("Number of Tasks"), "stage_id": si.get("Stage ID"),
                           "submitted_ms": sub, "completed_ms": done})
        elif kind == "SparkListenerJobStart":
            infos = ev.get("Stage Infos", [])
            last = max(infos, key=lambda s: s.get("Stage ID", -1)) if infos else {}
            names[ev["Job ID"]] = last.get("Stage Name", "")
            jobs[ev["Job ID"]] = {"job_id": ev["Job ID"], "name": last.get("Stage Name", ""),
                                  "submitted_ms": ev.get("Submission Time")}
        elif kind == "SparkListenerJobEnd" and ev.get("Job ID") in jobs:
            j = jobs[ev["Job ID"]]
            j["completed_ms"] = ev.get("Completion Time")
            j["result"] = ev.get("Job Result", {}).get("Result")
            if j.get("submitted_ms") and j["completed_ms"]:
                j["seconds"] = (j["completed_ms"] - j["submitted_ms"]) / 1000
        elif kind == "SparkListenerTaskEnd":
            tm = ev.get("Task Metrics") or {}
            tasks["tasks"] += 1
            tasks["gc_s"] += tm.get("JVM GC Time", 0) / 1000
            tasks["executor_run_s"] += tm.get("Executor Run Time", 0) / 1000
            tasks["disk_bytes_spilled"] += tm.get("Disk Bytes Spilled", 0)
            tasks["memory_bytes_spilled"] += tm.get("Memory Bytes Spilled", 0)
            tasks["shuffle_bytes_written"] += (tm.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
            tasks["input_bytes"] += (tm.get("Input Metrics") or {}).get("Bytes Read", 0)
    job_list = sorted(jobs.values(), key=lambda j: j["job_id"])
    for j in job_list:
        s = j.get("submitted_ms") or 0
        j["phase"] = ("load" if s < marks.get("load_end", 0) else
                      "fit" if s < marks.get("fit_end", float("inf")) else "after")
    iters = [j for j in job_list if j["phase"] == "fit" and j["name"].startswith(iteration_job) and "seconds" in j]
    return {"stages": stages, "jobs": job_list, "iteration_jobs": iters, "tasks": tasks,
            "block_manager": block_manager_max, "rdd_names": rdd_names}
