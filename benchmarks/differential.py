"""The differential tester's long mode (issue 50, point 3): as many random Dataset programs
as asked, on every backend asked (and PySpark), against the plain-Python model.

    python benchmarks/differential.py --programs 10000 --seed 1 --backends threads,processes[,ray] [--pyspark]

Programs are drawn by hypothesis (``tests/differential/programs.py``) in batches of
``--batch``, batch ``i`` under seed ``seed * 1000 + i``; every program runs on every
backend, one shared Context each (Ray: a simulated cluster in a private network
namespace, as ``tests/test_ray_backend.py`` runs it). ``--faults`` of them are the fault
slice: a disk level or a shuffle damaged between two runs, or an executor killed mid-stage.
A difference the tester has not seen is shrunk by hypothesis to its smallest program,
once per signature (backend, action, message); the run goes on with the next batch.
Known engine bugs (``harness.KNOWN``) are counted by name. With ``--pyspark`` the same
programs run on PySpark ``local[2]`` and every difference from the model is listed,
classified (an error, a partition count or placement -- expected: the engines place keys
differently -- or an answer).

Prints a summary (and ``--json PATH`` writes it); exits 1 when an unknown difference was
found on a strataflow backend.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import re
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
# this script is named differential.py too: its folder must not shadow the package
# ``differential`` (tests/differential/) here or in any executor that inherits our path
sys.path[:] = [TESTS] + [p for p in sys.path if os.path.realpath(p or ".") != os.path.dirname(os.path.realpath(__file__))]

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from differential.harness import Runner, SparkRunner  # noqa: E402
from differential.programs import FAULTS, KILL_FAULT, programs, to_code  # noqa: E402

HANG_S = 300  # a program running this long is a hang: print it and every stack, and stop


def _signature(f) -> tuple:
    msg = re.sub(r"\d+", "N", f.message)[:60]
    return (f.backend, f.program.action.op, msg)


class Watchdog:
    """Stops the run (exit 3) with the program and every thread's stack if one program
    runs longer than ``HANG_S``: a hang is a finding, not a stall."""

    def __init__(self) -> None:
        self.started = None
        self.current = ""
        self.lock = threading.Lock()
        threading.Thread(target=self._watch, daemon=True, name="differential-watchdog").start()

    def begin(self, what: str) -> None:
        with self.lock:
            self.started, self.current = time.monotonic(), what

    def end(self) -> None:
        with self.lock:
            self.started = None

    def _watch(self) -> None:
        while True:
            time.sleep(5)
            with self.lock:
                late = self.started is not None and time.monotonic() - self.started > HANG_S
                what = self.current
            if late:
                sys.stderr.write(f"\nHANG: a program ran over {HANG_S} s:\n{what}\n")
                faulthandler.dump_traceback(all_threads=True)
                sys.stderr.flush()
                os._exit(3)


def _ray_session(stack):
    """A private Ray cluster for the run (the suite's own setting), or None with why not."""
    import contextlib

    import pytest

    from test_ray_backend import SimCluster, private_ray

    try:
        sims = stack.enter_context(private_ray())
    except pytest.skip.Exception as exc:
        return None, str(exc)
    # ray.init puts the driver script's folder first on every worker's path: this one's
    # would shadow the package ``differential`` there; tests/ is the folder that holds it
    argv0, sys.argv[0] = sys.argv[0], os.path.join(TESTS, "differential_run.py")
    try:
        sims.append(SimCluster(os.environ["RAY_TMPDIR"]))
    finally:
        sys.argv[0] = argv0
    return sims[0], None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=1000, help="programs to draw (each runs on every backend)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backends", default="threads,processes", help="comma-separated: threads, processes, ray")
    ap.add_argument("--pyspark", action="store_true", help="run the same programs on PySpark local[2] too")
    ap.add_argument("--faults", type=float, default=0.1, help="the share of programs from the fault slice")
    ap.add_argument("--batch", type=int, default=250, help="programs per hypothesis batch")
    ap.add_argument("--shrinks", type=int, default=12, help="at most this many differences are shrunk")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--workdir", help="where the Contexts keep their files (default: a temp dir)")
    args = ap.parse_args(argv)

    import contextlib

    backends = [b for b in args.backends.split(",") if b]
    t_start = time.time()
    summary: dict = {"seed": args.seed, "programs_asked": args.programs, "backends": backends,
                     "pyspark": args.pyspark, "notes": []}
    with contextlib.ExitStack() as stack:
        runners: list[Runner] = []
        for b in backends:
            if b == "ray":
                sim, why = _ray_session(stack)
                if sim is None:
                    summary["notes"].append(f"ray not run: {why}")
                    print(f"ray not run: {why}", flush=True)
                    continue
                runners.append(Runner("ray", args.workdir and os.path.join(args.workdir, "ray"), executors=2,
                                      memory="128MB", parallelism=None))
            else:
                runners.append(Runner(b, args.workdir and os.path.join(args.workdir, b)))
            stack.callback(runners[-1].close)
        spark = None
        if args.pyspark:
            os.environ["PYTHONPATH"] = os.pathsep.join([TESTS, REPO, os.environ.get("PYTHONPATH", "")])
            os.environ.setdefault("PYTHONHASHSEED", "0")  # PySpark's workers need it (the driver stays salted)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers: this venv's Python
            spark = SparkRunner(args.workdir and os.path.join(args.workdir, "pyspark"))
            stack.callback(spark.close)
        rc = _run(args, runners, spark, summary)
    summary["seconds"] = round(time.time() - t_start, 1)
    _print(summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, default=str)
    return rc


