"""One engine's shared session, and a program run on it against the model.

A ``Runner`` holds one Context (strataflow, any backend) or SparkContext for as many
programs as it is given (a Context starts in seconds; a program runs in tens of
milliseconds). ``check`` runs a program's phases -- the action, a fault, the action
again, unpersist, the action again -- and compares every answer with the model's;
whatever a program persisted is unpersisted after it, so the next starts clean.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

from differential.compare import verdict
from differential.engine import Api, Built, SparkApi, act, build
from differential.model import evaluate, expect
from differential.programs import KILL_FAULT, Program, to_code

__all__ = ["Runner", "SparkRunner", "Failure", "Known", "KNOWN"]


@dataclass(frozen=True)
class Known:
    """An engine bug the tester found and reported (``FINDINGS.md``): programs that meet it
    are counted under its name, not failed, until it is fixed (its minimal repro is a
    strict xfail in ``tests/test_differential*.py``: it flips when fixed)."""

    name: str
    reason: str
    fault: tuple  # the faults it needs ("" for none)
    words: tuple  # all in the failure's message

    def matches(self, f: "Failure") -> bool:
        return (f.program.fault or "") in self.fault and all(w in f.message for w in self.words)


#: open engine bugs, each with its strict-xfail repro (FINDINGS.md #1, chained damaged
#: shuffles giving up, was here until 142ed3f fixed it)
KNOWN: list[Known] = []


@dataclass
class Failure:
    backend: str
    phase: str
    message: str
    program: Program

    @property
    def known(self) -> Known | None:
        return next((k for k in KNOWN if k.matches(self)), None)

    def report(self) -> str:
        known = self.known
        tag = f" (known: {known.name})" if known else ""
        return (f"[{self.backend}] {self.phase}{tag}: {self.message}\n"
                f"program ({', '.join(self.program.ops())}):\n{to_code(self.program)}\n"
                f"(as a script: differential.programs.to_script(program, {self.backend!r}))")


@dataclass
class Stats:
    programs: int = 0
    runs: int = 0
    seconds: float = 0.0
    faults: Counter = field(default_factory=Counter)  # injected (files damaged, or an executor killed)
    vacuous: Counter = field(default_factory=Counter)  # nothing to strike
    families: Counter = field(default_factory=Counter)


class Runner:
    """strataflow on one backend; ``options`` go to the Context."""

    def __init__(self, backend: str, workdir: str | None = None, **options) -> None:
        self.backend = backend
        self.own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"sf-diff-{backend}-")
        self.options = options
        self.stats = Stats()
        self._kills = 0
        self.ctx = None
        self._start()

    def _start(self) -> None:
        from strataflow import Context

        n = getattr(self, "_generation", 0)
        self._generation = n + 1
        base = os.path.join(self.workdir, f"ctx{n}")
        local, shuffle, ckpt = (os.path.join(base, d) for d in ("local", "shuffle", "checkpoints"))
        for d in (local, shuffle, ckpt):
            os.makedirs(d, exist_ok=True)
        opts = dict(backend=self.backend, parallelism=2, memory="256MB", progress=False, local_dirs=[local],
                    shuffle_dirs=[shuffle])
        opts.update(self.options)
        self.ctx = Context(**{k: v for k, v in opts.items() if v is not None})
        self.ctx.set_checkpoint_dir(ckpt)
        self.api = Api(self.ctx)

    @property
    def can_kill(self) -> bool:
        """An executor can be killed without killing the driver (not on threads)."""
        return self.backend != "threads"

    def _fresh_if_worn(self) -> None:
        """A kill spends one of the fleet's replacements: a Context with few left is replaced."""
        fleet = getattr(self.ctx, "fleet", None)
        if fleet is not None and getattr(fleet, "replacements_left", 99) < 2:
            self.ctx.stop()
            self._start()

    def check(self, program: Program) -> list[Failure]:
        t0 = time.perf_counter()
        m = evaluate(program.pipe)
        want = expect(program.action, m)
        fault = program.fault
        if fault == KILL_FAULT:
            self._fresh_if_worn()
            self._kills += 1
        built = Built(kill_marker=os.path.join(self.workdir, f"kill-{self._generation}-{self._kills}")
                      if fault == KILL_FAULT and self.can_kill else None)
        out: list[Failure] = []
        trace = os.environ.get("DIFFERENTIAL_CURRENT")
        if trace:  # where a hung program can be read from (the long run sets it)
            with open(trace, "w") as f:
                f.write(f"# backend {self.backend}, phases {program.phases}\n{to_code(program)}\n")
        self.stats.programs += 1
        self.stats.families[program.family] += 1
        try:
            try:
                ds = build(self.api, program.pipe, built)
            except Exception as exc:  # noqa: BLE001 - an engine that cannot build the program fails it
                return [Failure(self.backend, "build", f"raised {type(exc).__name__}: {exc}", program)]
            run = 0
            for phase in program.phases:
                if phase == "run":
                    run += 1
                    self.stats.runs += 1
                    msg = verdict(want, act(self.api, ds, program.action, m.kind))
                    if msg:
                        label = "run 1" if run == 1 else f"run {run} ({_after(program.phases, run)})"
                        out.append(Failure(self.backend, label, msg, program))
                elif phase == "unpersist":
                    for d in built.persisted:
                        d.unpersist()
                elif phase.startswith("fault:"):
                    self._inject(phase[len("fault:"):], built)
            if built.kill_marker is not None:
                (self.stats.faults if os.path.exists(built.kill_marker) else self.stats.vacuous)[KILL_FAULT] += 1
            return out
        finally:
            self._reset(built)
            self.stats.seconds += time.perf_counter() - t0

    def _inject(self, fault: str, built: Built) -> None:
        if fault == KILL_FAULT:
            return  # a step of the program: it struck while the first run ran
        from differential.faults import inject

        (self.stats.faults if inject(self.ctx, fault) else self.stats.vacuous)[fault] += 1

    def _reset(self, built: Built) -> None:
        for d in built.persisted:
            try:
                d.unpersist()
            except Exception:  # noqa: BLE001 - a failed unpersist shows in the registry check below
                pass
        left = getattr(self.ctx, "_registry", {})
        for ds in list(left.values()):  # persisted by a step that returned an earlier dataset
            ds.unpersist()

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.stop()
            self.ctx = None
        if self.own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _after(phases: tuple, run: int) -> str:
    """What came before run ``run``: 'after fault:block_flip', 'after unpersist'."""
    seen = 0
    for i, p in enumerate(phases):
        if p == "run":
            seen += 1
            if seen == run:
                return "after " + phases[i - 1]
    return ""


