"""A status page for a running application: ``Context.serve_status()`` (PySpark's
``sc.uiWebUrl``) serves, on 127.0.0.1 only, what Spark's UI shows first: the recent jobs
and stages with their times, the persisted datasets (in memory / on disk, per level)
and the cache's counters, refreshed every two seconds; ``/api/status`` gives the same as
JSON. It reads the Context's own figures (``storage_status()``, ``metrics()``) and the
job and stage events from when it starts, so it costs nothing until asked for. Standard library only
(``http.server`` on a daemon thread); stopped with the Context.
"""

from __future__ import annotations

import collections
import html
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.context import Context

__all__ = ["StatusServer", "FIRST_PORT"]

FIRST_PORT = 4040  # Spark's; the next free one is taken, as Spark does (16 tries, then any free port)
_KEPT = 50  # jobs and stages shown
_COUNTERS = ("memory_hits", "disk_hits", "misses", "blocks_dropped", "bytes_dropped", "blocks_recached",
             "disk_bytes_read", "disk_bytes_written", "serialize_s", "deserialize_s", "gc_s")


class _Recent:
    """The last jobs and stages, from the events (a listener on the Context's bus)."""

    def __init__(self) -> None:
        self.jobs: collections.OrderedDict[int, dict] = collections.OrderedDict()
        self.stages: collections.OrderedDict[int, dict] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, ev: dict) -> None:
        kind = ev.get("event")
        with self._lock:
            if kind == "JobStart":
                self._keep(self.jobs, ev["job_id"], {"id": ev["job_id"], "description": ev.get("description", ""),
                                                     "status": "running", "seconds": None})
            elif kind == "JobEnd" and ev["job_id"] in self.jobs:
                self.jobs[ev["job_id"]].update(status="succeeded" if ev.get("ok") else "failed",
                                               seconds=ev.get("seconds"))
            elif kind == "StageStart":
                self._keep(self.stages, ev["stage_id"], {"id": ev["stage_id"], "job": ev.get("job_id"),
                                                         "name": ev.get("name", ""), "tasks": ev.get("num_tasks"),
                                                         "status": "running", "seconds": None})
            elif kind == "StageEnd" and ev["stage_id"] in self.stages:
                self.stages[ev["stage_id"]].update(status="succeeded" if ev.get("ok") else "failed",
                                                   seconds=ev.get("seconds"))

    @staticmethod
    def _keep(table: collections.OrderedDict, key: int, row: dict) -> None:
        table[key] = row
        while len(table) > _KEPT:
            table.popitem(last=False)

    def snapshot(self) -> tuple[list[dict], list[dict]]:
        with self._lock:
            return [dict(j) for j in reversed(self.jobs.values())], [dict(s) for s in reversed(self.stages.values())]


class StatusServer:
    """The page of one Context; ``url`` once started."""

    def __init__(self, ctx: "Context", port: int | None = None) -> None:
        self._ctx = ctx
        self._recent = _Recent()
        self._started = time.time()
        ctx.events.subscribe(self._recent)
        handler = self._handler()
        last: OSError | None = None
        for p in ([port] if port is not None else [*range(FIRST_PORT, FIRST_PORT + 16), 0]):
            try:
                self._server = ThreadingHTTPServer(("127.0.0.1", p), handler)
                break
            except OSError as exc:
                last = exc
        else:
            raise OSError(f"status page: port {port} is not free ({last})")
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="strataflow-status")
        self._thread.start()

    def status(self) -> dict[str, Any]:
        ctx = self._ctx
        jobs, stages = self._recent.snapshot()
        out: dict[str, Any] = {"app_id": ctx.app_id, "app_name": ctx.config.app_name, "backend": ctx.backend,
                               "executors": ctx.config.executors, "uptime_s": time.time() - self._started,
                               "jobs": jobs, "stages": stages, "datasets": [], "metrics": {}}
        if not ctx._closed:
            out["datasets"] = [{"name": d.name, "level": d.level, "partitions": d.num_partitions,
                                "memory_partitions": d.memory_partitions, "disk_partitions": d.disk_partitions,
                                "memory_bytes": d.memory_bytes, "disk_bytes": d.disk_bytes}
                               for d in ctx.storage_status()]
            m = ctx.metrics()
            out["metrics"] = {k: m[k] for k in _COUNTERS if k in m}
        return out

    def page(self) -> str:
        s = self.status()

        def table(rows: list[dict], cols: list[str]) -> str:
            head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
                           for r in rows)
            return f"<table><tr>{head}</tr>{body}</table>" if rows else "<p>none yet</p>"

        metrics = [{"counter": k, "value": v} for k, v in s["metrics"].items()]
        return (f"<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='2'>"
                f"<title>strataflow {html.escape(s['app_name'])}</title><style>body{{font-family:sans-serif}}"
                f"td,th{{padding:2px 8px;text-align:right}}table{{border-collapse:collapse}}"
                f"tr:nth-child(even){{background:#f2f2f2}}</style></head><body>"
                f"<h1>{html.escape(s['app_name'])}</h1><p>application {html.escape(s['app_id'])}, "
                f"{html.escape(str(s['backend']))} backend, {s['executors']} executor(s), "
                f"up {s['uptime_s']:.0f} s</p>"
                f"<h2>Jobs</h2>{table(s['jobs'], ['id', 'description', 'status', 'seconds'])}"
                f"<h2>Stages</h2>{table(s['stages'], ['id', 'job', 'name', 'tasks', 'status', 'seconds'])}"
                f"<h2>Storage</h2>{table(s['datasets'], ['name', 'level', 'partitions', 'memory_partitions', 'disk_partitions', 'memory_bytes', 'disk_bytes'])}"
                f"<h2>Cache</h2>{table(metrics, ['counter', 'value'])}</body></html>")

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path in ("/", "/index.html"):
                    body, kind = server.page().encode(), "text/html; charset=utf-8"
                elif self.path == "/api/status":
                    body, kind = json.dumps(server.status(), default=str).encode(), "application/json"
                else:
                    self.send_error(404, "not found: try / or /api/status")
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet: no request lines on stderr
                pass

        return Handler

    def stop(self) -> None:
        self._ctx.events.unsubscribe(self._recent)
        self._server.shutdown()
        self._server.server_close()


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)
