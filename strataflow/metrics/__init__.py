"""Events, the event log, GC timing and progress display."""

from .events import EventBus, JsonLinesLog
from .gc_timer import gc_timer

__all__ = ["EventBus", "JsonLinesLog", "gc_timer"]