class SparkRunner(Runner):
    """PySpark ``local[2]``: the same programs, its answers against the same model."""

    backend = "pyspark"

    def __init__(self, workdir: str | None = None) -> None:
        super().__init__("pyspark", workdir)

    def _start(self) -> None:
        from pyspark import SparkConf, SparkContext

        self._generation = 1
        conf = (SparkConf().setMaster("local[2]").setAppName("strataflow-differential")
                .set("spark.ui.enabled", "false").set("spark.driver.memory", "1g")
                .set("spark.python.worker.reuse", "true"))
        self.ctx = SparkContext.getOrCreate(conf)
        self.ctx.setLogLevel("ERROR")
        ckpt = os.path.join(self.workdir, "checkpoints")
        os.makedirs(ckpt, exist_ok=True)
        self.ctx.setCheckpointDir(ckpt)
        self.api = SparkApi(self.ctx)

    @property
    def can_kill(self) -> bool:
        return False

    def _fresh_if_worn(self) -> None:
        pass

    def _inject(self, fault: str, built: Built) -> None:
        self.stats.vacuous[fault] += 1  # PySpark's files are its own: no fault is injected there

    def _reset(self, built: Built) -> None:
        for d in built.persisted:
            try:
                d.unpersist()
            except Exception:  # noqa: BLE001
                pass
