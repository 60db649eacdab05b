"""``strataflow store start|stop|status|ls|rm|balance``: the shared store from the shell
(``ls --inputs`` and ``rm --inputs [GLOB...]``: its input cache, ``inputs.py``).

``ls``, ``rm`` and ``balance`` work on the store's files, with or without a daemon;
``start`` runs the daemon (``daemon.py``) in the background, ``stop`` asks it to end,
``status`` shows its answer, or the store's figures from its files when none runs.

``--root DIR`` may come before the subcommand or after it (``store ls --root DIR``, as
git and docker users write it): each subcommand declares it too, with a default of
``SUPPRESS``, so a value given before the subcommand is kept unless one is given after.

Which commands make a store: only ``start`` (it serves the store, so it makes one at a
new root, and says so). ``ls``, ``status``, ``stop``, ``rm`` and ``balance`` use an existing
store only (``root.existing_root``): a mistyped ``--root`` is an error naming the path,
never a new empty store that lists nothing and exits 0.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
from typing import Any

from strataflow.config.layers import ENV_PREFIX, layered_options
from strataflow.store.cli_text import balance_text, removed_text
from strataflow.store.daemon import request
from strataflow.store.errors import DatasetNotFound, StoreError, StoreNotFound
from strataflow.store.inputs import figures as input_figures
from strataflow.store.inputs import list_inputs, remove_inputs
from strataflow.store.root import default_root, existing_root, former_default_root
from strataflow.store.store import Store
from strataflow.store.tiers import live_readers, opens

__all__ = ["add_parser", "MAKES_A_STORE"]

#: the only subcommand that makes a store where there is none
MAKES_A_STORE = ("start",)
ENV = ENV_PREFIX + "STORE"
TIERS_EXAMPLE = '[{"name": "mem", "dir": "/dev/shm/sf", "capacity": "4GB"}, {"name": "ssd", "dir": "/mnt/ssd/sf"}]'


def _root(args: Any) -> str | None:
    """``--root``, else ``$STRATAFLOW_STORE`` read as ``Context(store=None)`` reads it (the
    option table's environment layer), else None: the user's default store."""
    if args.root:
        return args.root
    return layered_options(["store"], {}, None, os.environ)[0].get("store")


def _start(args: Any, root: str | None) -> int:
    try:
        existing_root(root)
        new = ""
    except StoreNotFound:
        new = " (a new, empty store)"
    store = Store(root, tiers=args.tiers, verify=args.verify)
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
    print(f"store daemon {proc.pid} serving {store.path}{new}")
    return 0


def _rm(store: Store, names: list[str]) -> int:
    """Removes every name, or none when one is not there (a typo must not leave the
    others half-removed)."""
    try:
        entries = [store.info(name) for name in dict.fromkeys(names)]
    except DatasetNotFound as exc:  # it names the store, the name and the datasets there are
        raise DatasetNotFound(f"{exc}; nothing removed" if len(names) > 1 else str(exc)) from None
    for entry in entries:
        readers = live_readers(store.path, entry.id)
        store.rm(entry.name)
        print(removed_text(entry, readers))
    return 0


def _former_default(root: str | None) -> dict | None:
    """The default store's former place in memory (``/dev/shm``), when the default store
    is asked for and that one still holds files: its root, bytes and how to empty it."""
    former = former_default_root()
    if root is not None or not os.path.isdir(former):
        return None
    size = 0
    for d, _, files in os.walk(former):
        for f in files:
            try:
                size += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                continue
    return {"root": former, "bytes": size, "medium": "memory",
            "note": f"memory until removed: strataflow store rm --inputs --root {former}, or rm -r {former}"}


def _run(args: Any) -> int:
    command = args.store_command
    try:
        root = _root(args)
        if command in MAKES_A_STORE:
            return _start(args, root)
        try:
            path = existing_root(root)
        except StoreNotFound as exc:
            former = _former_default(root)
            if former is None:
                raise
            raise StoreNotFound(f"{exc}. The former default store, in memory, is at {former['root']} "
                                f"({former['bytes']} bytes): --root {former['root']}") from None
        if command == "stop":  # no Store: stopping must not sweep or make anything
            answer = request(path, "stop")
            print(f"stopped the store daemon of {path}" if answer else f"no store daemon runs for {path}")
            return 0
        store = Store(path)
        if command == "status":
            answer = request(store.path, "status") or {"daemon": None, "root": store.path, "tiers": store.usage(),
                                                       "datasets": len(store.ls())}
            answer["figures"] = store.figures()  # bytes per tier, moves, evictions, rebuilds, hits per application
            answer["inputs"] = input_figures(store.root)  # the input cache: entries, bytes, hits, seconds saved
            answer["tiers"] = store.usage()  # per tier: memory or disk, bytes, the input cache's bytes and bound
            former = _former_default(root)
            if former is not None and os.path.realpath(former["root"]) != os.path.realpath(store.path):
                answer["former_default_store"] = former
            print(json.dumps(answer, indent=1))
            return 0
        if command == "ls" and args.inputs:
            for i in list_inputs(store.root):
                print(f"{i.path}\t{i.reader}\t{i.part}\t{i.nbytes} bytes\t{i.parse_s:.3f} s to decode\t"
                      f"{opens(store.path, i.id)} hits\t{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(i.created))}")
            return 0
        if command == "ls":
            for e in store.ls():
                print(f"{e.name}\t{e.num_partitions} partitions\t{e.nbytes} bytes\t{'/'.join(e.kinds)}\t"
                      f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(e.created))}")
            return 0
        if command == "rm" and args.inputs:
            n, freed = remove_inputs(store.root, lambda e: not args.names or any(
                fnmatch.fnmatch(p, pat) for pat in args.names for p in e.path.split(",")))
            print(f"removed {n} cached input partition(s), {freed} bytes")
            return 0
        if command == "rm":
            if not args.names:
                print("strataflow store rm: name the datasets to remove (or --inputs)", file=sys.stderr)
                return 2
            return _rm(store, args.names)
        if command == "balance":
            moves = store.balance()
            print(json.dumps(moves, indent=1) if args.json else balance_text(moves))
            return 0
    except StoreError as exc:
        print(f"strataflow store {command}: {exc}", file=sys.stderr)
        return 2
    raise AssertionError(f"store subcommand {command!r} has no handler")  # argparse allows only those above


def _tiers(text: str) -> list[dict]:
    """``--tiers``: a JSON list of tiers, fastest first (each checked by the store)."""
    try:
        tiers = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg} at character {exc.pos}); write a list such as "
                                         f"{TIERS_EXAMPLE}") from None
    if not isinstance(tiers, list) or not tiers or not all(isinstance(t, dict) and "dir" in t for t in tiers):
        raise argparse.ArgumentTypeError(f"expected a non-empty JSON list of tiers, each with a \"dir\", such as "
                                         f"{TIERS_EXAMPLE}; got {text!r}")
    return tiers


def add_parser(sub: Any) -> None:
    """Registers ``store`` in the CLI's subcommands."""
    from strataflow.config.flag_types import positive

    root_help = f"the store's root (default: ${ENV} if set, else {default_root()})"
    p = sub.add_parser("store", help="the shared store of datasets across applications (docs/store.md)",
                       description="The shared store from the shell. --root may be given before or after the "
                                   "subcommand. Only start makes a store; the others need an existing one.")
    p.add_argument("--root", default=None, help=root_help)
    after = argparse.ArgumentParser(add_help=False)  # --root after the subcommand: see the module's docstring
    after.add_argument("--root", default=argparse.SUPPRESS, help=root_help)
    ss = p.add_subparsers(dest="store_command", required=True, metavar="{start,stop,status,ls,rm,balance}")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return ss.add_parser(name, parents=[after], help=help, description=help)

    st = command("start", "run the store's daemon in the background (optional: sweeps, tier moves); makes the "
                          "store if there is none at the root")
    st.add_argument("--interval", type=positive(float), default=5.0, help="seconds between background passes")
    st.add_argument("--tiers", type=_tiers, default=None,
                    help=f"tiers as JSON, fastest first, e.g. '{TIERS_EXAMPLE}' (recorded in the store for every user)")
    st.add_argument("--verify", default=None, choices=["process", "store"],
                    help="check a block file's digest once per version of the file (store, the default) or at its "
                         "first read in each process (process: docs/store.md)")
    command("stop", "stop the daemon")
    command("status", "the daemon's status and the store's figures (bytes per tier, moves, evictions, "
                      "rebuilds, opens and block reads per application)")
    ls = command("ls", "the published datasets: name, partitions, bytes, kinds, when saved")
    ls.add_argument("--inputs", action="store_true",
                    help="list the input cache instead: per cached partition its file(s), reader, part, bytes, the "
                         "seconds its decode took, its hits")
    rm = command("rm", "remove datasets (readers holding them keep them until they close); says what each held; "
                       "removes none if a name is not there")
    rm.add_argument("names", nargs="*", metavar="NAME")
    rm.add_argument("--inputs", action="store_true",
                    help="remove cached inputs instead: those of the files the NAMEs match (globs), all without one")
    bal = command("balance", "move blocks down the tiers over their capacity, evict from the last one, move "
                             "datasets read again up, now; says what moved")
    bal.add_argument("--json", action="store_true", help="print the moves as JSON instead")
    p.set_defaults(func=_run)
