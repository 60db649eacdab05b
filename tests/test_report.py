"""``strataflow report`` on real runs' logs: the page holds every section, its summary
table says what the run's own metrics say, its charts are inlined PNGs, and it needs no
network. A job that thrashes under Spark's policy (two persisted datasets read together
in a budget that holds neither both) gives every section something to show, on the
threads and on the processes backend. Plus: clear errors for a bad log, the memory split
and AUTO sections from their events, the missing-extra message, and (only where Chromium
is installed, an extra to ``benchmarks/report_browser.py``) the page in a real browser."""

from __future__ import annotations

import base64
import json
import re
import sys

import numpy as np
import pytest

from strataflow import Context, StorageLevel
from strataflow.cli import main as cli_main
from strataflow.report import LogError, read_events, render_report
from strataflow.report.events import by_time
from strataflow.report.occupancy import fold_occupancy
from strataflow.report.timeline import fold_timeline
from strataflow.storage.policies import POLICIES
from conftest import local_backends

MB = 1 << 20
SECTIONS = ("summary", "timeline", "occupancy", "moves", "hits", "simulator")
CHECKED = ("memory_hits", "disk_hits", "misses", "bytes_dropped", "bytes_recached", "disk_bytes_written",
           "disk_bytes_read")


def _thrashing_run(path: str, backend: str) -> dict:
    with Context(memory="6MB", backend=backend, parallelism=2, event_log=path, policy="spark",
                 app_name="report-test", progress=False) as ctx:
        rows = ctx.from_numpy(np.arange(8 * 64 * 1024, dtype=np.float64).reshape(-1, 8), num_partitions=8)
        a = rows.map_partitions(lambda b: b * 1.0).persist(StorageLevel.MEMORY_AND_DISK)
        b = a.map_partitions(lambda x: x[:, :4] + 1).persist(StorageLevel.MEMORY_AND_DISK)
        for _ in range(3):
            a.zip_partitions(b, f=lambda x, y: [float(x.sum() + y.sum())]).collect()
        return ctx.metrics()


