"""``strataflow simulate``: replay block-access traces against every cache policy.

One job per module: ``trace`` (the trace format and extraction from an event log),
``synthetic`` (the cyclic, multi, shuffle and hotset patterns), ``model`` (a memory and a
disk driven by a real policy object as the block manager drives it), ``opt`` (Belady's
clairvoyant optimum), ``report`` (all of them on one trace, or on each executor's trace summed, as JSON and a
table).
"""

from strataflow.simulate.model import CacheModel, Tally
from strataflow.simulate.opt import BeladyModel
from strataflow.simulate.report import DEFAULT_BANDWIDTH, parse_bandwidth, simulate, simulate_executors, table
from strataflow.simulate.synthetic import KINDS, synthetic
from strataflow.simulate.trace import Trace, executor_traces, from_event_log, measured_byte_hit_ratio, run_settings

__all__ = ["CacheModel", "Tally", "BeladyModel", "simulate", "simulate_executors", "table", "parse_bandwidth",
           "DEFAULT_BANDWIDTH", "KINDS", "synthetic", "Trace", "from_event_log", "executor_traces",
           "measured_byte_hit_ratio", "run_settings"]
