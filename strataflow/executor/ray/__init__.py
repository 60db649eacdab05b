"""The ray backend: executors as Ray actors, on the nodes of a Ray cluster.

Ray is the cluster substrate only -- it places the executor processes, carries the
messages and tells us when one dies. Everything else is strataflow's, unchanged: each
actor (:class:`~.actor.ExecutorActor`) builds the same :class:`ExecutorRuntime` (its own memory
manager, block manager, disk and shuffle directories under the application's directories
on its node) and :class:`ExecutorCore` as an executor process does, and the driver keeps
its scheduler, block-location master, map-output tracker and the policy's plans. Ray's
object store carries stages, task results and blocks; it caches nothing of ours.

The package is split as ``processes.py``/``worker.py`` are: :mod:`.session` connects to
(or starts) Ray, :mod:`.actor` is the executor inside its actor on a node, and
:mod:`.handle` the driver's end, the registered backend. Only the last is imported with
strataflow (it loads Ray when the first executor starts), so ``import strataflow`` needs
neither Ray nor its start-up time.

- A :class:`~.session.RaySession` per application (opened by the fleet) connects to Ray -- a local
  instance of ``executors * cores_per_executor`` CPUs when ``address`` is None (shut
  down at the end), a running cluster for ``"auto"`` or ``"ray://host:port"``, or the
  connection the caller already made (``ray.is_initialized()``: kept) -- and reserves a
  placement group of one ``{"CPU": cores_per_executor}`` bundle per executor, spread over
  the nodes (``SPREAD``). An executor takes a free bundle; a lost one's bundle is freed
  for its replacement (Ray re-places the bundles of a lost node when resources allow).
- A task is one actor call in the ``tasks`` concurrency group (``cores_per_executor``
  threads), whose argument is the task's spec pickled by the driver (a bytes argument
  costs Ray least); tasks the driver waits for together (an iteration over cached data)
  go as one ``run_many`` call per task thread, their replies in one list. A stage's pickled work (and the policy's plan for that executor) goes
  once per executor before its first task, in a ``control`` call -- in line when small
  (up to 32 KB: a K-means iteration's is ~5 KB), else through the object store -- and a
  task that arrives first waits for it (calls of two groups are not ordered; the control
  group's threads are never all taken by waiting tasks). Results come back as pickle-5 out-of-band
  buffers (through the object store when large) and are copied into buffers of their
  own, so arrays are writable as with the processes backend.
- Questions (``call``) run in the ``control`` group, so a busy executor still answers. A
  long poll (``events``, one always pending per executor) brings the events its block
  manager and tasks post between replies, and is how an idle executor's death is seen.
- Any ``RayActorError`` (the actor was killed, its node removed or unreachable) is the
  executor's loss: the actor is killed for good (``max_restarts=0``), its running tasks
  fail with :class:`ExecutorLost`, and the fleet reports it, forgets its blocks and map
  outputs (recomputed from lineage) and starts a replacement.
- A block another executor holds in memory (or on a disk of another node) is fetched from
  that executor's actor directly (``block``, zero-copy for numpy within a node); a disk
  copy on the same node is read straight from its file, as with processes.
"""


from __future__ import annotations

__all__ = ["short_error"]


def short_error(exc: BaseException, limit: int = 300) -> str:
    """An exception on one line, at most ``limit`` characters (Ray's run to pages)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"
