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

from ..options import ConfigError, check_watermarks, parse_size
from ..storage.policies import POLICIES, NoRecachePolicy
from ..storage.probe import probe_bandwidth
from .model import CacheModel
from .opt import BeladyModel
from .trace import Trace

__all__ = ["simulate", "parse_bandwidth", "table", "DEFAULT_BANDWIDTH", "REFERENCES"]

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


def simulate(trace: Trace, policies: Sequence[str] | None = None,
             bandwidth: dict[str, float] | None = None, watermarks: tuple[float, float] | None = None) -> dict:
    """Replays ``trace`` against each policy (default: all of ``POLICIES``), ``opt`` and
    ``unbounded``; returns the report dict. ``watermarks`` (low, high) model the
    asynchronous eviction writer for the policies (``opt`` and ``unbounded`` have none);
    they are checked as the Context's ``eviction_watermarks`` are."""
    watermarks = None if watermarks is None else check_watermarks(watermarks)
    bw = bandwidth or dict(DEFAULT_BANDWIDTH)
    names = list(policies) if policies else list(POLICIES)
    out: dict[str, dict] = {}
    for name in names:
        if name not in POLICIES:
            raise ConfigError(f"simulate: unknown policy {name!r}; choose among {', '.join(POLICIES)}")
        model = CacheModel(POLICIES[name](), trace.capacity, trace.storage_fraction, watermarks=watermarks)
        out[name] = model.run(trace).as_dict(bw["mem"], bw["disk"])
    out["opt"] = BeladyModel(trace.capacity, trace.storage_fraction).run(trace).as_dict(bw["mem"], bw["disk"])
    everything = sum(size for _, size in {b: s for b, s in trace.reads()}.items()) + trace.capacity
    unbounded = CacheModel(NoRecachePolicy(), everything * 4, trace.storage_fraction, prefetch=False)
    out["unbounded"] = unbounded.run(trace).as_dict(bw["mem"], bw["disk"])
    summary = trace.summary()
    if watermarks is not None:
        summary["async_eviction_watermarks"] = list(watermarks)
    return {"policies": out, "trace": summary, "bandwidth": {k: float(v) for k, v in bw.items()}}


def table(report: dict, title: str | None = None) -> Table:
    """The report as a rich table, policies then the references; hit ratio also as a
    fraction of ``opt``'s."""
    tr = report["trace"]
    mb = 1 << 20
    t = Table(title=title or (f"{tr['name']}: {tr['reads']} reads of {tr['blocks']} blocks, "
                              f"{tr['data_bytes'] / mb:,.0f} MiB of data, memory {tr['memory_bytes'] / mb:,.0f} MiB "
                              f"(pressure {tr['pressure']}x)"))
    for col in ("policy", "byte hit ratio", "of opt", "MiB moved", "MiB from disk", "est. s"):
        t.add_column(col, justify="left" if col == "policy" else "right")
    opt = report["policies"]["opt"]["byte_hit_ratio"]
    for name, r in report["policies"].items():
        share = f"{r['byte_hit_ratio'] / opt:.2f}" if opt > 0 else "-"
        t.add_row(name, f"{r['byte_hit_ratio']:.3f}", share, f"{r['bytes_moved'] / mb:,.0f}",
                  f"{r['disk_hit_bytes'] / mb:,.0f}", f"{r['est_s']:.3f}")
    return t
