"""``strataflow bench`` end to end at a tiny scale: every experiment writes results.json
with every field, a markdown table and its chart, and every run's check passes."""

from __future__ import annotations

import json
import os

import pytest

from strataflow.cli import main as cli_main
from strataflow.workloads.api import WORKLOADS

ROW_FIELDS = {"experiment", "total_s", "cached_mb", "blocks_dropped", "mb_dropped", "blocks_recached",
              "mb_recached", "mb_prefetched", "mb_moved", "disk_read_mb", "disk_written_mb", "serialize_s", "deserialize_s", "gc_s",
              "result_check", "stages"}


def _bench(tmp_path, *args):
    out = tmp_path / "out"
    code = cli_main(["bench", *args, "--repeat", "1", "--out", str(out), "--data-dir", str(tmp_path / "data")])
    results = json.loads((out / "results.json").read_text())
    return code, out, results


def test_bench_levels_end_to_end(tmp_path):
    code, out, res = _bench(tmp_path, "levels", "--scale", "0.0005")
    assert code == 0
    assert res["experiment"] == "levels" and res["meta"]["notes"]
    levels = {r["level"] for r in res["runs"]}
    assert levels == {"NONE", "MEMORY_ONLY", "MEMORY_ONLY_SER", "OFF_HEAP", "DISK_ONLY", "MEMORY_AND_DISK"}
    assert {r["api"] for r in res["runs"]} == {"records", "batches"}
    for r in res["runs"]:
        assert ROW_FIELDS <= set(r), ROW_FIELDS - set(r)
        assert r["result_check"] == "ok"
        assert (r["cached_mb"] > 0) == (r["level"] != "NONE")
    assert len(res["summary"]) == 12
    assert (out / "levels.png").stat().st_size > 10_000
    table = (out / "table.md").read_text()
    assert "MEMORY_ONLY_SER" in table and "| workload |" in table


def test_bench_pressure_end_to_end(tmp_path):
    # one workload: every policy at both pressures is what the assertions below need (a
    # second workload doubled the test's time, the slowest of the suite, and asserted nothing more)
    code, out, res = _bench(tmp_path, "pressure", "--scale", "0.002", "--workloads", "kmeans",
                            "--pressures", "0.5,4")
    assert code == 0
    runs = res["runs"]
    from strataflow.storage.policies import POLICIES

    assert {r["policy"] for r in runs} == set(POLICIES)  # every policy available
    assert {r["pressure"] for r in runs} == {0.5, 4.0}
    for r in runs:
        assert ROW_FIELDS | {"policy", "pressure", "memory_mb", "cached_for_pressure_mb"} <= set(r)
        assert r["result_check"] == "ok"
    for s in res["summary"]:
        assert s["speedup_vs_spark"] > 0
        if s["policy"] == "spark":
            assert s["speedup_vs_spark"] == pytest.approx(1.0)
        assert s["moved_vs_min"] >= 1.0
        assert s["mb_moved"] == pytest.approx(s["mb_dropped"] + s["mb_recached"] + s["mb_prefetched"], abs=1e-6) \
            or s["runs"] > 1  # medians of a sum need not sum
    assert min(s["moved_vs_min"] for s in res["summary"]) == pytest.approx(1.0)
    km = {(r["policy"], r["pressure"]): r for r in runs if r["workload"] == "kmeans"}
    assert km[("spark", 4.0)]["mb_dropped"] > km[("no-recache", 4.0)]["mb_dropped"]
    assert km[("spark", 0.5)]["mb_dropped"] == 0  # ample memory: nothing moves
    assert (out / "pressure.png").exists()


def test_bench_rejects_a_missing_device_directory(tmp_path):
    code = cli_main(["bench", "devices", "--scale", "0.0005", "--dirs", str(tmp_path / "nope"),
                     "--out", str(tmp_path / "o")])
    assert code == 2
    assert not os.path.exists(tmp_path / "o" / "results.json")


