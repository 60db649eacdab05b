"""Executors: where tasks run and blocks are cached. The driver (the user's process,
``Context``) plans and schedules; each executor has its own block manager, memory share,
disk and shuffle directories and task slots. Backends start and reach them, each a
handle class (``backend.py``'s interface) registered by name in ``backends.py``:
``threads`` (one in-process executor, ``threads.py``), ``processes`` (one process per
executor, ``processes.py``/``worker.py``) and ``ray`` (one Ray actor per executor, on the
nodes of a Ray cluster, ``ray/``)."""
