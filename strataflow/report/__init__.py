"""``strataflow report``: an event log made into one HTML page a person can read.

The engine writes every step of a run to a JSON-lines event log (``Context(event_log=...)``);
this package folds that log into what a user under memory pressure wants to *see*: when
each task ran on which executor slot, which datasets sat in memory, on each disk tier and in
mapped files against the budget, what moved and when, how often each stage hit memory, and
how close the run's cache came to every policy and Belady's optimum on the same accesses.

One job per module, in the order the data flows:

- ``events``: read and check the log (an error names the file and line);
- ``timeline``: jobs, stages and tasks, each task placed on an executor slot;
- ``window``: the span the time charts share, the first task to the end of the work
  (start-up and the driver's time after the work are figures, not drawn);
- ``occupancy``: the blocks' whereabouts replayed into bytes per dataset and tier over
  time, the bytes moved, and the dynamic memory split;
- ``stages``: the cache's figures per stage and for the whole run, from the log's own
  metrics (``StageEnd`` / ``JobEnd``);
- ``replay``: the same accesses replayed by ``strataflow.simulate``;
- ``charts``: the PNGs (matplotlib, an optional extra imported only here: without it the
  page is written with a note in place of each chart);
- ``page``: the self-contained HTML page (images inlined as base64, no script, no link);
- ``build``: all of the above for one log, into one folder.

Beside it, ``status_page``: the same questions asked of a *running* application, served
live on 127.0.0.1 (``Context.serve_status``, PySpark's ``uiWebUrl``).
"""

from strataflow.report.build import render_report
from strataflow.report.events import LogError, read_events

__all__ = ["render_report", "read_events", "LogError"]