def test_bench_serde_and_devices_end_to_end(tmp_path):
    if "rddtest" not in WORKLOADS:
        pytest.fail("the rddtest workload is missing")
    code, out, res = _bench(tmp_path, "serde", "--scale", "0.005")
    assert code == 0, [r["result_check"] for r in res["runs"]]
    combos = {(r["kind"], r["api"], r["serializer"]) for r in res["runs"]}
    assert ("strings", "records", "pickle") in combos and ("vectors", "batches", "arrow") in combos
    assert all(r["serialize_s"] > 0 and r["cached_mb"] > 0 for r in res["runs"])
    assert (out / "serde.png").exists()
    d = tmp_path / "dev"
    d.mkdir()
    code, out, res = _bench(tmp_path, "devices", "--scale", "0.005", "--dirs", str(d), "--threads", "1,2")
    assert code == 0
    raw = [r for r in res["runs"] if str(r.get("kind", "")).startswith("raw")]
    assert {r["kind"] for r in raw} == {"raw cold", "raw warm"} and all(r["read_mb_per_s"] > 0 for r in raw)
    cached = [r for r in res["runs"] if r.get("threads")]
    assert {r["threads"] for r in cached} == {1, 2} and all(r["mb_per_s"] > 0 for r in cached)
    assert (out / "devices.png").exists()


def test_bench_auto_end_to_end(tmp_path):
    """AUTO beside two fixed levels at one pressure: every run checks, AUTO's row carries
    its paired ratios, and the chart is drawn."""
    code, out, res = _bench(tmp_path, "auto", "--scale", "0.002", "--workloads", "kmeans", "--pressures", "4",
                            "--levels", "MEMORY_AND_DISK,DISK_MMAP", "--backend", "threads")
    assert code == 0, [r["result_check"] for r in res["runs"]]
    assert {r["level"] for r in res["runs"]} == {"AUTO", "MEMORY_AND_DISK", "DISK_MMAP"}
    assert all(ROW_FIELDS | {"pressure", "memory_mb"} <= set(r) for r in res["runs"])
    auto = next(s for s in res["summary"] if s["level"] == "AUTO")
    assert auto["best_fixed"] in ("MEMORY_AND_DISK", "DISK_MMAP") and auto["vs_best_fixed"] > 0
    best = next(s for s in res["summary"] if s["level"] == auto["best_fixed"])
    assert best["vs_best_fixed"] == 1.0
    assert auto["vs_best_fixed"] >= auto["vs_memory_and_disk"] - 1e-12  # the best is the one AUTO fares worst against
    assert (out / "auto.png").stat().st_size > 10_000
    assert any("paired" in n for n in res["meta"]["notes"])
    assert any(n.startswith("backend: threads") for n in res["meta"]["notes"])
    # one repeat gives no interval: the verdict says so rather than guessing
    assert auto["target"] == "open" and "too few" in auto["target_why"] and auto["vs_best_fixed_ci"] is None
    assert any(n.startswith("target") and "open at 1 of 1 points" in n for n in res["meta"]["notes"])


@pytest.mark.parametrize("warmup", [0, 2])
def test_each_timed_run_follows_warm_ups_of_its_own_configuration(tmp_path, monkeypatch, warmup):
    """``--warmup N``: every timed (checked) run of a workload comes right after N
    unchecked runs of the same workload, level and memory, whatever ran before them;
    the warm-ups are not rows of the report."""
    from strataflow.bench import experiments

    calls = []
    real = experiments.run_workload

    def recording(workload, data, **kw):
        calls.append((workload, kw.get("level"), kw.get("memory"), kw.get("check", True), kw.get("iterations")))
        return real(workload, data, **kw)

    monkeypatch.setattr(experiments, "run_workload", recording)
    out = tmp_path / "out"
    code = cli_main(["bench", "auto", "--scale", "0.002", "--workloads", "kmeans", "--pressures", "2,4",
                     "--levels", "MEMORY_ONLY,DISK_MMAP", "--backend", "threads", "--repeat", "2",
                     "--warmup", str(warmup), "--out", str(out), "--data-dir", str(tmp_path / "data")])
    res = json.loads((out / "results.json").read_text())
    assert code == 0 and len(res["runs"]) == 2 * 2 * 3 and res["meta"]["warmup"] == warmup
    runs = [c for c in calls if c[4] is None]  # the sizing run (one iteration) aside
    timed = [i for i, c in enumerate(runs) if c[3]]
    assert len(timed) == len(res["runs"]) and len(runs) == len(timed) * (1 + warmup)
    for i in timed:
        before = runs[i - warmup:i]
        assert all(not c[3] and c[:3] == runs[i][:3] for c in before), (runs[i], before)
    assert any(n.startswith("warm-up: " + (f"{warmup} untimed" if warmup else "none")) for n in res["meta"]["notes"])