def _run(args, runners: list[Runner], spark, summary: dict) -> int:
    watchdog = Watchdog()
    drawn = [0]
    shrink_runs = [0]  # programs hypothesis ran while shrinking a difference
    shrunk: dict = {}  # signature -> (failure report, times seen)
    seen = Counter()  # signature -> programs that showed it
    known = Counter()
    spark_diffs: dict = defaultdict(lambda: {"count": 0, "example": None})
    in_shrink = [False]
    active: set = set()  # the signatures this batch is shrinking
    unshrunk: dict = {}  # signature -> the first program that showed it (over --shrinks)

    fault_share = max(0, min(100, round(args.faults * 100)))

    def strategy():
        def pick(x):
            share, fault = x
            return programs(fault=fault) if share < fault_share else programs()

        return st.tuples(st.integers(0, 99), st.sampled_from(FAULTS)).flatmap(pick)

    class Found(Exception):
        pass

    origins: dict = {}

    def origin(sig):  # one exception class per signature: hypothesis shrinks each apart
        if sig not in origins:
            origins[sig] = type(f"Difference{len(origins)}", (Found,), {})
        return origins[sig]

    def body(program):
        """Runs ``program`` everywhere. Raises (an exception class of its own per
        signature, so hypothesis shrinks each apart) for a difference not seen before, and,
        while shrinking, for the differences being shrunk; counts every other."""
        if in_shrink[0]:
            shrink_runs[0] += 1
        else:
            drawn[0] += 1
        raise_for = None
        for r in runners:
            if program.fault == KILL_FAULT and not r.can_kill:
                continue
            watchdog.begin(f"[{r.backend}]\n{to_code(program)}")
            fails = r.check(program)
            watchdog.end()
            for f in fails:
                if f.known:
                    known[f.known.name] += 1
                    continue
                sig = _signature(f)
                if in_shrink[0]:
                    if sig in active and raise_for is None:
                        shrunk[sig]["report"] = f.report()  # the latest, smallest yet
                        raise_for = (sig, f)
                    continue
                seen[sig] += 1
                if sig in shrunk:
                    continue
                if len(shrunk) < args.shrinks and raise_for is None:
                    shrunk[sig] = {"report": f.report(), "first_seen": f.report(), "first_seen_after": drawn[0]}
                    active.add(sig)
                    raise_for = (sig, f)
                elif sig not in unshrunk:
                    unshrunk[sig] = f.report()
        if spark is not None and program.fault is None and not in_shrink[0]:
            watchdog.begin(f"[pyspark]\n{to_code(program)}")
            for f in spark.check(program):
                cls = _classify(f)
                d = spark_diffs[cls]
                d["count"] += 1
                if d["example"] is None or len(to_code(f.program)) < len(to_code(d["example"].program)):
                    d["example"] = f
            watchdog.end()
        if raise_for is not None:
            sig, f = raise_for
            in_shrink[0] = True
            raise origin(sig)(f.message)

    batch_no = 0
    last_print = time.time()
    while drawn[0] < args.programs:
        n = min(args.batch, args.programs - drawn[0])

        @settings(max_examples=n, deadline=None, database=None, print_blob=False, report_multiple_bugs=True,
                  suppress_health_check=list(HealthCheck))
        @seed(args.seed * 1000 + batch_no)
        @given(strategy())
        def batch(program):
            body(program)

        before = drawn[0]
        try:
            batch()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a found difference, shrunk: recorded, go on
            if "Flaky" in type(exc).__name__:  # a difference that did not come back when run again
                for sig in active:
                    shrunk[sig]["flaky"] = True
                summary["notes"].append(f"batch {batch_no}: flaky differences {sorted(map(str, active))}")
            else:  # a difference (Found), or an error of the tester itself: never swallowed
                errors = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
                for err in errors:
                    if not isinstance(err, Found):
                        traceback.print_exception(err)
                        summary["notes"].append(f"batch {batch_no}: the tester failed: {type(err).__name__}: {err}")
        for sig in sorted(active, key=str):  # shown as found, not only in the summary
            print(f"\nNEW DIFFERENCE {sig}:\n{shrunk[sig]['report']}\n", flush=True)
        in_shrink[0] = False
        active.clear()
        if drawn[0] == before:
            break
        batch_no += 1
        if time.time() - last_print > 30:
            last_print = time.time()
            rate = sum(r.stats.programs for r in runners) / max(1e-9, sum(r.stats.seconds for r in runners))
            print(f"{drawn[0]} programs drawn, {sum(r.stats.programs for r in runners)} runs "
                  f"({rate:.1f}/s on the engines), {len(shrunk)} new differences, known {dict(known)}", flush=True)

    summary["programs_drawn"] = drawn[0]
    summary["programs_run_while_shrinking"] = shrink_runs[0]
    summary["batches"] = batch_no
    summary["backends_run"] = {r.backend: {"programs": r.stats.programs, "action_runs": r.stats.runs,
                                           "seconds": round(r.stats.seconds, 1),
                                           "families": dict(r.stats.families),
                                           "faults_struck": dict(r.stats.faults),
                                           "faults_with_nothing_to_strike": dict(r.stats.vacuous)}
                               for r in runners}
    summary["program_runs_total"] = sum(r.stats.programs for r in runners)
    summary["known"] = dict(known)
    summary["differences"] = [{"signature": list(sig), "programs": seen[sig], **v} for sig, v in shrunk.items()]
    summary["differences_not_shrunk"] = {" | ".join(sig): {"programs": n, "first": unshrunk.get(sig)}
                                         for sig, n in seen.items() if sig not in shrunk}
    if spark is not None:
        summary["pyspark"] = {"programs": spark.stats.programs, "seconds": round(spark.stats.seconds, 1),
                              "differences": {" | ".join(k): {"count": v["count"], "example": v["example"].report()}
                                              for k, v in sorted(spark_diffs.items(), key=lambda kv: -kv[1]["count"])}}
    return 1 if shrunk else 0


