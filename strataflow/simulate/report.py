"""Every policy on one trace, against ``opt`` and ``unbounded``: the simulator's report.

Caffeine's simulator shape: one trace, every registered policy (fresh instances), the
clairvoyant optimum and an unbounded cache as the two references, one row each. The JSON
is ``{"policies": {NAME: {"byte_hit_ratio", "bytes_moved", "est_s", ...counters}},
"trace": {...}, "bandwidth": {...}}``.

Estimated time uses one bandwidth per tier: memory 10 GiB/s and disk 1 GiB/s unless given
(``--bandwidth mem=12GB,disk=400MB``; ``disk=probe:DIR`` measures DIR's cold sequential
read with ``strataflow probe``'s method).
"""

from __future__ import annotations

from typing import Sequence

from rich.table import Table

from strataflow.common.checks import ConfigError, check_watermarks, parse_size
from strataflow.storage.policies import POLICIES, NoRecachePolicy
from strataflow.storage.disk.probe import probe_bandwidth
from strataflow.simulate.model import CacheModel, Tally
from strataflow.simulate.opt import BeladyModel
from strataflow.simulate.trace import Trace

__all__ = ["simulate", "simulate_executors", "parse_bandwidth", "table", "DEFAULT_BANDWIDTH", "REFERENCES"]

DEFAULT_BANDWIDTH = {"mem": 10 << 30, "disk": 1 << 30}
REFERENCES = ("opt", "unbounded")


def parse_bandwidth(text: str | None) -> dict[str, float]:
    """``mem=10GB,disk=1GB`` (bytes per second, powers of 1024) over the defaults;
    ``disk=probe:DIR`` measures DIR."""
    bw = dict(DEFAULT_BANDWIDTH)
    if not text:
        return bw
    for part in text.split(","):
        if "=" not in part:
            raise ConfigError(f"--bandwidth: expected TIER=SIZE pairs such as mem=10GB,disk=1GB, got {part!r}")
        tier, value = (x.strip() for x in part.split("=", 1))
        if tier not in bw:
            raise ConfigError(f"--bandwidth: unknown tier {tier!r}; the simulator models {', '.join(bw)}")
        if value.startswith("probe:"):
            r = probe_bandwidth(value[len("probe:"):], 64 << 20, cold=True)
            bw[tier] = float(r["read_mb_per_s"]) * (1 << 20)
        else:
            bw[tier] = float(parse_size(value, "--bandwidth"))
        if bw[tier] <= 0:
            raise ConfigError(f"--bandwidth: {tier} must be > 0")
    return bw


def _tallies(trace: Trace, names: Sequence[str], watermarks: tuple[float, float] | None) -> dict[str, Tally]:
    """Each policy's, ``opt``'s and ``unbounded``'s counts on ``trace``."""
    out: dict[str, Tally] = {}
    for name in names:
        model = CacheModel(POLICIES[name](), trace.capacity, trace.storage_fraction, watermarks=watermarks)
        out[name] = model.run(trace)
    out["opt"] = BeladyModel(trace.capacity, trace.storage_fraction).run(trace)
    everything = sum(size for _, size in {b: s for b, s in trace.reads()}.items()) + trace.capacity
    out["unbounded"] = CacheModel(NoRecachePolicy(), everything * 4, trace.storage_fraction, prefetch=False).run(trace)
    return out


def _names(policies: Sequence[str] | None) -> list[str]:
    names = list(policies) if policies else list(POLICIES)
    for name in names:
        if name not in POLICIES:
            raise ConfigError(f"simulate: unknown policy {name!r}; choose among {', '.join(POLICIES)}")
    return names


def simulate(trace: Trace, policies: Sequence[str] | None = None,
             bandwidth: dict[str, float] | None = None, watermarks: tuple[float, float] | None = None) -> dict:
    """Replays ``trace`` against each policy (default: all of ``POLICIES``), ``opt`` and
    ``unbounded``; returns the report dict. ``watermarks`` (low, high) model the
    asynchronous eviction writer for the policies (``opt`` and ``unbounded`` have none);
    they are checked as the Context's ``eviction_watermarks`` are."""
    return simulate_executors([trace], policies, bandwidth, watermarks)


def simulate_executors(traces: Sequence[Trace], policies: Sequence[str] | None = None,
                       bandwidth: dict[str, float] | None = None,
                       watermarks: tuple[float, float] | None = None) -> dict:
    """Replays each executor's trace (``trace.executor_traces``) against its own memory,
    with a fresh policy per executor as the run had, and sums the counts: the report has
    ``simulate``'s shape, its ratios over all executors' reads (each executor's first read
    of a block is compulsory), its seconds the executors' data movement added up. The
    ``trace`` part sums the traces (``memory_bytes``: all executors') and says how many
    ``executors`` and each one's ``memory_per_executor``. One trace: ``simulate``'s report."""
    if not traces:
        raise ValueError("simulate: no traces to replay")
    watermarks = None if watermarks is None else check_watermarks(watermarks)
    bw = bandwidth or dict(DEFAULT_BANDWIDTH)
    names = _names(policies)
    total: dict[str, Tally] = {}
    for trace in traces:
        for name, tally in _tallies(trace, names, watermarks).items():
            total[name] = total[name] + tally if name in total else tally
    out = {name: tally.as_dict(bw["mem"], bw["disk"]) for name, tally in total.items()}
    summary = traces[0].summary() if len(traces) == 1 else _summed(traces)
    if watermarks is not None:
        summary["async_eviction_watermarks"] = list(watermarks)
    return {"policies": out, "trace": summary, "bandwidth": {k: float(v) for k, v in bw.items()}}


def _summed(traces: Sequence[Trace]) -> dict:
    parts = [t.summary() for t in traces]
    out = {k: sum(p[k] for p in parts) for k in ("reads", "read_bytes", "blocks", "data_bytes", "memory_bytes")}
    name = parts[0]["name"].rsplit(" executor ", 1)[0]
    out.update(name=name, executors=len(traces), memory_per_executor=traces[0].capacity,
               pressure=round(out["data_bytes"] / out["memory_bytes"], 3) if out["memory_bytes"] else None,
               storage_fraction=traces[0].storage_fraction,
               **{k: v for k, v in traces[0].meta.items() if k != "executor"})
    return out


def table(report: dict, title: str | None = None) -> Table:
    """The report as a rich table, policies then the references; hit ratio also as a
    fraction of ``opt``'s."""
    tr = report["trace"]
    mb = 1 << 20
    memory = f"memory {tr['memory_bytes'] / mb:,.1f} MiB"
    if tr.get("executors", 1) > 1:
        memory = (f"{tr['executors']} executors replayed apart, each with {tr['memory_per_executor'] / mb:,.1f} "
                  f"MiB, summed")
    t = Table(title=title or (f"{tr['name']}: {tr['reads']} reads of {tr['blocks']} blocks, "
                              f"{tr['data_bytes'] / mb:,.1f} MiB of data, {memory} (pressure {tr['pressure']}x)"))
    for col in ("policy", "byte hit ratio", "of opt", "MiB moved", "MiB from disk", "est. s"):
        t.add_column(col, justify="left" if col == "policy" else "right")
    opt = report["policies"]["opt"]["byte_hit_ratio"]
    for name, r in report["policies"].items():
        share = f"{r['byte_hit_ratio'] / opt:.2f}" if opt > 0 else "-"
        t.add_row(name, f"{r['byte_hit_ratio']:.3f}", share, f"{r['bytes_moved'] / mb:,.0f}",
                  f"{r['disk_hit_bytes'] / mb:,.0f}", f"{r['est_s']:.3f}")
    return t