def _auto_run(level: str, repeat: int, seconds: float, pressure: float = 4.0) -> dict:
    return {"experiment": "auto", "workload": "kmeans", "api": "batches", "level": level, "pressure": pressure,
            "repeat": repeat, "total_s": seconds, "result_check": "ok"}


def test_auto_ratios_pair_the_runs_of_one_repeat():
    """A drift that slows a whole repeat divides out of paired ratios where a ratio of
    medians would show a false gap; the best fixed level is the one AUTO fares worst
    against; each row is paired with it and with MEMORY_AND_DISK."""
    from strataflow.bench.experiments import paired_ratio, summarize

    # Repeats 1, 3 and 4 ran on a machine twice as slow (another job): AUTO is 2% ahead
    # of DISK_MMAP and 10% ahead of MEMORY_AND_DISK in every repeat, but one
    # MEMORY_AND_DISK run (repeat 4) missed the slow spell.
    runs = []
    for r, slow in enumerate((1.0, 2.0, 1.0, 2.0, 2.0)):
        runs += [_auto_run("AUTO", r, 0.98 * slow), _auto_run("DISK_MMAP", r, 1.0 * slow),
                 _auto_run("MEMORY_AND_DISK", r, 1.0889 * slow if r != 4 else 1.0889)]
    assert paired_ratio(runs, "AUTO", "DISK_MMAP") == pytest.approx(0.98)
    assert paired_ratio(runs, "AUTO", "MEMORY_AND_DISK") == pytest.approx(0.98 / 1.0889)  # the outlier is one ratio
    assert paired_ratio(runs, "AUTO", "DISK_ONLY") is None
    rows = {s["level"]: s for s in summarize(runs)}
    assert rows["AUTO"]["best_fixed"] == "DISK_MMAP"
    assert rows["AUTO"]["vs_best_fixed"] == pytest.approx(0.98)
    assert rows["DISK_MMAP"]["vs_best_fixed"] == 1.0
    assert rows["MEMORY_AND_DISK"]["vs_best_fixed"] == pytest.approx(1.0889)
    assert rows["AUTO"]["vs_memory_and_disk"] == pytest.approx(0.98 / 1.0889)
    assert rows["MEMORY_AND_DISK"]["vs_memory_and_disk"] == 1.0
    # A ratio of medians is thrown by that one run: 1.96 s over MEMORY_AND_DISK's median
    # 1.0889 s (its fast runs are now the majority) says AUTO is 1.8x slower.
    assert rows["AUTO"]["total_s"] / rows["MEMORY_AND_DISK"]["total_s"] == pytest.approx(1.96 / 1.0889)


def test_median_ci_is_the_order_statistic_interval():
    """The interval of the median from order statistics: for 9 values the 2nd and 8th
    (coverage 96.1%), for 6 the extremes (96.9%), none for 5 (the extremes cover only
    93.8%); k is the largest whose binomial tail is within 2.5%."""
    from math import comb

    from strataflow.bench.experiments import median_ci

    assert median_ci([9, 1, 8, 2, 7, 3, 6, 4, 5]) == (2, 8)
    assert median_ci([3.0, 1.0, 2.0, 6.0, 5.0, 4.0]) == (1.0, 6.0)
    assert median_ci([1, 2, 3, 4, 5]) is None
    assert median_ci([]) is None
    for n in range(6, 80):
        lo, hi = median_ci(list(range(n)))
        k = lo + 1
        assert hi == n - k
        assert sum(comb(n, i) for i in range(k)) / 2 ** n <= 0.025 < sum(comb(n, i) for i in range(k + 1)) / 2 ** n