def _classify(f) -> tuple:
    """A PySpark difference: (kind, action, detail)."""
    m = f.message
    if m.startswith("raised"):
        kind = "error"
        detail = re.sub(r"[0-9]+", "N", m[len("raised "):])
        detail = re.sub(r"between instances of '[^']*' and '[^']*'", "between instances of A and B", detail)[:120]
    elif "partitions, the model" in m:
        kind, detail = "partition count", ""
    elif m.startswith("glom: partition") or "equal keys in several partitions" in m:
        kind, detail = "placement", ""
    else:
        kind, detail = "answer", ""
    return (kind, f.program.action.op, detail)


def _print(s: dict) -> None:
    print("\n== differential run ==")
    print(f"seed {s['seed']}; programs drawn {s.get('programs_drawn')} (asked {s['programs_asked']}); "
          f"program runs on the engines {s.get('program_runs_total')}; {s.get('seconds')} s")
    for b, v in s.get("backends_run", {}).items():
        print(f"  {b}: {v['programs']} programs, {v['action_runs']} action runs, {v['seconds']} s; "
              f"families {v['families']}; faults struck {v['faults_struck']}, "
              f"nothing to strike {v['faults_with_nothing_to_strike']}")
    for note in s["notes"]:
        print(f"  note: {note}")
    print(f"known engine bugs met: {s.get('known') or 'none'}")
    diffs = s.get("differences", [])
    print(f"new differences (shrunk): {len(diffs)}")
    for d in diffs:
        flaky = " FLAKY: did not come back when run again; first seen as:\n" + d["first_seen"] if d.get("flaky") else ""
        print(f"\n-- {d['signature']} ({d['programs']} programs)\n{d['report']}{flaky}")
    if s.get("differences_not_shrunk"):
        print("differences not shrunk (the program's difference on another backend was, or over --shrinks): "
              f"{s['differences_not_shrunk']}")
    if "pyspark" in s and isinstance(s["pyspark"], dict):
        p = s["pyspark"]
        print(f"\nPySpark: {p['programs']} programs, {p['seconds']} s; differences from the model by class:")
        for k, v in p["differences"].items():
            print(f"\n-- {k}: {v['count']} programs; smallest:\n{v['example']}")


if __name__ == "__main__":
    sys.exit(main())
