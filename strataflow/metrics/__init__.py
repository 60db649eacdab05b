"""Events, the event log, GC timing and progress display."""

from strataflow.metrics.events import EventBus, JsonLinesLog
from strataflow.metrics.gc_timer import gc_timer

__all__ = ["EventBus", "JsonLinesLog", "gc_timer"]