def test_target_verdict_says_met_missed_or_open():
    """AUTO's target at one point from its paired ratios: missed only where an interval
    lies wholly above its bound (1.05; 1.0 for MEMORY_AND_DISK), met only where every
    interval is within 1.05, open where the noise leaves it undecided."""
    from strataflow.bench.experiments import target_verdict

    tight = [0.96, 0.97, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03]
    noisy = [0.80, 0.86, 0.92, 0.97, 1.0, 1.04, 1.1, 1.2, 1.3]
    slow = [x + 0.2 for x in tight]
    assert target_verdict({"DISK_MMAP": tight, "MEMORY_AND_DISK": tight})[0] == "met"
    verdict, why = target_verdict({"DISK_MMAP": tight, "MEMORY_AND_DISK": noisy})
    assert verdict == "open" and "MEMORY_AND_DISK [0.860, 1.200]" in why
    verdict, why = target_verdict({"DISK_MMAP": slow, "MEMORY_AND_DISK": noisy})
    assert verdict == "missed" and why.startswith("DISK_MMAP [1.170, 1.220] > 1.05")
    # 3% slower than MEMORY_AND_DISK in every repeat: within 1.05, but above its own bound
    verdict, why = target_verdict({"MEMORY_AND_DISK": [x * 1.03 for x in [1.0, 1.005, 1.01] * 3]})
    assert verdict == "missed" and "> 1.0" in why
    # the same 3% against another level is within the target
    assert target_verdict({"DISK_ONLY": [x * 1.03 for x in [1.0, 1.005, 1.01] * 3]})[0] == "met"
    assert target_verdict({"DISK_MMAP": tight[:4]})[0] == "open"


def test_auto_summary_carries_verdicts_and_the_pooled_line(tmp_path):
    """Each AUTO row of the summary gets its interval and verdict; the report's line
    counts the points and pools AUTO / MEMORY_AND_DISK over every repeat; the table
    prints the interval and the chart draws it."""
    from strataflow.bench.experiments import auto_verdict, summarize
    from strataflow.bench.report import write_report

    runs = []
    for r in range(9):
        jitter = 1 + 0.01 * (r % 3)
        for pressure, auto_s in ((2.0, 0.97), (8.0, 1.5)):  # at 8x AUTO is 1.5x slower: missed
            runs += [_auto_run("AUTO", r, auto_s * jitter, pressure), _auto_run("MEMORY_AND_DISK", r, 1.0, pressure),
                     _auto_run("DISK_MMAP", r, 1.0 * jitter, pressure)]
    summary = summarize(runs)
    auto = {s["pressure"]: s for s in summary if s["level"] == "AUTO"}
    assert auto[2.0]["target"] == "met" and auto[8.0]["target"] == "missed"
    lo, hi = auto[8.0]["vs_best_fixed_ci"]
    assert lo <= auto[8.0]["vs_best_fixed"] <= hi
    line = auto_verdict(runs, summary)
    assert "met at 1, missed at 1, open at 0 of 2 points" in line
    assert "over all 18 paired repeats" in line
    assert auto_verdict(runs, [s for s in summary if s["level"] != "AUTO"]) is None
    paths = write_report(str(tmp_path), "auto", runs, summary, {"notes": [line]})
    table = open(paths["table"]).read()
    assert f"[{lo:.3f}, {hi:.3f}]" in table and "| missed |" in table and line in table
    assert os.path.getsize(paths["charts"][0]) > 10_000


def _results_file(path, runs, scale=0.25, backend_note="backend: threads, parallelism 2", meta_backend=None):
    meta = {"experiment": "auto", "scale": scale, "repeat": 3, "notes": [backend_note]}
    if meta_backend:
        meta["backend"] = meta_backend
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(json.dumps({"experiment": "auto", "meta": meta, "summary": [], "runs": runs}))
    return path / "results.json"


def test_pool_keeps_each_invocations_pairs_apart(tmp_path):
    """Repeats of two invocations both numbered 0..2 stay six pairs: a run of one
    invocation is never paired with another's, where the machine may have been slower."""
    from strataflow.bench.experiments import paired_ratios
    from strataflow.bench.pool import load_results, pool_rows

    # invocation 1 ran on a fast machine, invocation 2 on one twice as slow; AUTO is
    # 0.9x MEMORY_AND_DISK within each. Cross-pairing would give 0.45 and 1.8.
    a = _results_file(tmp_path / "a", [_auto_run(lv, r, s) for r in range(3)
                                       for lv, s in (("AUTO", 0.9), ("MEMORY_AND_DISK", 1.0))])
    b = _results_file(tmp_path / "b", [_auto_run(lv, r, s) for r in range(3)
                                       for lv, s in (("AUTO", 1.8), ("MEMORY_AND_DISK", 2.0))])
    rows, notes = pool_rows([load_results(str(a)), load_results(str(tmp_path / "b"))], "auto", 0.25, "threads")
    assert sorted({r["repeat"] for r in rows}) == ["1:0", "1:1", "1:2", "2:0", "2:1", "2:2"]
    assert paired_ratios(rows, "AUTO", "MEMORY_AND_DISK") == pytest.approx([0.9] * 6)
    assert len(notes) == 2 and "6 runs (3 repeats)" in notes[0] and str(a) in notes[0]