@pytest.fixture(scope="module", params=local_backends())
def run(request, tmp_path_factory):
    """A real run's log and metrics, and its report rendered through the CLI."""
    base = tmp_path_factory.mktemp(f"report-{request.param}")
    log = str(base / "events.jsonl")
    metrics = _thrashing_run(log, request.param)
    out = base / "report"
    assert cli_main(["report", log, "--out", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    return {"backend": request.param, "log": log, "metrics": metrics, "out": out, "html": html}


def _summary(html: str) -> dict:
    return dict(re.findall(r'data-key="([^"]+)" data-value="([^"]*)"', html))


def _log_totals(log: str) -> dict:
    totals: dict = {}
    for line in open(log, encoding="utf-8"):
        ev = json.loads(line)
        if ev["event"] == "JobEnd":
            for k, v in ev["cache"].items():
                totals[k] = totals.get(k, 0) + v
    return totals


def test_page_has_every_section_and_inlined_charts(run):
    html = run["html"]
    for s in SECTIONS:
        assert f'<section id="{s}">' in html, s
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == 5  # timeline, occupancy, moves, hits, simulator (no split: the run has none)
    for data in images:
        png = base64.b64decode(data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    for name in ("timeline", "occupancy", "moves", "hits", "simulator"):
        assert (run["out"] / f"{name}.png").stat().st_size > 10_000


def test_page_needs_no_network(run):
    html = run["html"]
    assert not re.search(r"https?:", html, re.I)
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert re.findall(r'src="(?!data:)', html) == []
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', html))


def test_summary_matches_the_runs_metrics(run):
    got = _summary(run["html"])
    logged = _log_totals(run["log"])
    m = run["metrics"]
    for key in CHECKED:
        assert float(got[key]) == pytest.approx(logged[key]), key
    for key in ("memory_hits", "disk_hits", "misses", "bytes_dropped", "bytes_recached"):
        assert float(got[key]) == pytest.approx(m[key]), key  # the engine's own totals too
    assert m["bytes_dropped"] > 0 and m["bytes_recached"] > 0  # the run did thrash
    assert got["backend"] == run["backend"]
    assert int(got["memory"]) == 6 * MB
    assert int(got["jobs"]) == 3 and int(got["tasks"]) == 24 and int(got["stages"]) == 3
    reads = m["memory_hits"] + m["disk_hits"] + m["misses"] + m.get("peer_hits", 0)
    assert float(got["hit_ratio"]) == pytest.approx(m["memory_hits"] / reads)
    assert 0 <= float(got["opt_byte_hit_ratio"]) <= 1 and set(got["best_policy"].split(",")) <= set(POLICIES)
    assert got["policy"] == "spark"


def test_simulator_section_lists_every_policy_and_opt(run):
    table = run["html"].split('id="simulator-table"')[1].split("</table>")[0]
    for name in [*POLICIES, "opt", "unbounded", "this run (measured)"]:
        assert f"<td>{name}</td>" in table, name


def test_timeline_and_occupancy_folds(run):
    events = by_time(read_events(run["log"])[0])
    tl = fold_timeline(events)
    assert len(tl.tasks) == 24 and all(t.ok for t in tl.tasks) and len(tl.stages) == 3 and len(tl.jobs) == 3
    # threads: one executor with two slots; processes: two executors of one slot each
    assert tl.slots == ([("0", 0), ("0", 1)] if run["backend"] == "threads" else [("0", 0), ("1", 0)])
    for ex, slot in tl.slots:  # no two tasks overlap on one slot
        spans = sorted((t.start, t.end) for t in tl.tasks if (t.key["executor"], t.key["slot"]) == (ex, slot))
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))
    occ = fold_occupancy(events, tl.t0)
    m = run["metrics"]
    assert occ.moves["dropped"].last == m["bytes_dropped"] and occ.moves["re-cached"].last == m["bytes_recached"]
    assert occ.total("memory").peak <= 6 * MB  # never above the budget
    assert occ.locations == ["memory", "disk"] and occ.total("disk").last > 0


def test_bad_logs_are_named_with_their_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "JobStart", "time": 1.0}\nnot json\n{"event": "JobEnd", "time": 2.0}\n')
    with pytest.raises(LogError, match=r"bad\.jsonl:2: not a JSON event"):
        read_events(bad)
    assert cli_main(["report", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err.replace("\n", "")
    no_time = tmp_path / "no_time.jsonl"
    no_time.write_text('{"event": "JobStart"}\n')
    with pytest.raises(LogError, match=r"no_time\.jsonl:1: .*no numeric 'time'"):
        read_events(no_time)
    with pytest.raises(LogError, match="holds no events"):
        (tmp_path / "empty.jsonl").write_text("\n")
        read_events(tmp_path / "empty.jsonl")
    assert cli_main(["report", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err.replace("\n", "")
    cut = tmp_path / "cut.jsonl"  # a run killed mid-write: the whole lines stand
    cut.write_text('{"event": "JobStart", "time": 1.0, "job_id": 0}\n{"event": "JobEnd", "ti')
    events, facts = read_events(cut)
    assert len(events) == 1 and facts["truncated_last_line"]


def test_memory_split_and_auto_levels_are_shown(tmp_path):
    """A log with the dynamic split's and AUTO's events (written by hand: a run that moves
    the split takes longer than this suite may)."""
    t = 1000.0
    evs = [{"event": "ApplicationStart", "time": t, "app_id": "x", "app_name": "split", "memory": 8 * MB,
            "backend": "processes", "executors": 2, "cores_per_executor": 1},
           {"event": "AutoLevelChosen", "time": t + 0.1, "dataset_id": 1, "name": "points#1",
            "level": "MEMORY_AND_DISK_MMAP", "before": None, "reason": "recomputing costs more", "executor": "0"}]
    for i, ex in enumerate(("0", "1")):
        evs.append({"event": "MemorySplitMoved", "time": t + 0.2 + i, "to": "mapped", "bytes": MB,
                    "heap": 3 * MB, "mapped": MB, "budget": 4 * MB, "executor": ex})
    evs.append({"event": "MemorySplitMoved", "time": t + 3, "to": "heap", "bytes": MB // 2, "heap": 3 * MB + MB // 2,
                "mapped": MB // 2, "budget": 4 * MB, "executor": "0"})
    evs.append({"event": "ApplicationEnd", "time": t + 4})
    log = tmp_path / "split.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in evs))
    result = render_report(log)  # default folder: beside the log
    assert result["html"] == str(tmp_path / "split-report" / "report.html")
    html = open(result["html"], encoding="utf-8").read()
    assert '<section id="memory-split">' in html and '<section id="auto-levels">' in html
    assert "MEMORY_AND_DISK_MMAP" in html and "Not replayed" in html  # no block reads: said, not drawn
    occ = fold_occupancy(by_time(read_events(log)[0]), t)
    heap, mapped = occ.split["heap"], occ.split["mapped"]
    assert heap.v[0] == 8 * MB and mapped.v[0] == 0  # before the first move, all heap
    assert heap.last + mapped.last == 8 * MB and mapped.last == MB + MB // 2


HINT = "charts need matplotlib: pip install 'strataflow[plots]'"
CHARTED = ("timeline", "occupancy", "moves", "memory-split", "hits", "simulator")  # the sections with a chart


def _page_without_charts(html: str) -> None:
    """Every table and figure, and the hint in place of each chart; no image."""
    import html as html_lib

    assert "<img" not in html
    for sid in CHARTED:
        section = html.split(f'<section id="{sid}">')[1].split("</section>")[0]
        assert f'<p class="nochart">{html_lib.escape(HINT)}</p>' in section, sid
    for table in ("summary-table", "stage-table", "simulator-table"):
        assert f'id="{table}"' in html, table
    assert 'data-key="startup_s" data-value="2.0"' in html and 'data-key="tasks" data-value="4"' in html


def test_without_matplotlib_the_page_has_every_table_and_a_hint_for_each_chart(monkeypatch, tmp_path, capsys):
    from strataflow.report import charts
    from test_report_axes import small_run_events, write_log

    log = write_log(tmp_path / "a.jsonl", small_run_events())
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it fails, as when it is not installed
    assert not charts.available()
    with pytest.raises(ImportError, match=r"strataflow\[plots\]"):
        charts.pyplot()
    result = render_report(log, tmp_path / "o")
    assert result["charts"] == {} and not list((tmp_path / "o").glob("*.png"))
    assert capsys.readouterr().out.count(HINT) == 1  # said once, on stdout
    _page_without_charts((tmp_path / "o" / "report.html").read_text(encoding="utf-8"))


def test_the_installed_command_without_matplotlib_writes_the_page_and_exits_0(tmp_path):
    """``strataflow report`` as a user runs it, in a Python where ``import matplotlib``
    fails (a package of that name that raises ImportError, first on the path)."""
    import os
    import subprocess
    from pathlib import Path

    from test_report_axes import small_run_events, write_log

    command = Path(sys.executable).parent / "strataflow"  # the console script installed beside this Python
    assert command.exists(), command
    blocker = tmp_path / "block" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("No module named \'matplotlib\' (blocked by a test)")\n')
    log = write_log(tmp_path / "a.jsonl", small_run_events())
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "block")}
    check = subprocess.run([sys.executable, "-c", "import matplotlib"], env=env, capture_output=True, text=True)
    assert check.returncode != 0 and "blocked by a test" in check.stderr  # the block holds
    r = subprocess.run([str(command), "report", log, "--out", str(tmp_path / "o")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(HINT) == 1, r.stdout
    _page_without_charts((tmp_path / "o" / "report.html").read_text(encoding="utf-8"))


# The check in a real browser (Chromium) is benchmarks/report_browser.py: a fresh machine has no
# Chromium, and a test that skips there would pass by not running.


def test_a_log_that_runs_were_appended_to_shows_the_last_run(tmp_path):
    log = tmp_path / "events.jsonl"
    for n in (2000, 500):  # two applications, one file
        with Context(memory="8MB", parallelism=1, backend="threads", event_log=str(log),
                     local_dirs=str(tmp_path)) as ctx:
            ctx.range(n, num_partitions=4).persist().count()
    result = render_report(log, tmp_path / "out")
    assert any("2 applications" in note for note in result["notes"])
    page = (tmp_path / "out" / "report.html").read_text()
    assert 'data-key="tasks"' in page
    from strataflow.simulate.trace import from_event_log

    assert sum(op[0] == "read" for op in from_event_log(log).ops) == 4  # the last run's 4 blocks only
