"""``strataflow store start|stop|status|ls|rm|balance``: the shared store from the shell.

``ls``, ``rm`` and ``balance`` work on the store's files, with or without a daemon;
``start`` runs the daemon (``daemon.py``) in the background, ``stop`` asks it to end,
``status`` shows its answer, or the store's figures from its files when none runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from strataflow.store.daemon import request
from strataflow.store.errors import StoreError
from strataflow.store.root import default_root
from strataflow.store.store import Store

__all__ = ["add_parser"]


def _start(args: Any, store: Store) -> int:
    if request(store.path, "status") is not None:
        print(f"a store daemon already runs for {store.path}")
        return 0
    cmd = [sys.executable, "-m", "strataflow.store.daemon", store.path, str(args.interval)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while request(store.path, "status") is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            print(f"strataflow store: the daemon did not start (exit status {proc.poll()})", file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(f"store daemon {proc.pid} serving {store.path}")
    return 0


def _run(args: Any) -> int:
    try:
        store = Store(args.root, tiers=json.loads(args.tiers) if getattr(args, "tiers", None) else None,
                      verify=getattr(args, "verify", None))
        if args.store_command == "start":
            return _start(args, store)
        if args.store_command == "stop":
            answer = request(store.path, "stop")
            print("stopped" if answer else "no daemon runs")
            return 0
        if args.store_command == "status":
            answer = request(store.path, "status") or {"daemon": None, "root": store.path, "tiers": store.usage(),
                                                       "datasets": len(store.ls())}
            answer["figures"] = store.figures()  # bytes per tier, moves, evictions, rebuilds, hits per application
            print(json.dumps(answer, indent=1))
            return 0
        if args.store_command == "ls":
            for e in store.ls():
                print(f"{e.name}\t{e.num_partitions} partitions\t{e.nbytes} bytes\t{'/'.join(e.kinds)}\t"
                      f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(e.created))}")
            return 0
        if args.store_command == "rm":
            for name in args.names:
                store.rm(name)
            return 0
        if args.store_command == "balance":
            print(json.dumps(store.balance(), indent=1))
            return 0
    except StoreError as exc:
        print(f"strataflow store: {exc}", file=sys.stderr)
        return 2
    return 2


def add_parser(sub: Any) -> None:
    """Registers ``store`` in the CLI's subcommands."""
    p = sub.add_parser("store", help="the shared store of datasets across applications (docs/store.md)")
    p.add_argument("--root", default=None, help=f"the store's root (default: {default_root()})")
    ss = p.add_subparsers(dest="store_command", required=True)
    st = ss.add_parser("start", help="run the store's daemon in the background (optional: sweeps, tier moves)")
    st.add_argument("--interval", type=float, default=5.0, help="seconds between background passes")
    st.add_argument("--tiers", default=None,
                    help='tiers as JSON, fastest first: [{"name": "mem", "dir": ..., "capacity": "4GB"}, ...]')
    st.add_argument("--verify", default=None, choices=["process", "store"],
                    help="check a block file's digest once per version of the file (store, the default) or at its "
                         "first read in each process (process: docs/store.md)")
    ss.add_parser("stop", help="stop the daemon")
    ss.add_parser("status", help="the daemon's status and the store's figures (bytes per tier, moves, evictions, "
                                 "rebuilds, opens and block reads per application)")
    ss.add_parser("ls", help="the published datasets")
    rm = ss.add_parser("rm", help="remove datasets (readers holding them keep them until they close)")
    rm.add_argument("names", nargs="+")
    ss.add_parser("balance", help="move blocks down the tiers over their capacity, evict from the last one, move "
                                  "datasets read again up, now")
    p.set_defaults(func=_run)