def test_pool_refuses_runs_that_are_not_comparable(tmp_path):
    """Another scale, another backend or another experiment is refused by name; a missing
    or foreign file is a clear error, never an empty pool."""
    from strataflow.bench.pool import load_results, meta_backend, pool_rows

    runs = [_auto_run("AUTO", 0, 1.0)]
    old = load_results(str(_results_file(tmp_path / "old", runs)))
    assert meta_backend(old["meta"]) == "threads"  # from the note of a file without the field
    assert meta_backend({"notes": ["backend: the Context default, parallelism 2"]}) == "default"
    assert meta_backend({"backend": "processes", "notes": []}) == "processes"
    with pytest.raises(ValueError, match="scale 0.25, this run 0.5"):
        pool_rows([old], "auto", 0.5, "threads")
    with pytest.raises(ValueError, match="backend 'threads', this run 'processes'"):
        pool_rows([old], "auto", 0.25, "processes")
    with pytest.raises(ValueError, match="experiment 'auto', this run 'pressure'"):
        pool_rows([old], "pressure", 0.25, "threads")
    # a file from before --warmup had none: it pools with --warmup 0 only, and a file's own
    # warm-up must match this run's
    assert pool_rows([old], "auto", 0.25, "threads", warmup=0)[0]
    with pytest.raises(ValueError, match="warmup 0, this run 1"):
        pool_rows([old], "auto", 0.25, "threads", warmup=1)
    warmed = _results_file(tmp_path / "warmed", runs)
    doc = json.loads(warmed.read_text())
    doc["meta"]["warmup"] = 1
    warmed.write_text(json.dumps(doc))
    assert pool_rows([load_results(str(warmed))], "auto", 0.25, "threads", warmup=1)[0]
    with pytest.raises(ValueError, match="warmup 1, this run 0"):
        pool_rows([load_results(str(warmed))], "auto", 0.25, "threads", warmup=0)
    with pytest.raises(FileNotFoundError, match="no results file"):
        load_results(str(tmp_path / "nowhere"))
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a bench results file"):
        load_results(str(tmp_path / "junk.json"))
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match="no 'runs' and 'meta'"):
        load_results(str(tmp_path / "other.json"))


def test_bench_pool_only_summarizes_stored_runs(tmp_path):
    """``bench auto --repeat 0 --pool A --pool B`` runs nothing and reports on both files'
    repeats together (12 paired repeats, the scale and backend taken from the files);
    --repeat 0 without a pool, and a pool of another scale, are refused."""
    a = _results_file(tmp_path / "a", [_auto_run(lv, r, s * (1 + 0.01 * r)) for r in range(6)
                                       for lv, s in (("AUTO", 0.95), ("MEMORY_AND_DISK", 1.0), ("DISK_MMAP", 0.96))])
    b = _results_file(tmp_path / "b", [_auto_run(lv, r, s * (1 + 0.02 * r)) for r in range(6)
                                       for lv, s in (("AUTO", 1.9), ("MEMORY_AND_DISK", 2.0), ("DISK_MMAP", 1.92))],
                      meta_backend="threads")
    out = tmp_path / "out"
    assert cli_main(["bench", "auto", "--repeat", "0", "--pool", str(a), "--pool", str(b), "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert len(res["runs"]) == 36 and res["meta"]["scale"] == 0.25 and res["meta"]["backend"] == "threads"
    assert res["meta"]["pooled"] == [str(a), str(b)]
    auto = next(s for s in res["summary"] if s["level"] == "AUTO")
    assert auto["target"] == "met" and auto["vs_memory_and_disk"] == pytest.approx(0.95)
    assert any("over all 12 paired repeats" in n for n in res["meta"]["notes"])
    assert not (tmp_path / "out" / "data").exists() or not any((tmp_path / "out" / "data").iterdir())  # no data made
    assert cli_main(["bench", "auto", "--repeat", "0", "--out", str(tmp_path / "o2")]) != 0
    # a pool from another scale than this run's is refused before anything runs
    assert cli_main(["bench", "auto", "--scale", "0.5", "--repeat", "0", "--pool", str(a), "--out",
                     str(tmp_path / "o3")]) != 0
