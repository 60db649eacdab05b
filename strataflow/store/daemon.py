"""The store's daemon: optional background work on a store that needs no daemon to be used.

Readers and writers work on the store's files (``store.py``); the daemon only sweeps the
leftovers of dead writers and readers and moves blocks down full tiers (``tiers.py``), every
``interval`` seconds, and answers ``status`` on a Unix socket. It keeps nothing in memory
that the files do not hold, so a daemon killed with ``kill -9`` and started again serves
every published dataset as before.

One daemon per store: it holds ``daemon.lock`` (flock) for its whole life; a start that
cannot take it reports the running one. The lock proves a socket file left by a dead daemon
stale, so a restart removes it and binds again.

Only the same user: the socket ``daemon.sock`` lies in the store's root (0700) and is made
0600, and every connection's peer credentials (``SO_PEERCRED``) are checked: a process of
another uid is answered with a refusal and closed, whatever the file modes say. Requests and
answers are one JSON line each: ``{"op": "status" | "ls" | "balance" | "sweep" | "stop"}``.

The refusal is always readable. The daemon answers another uid at once, before reading its
request, so the client may write its request after the daemon has closed the connection:
its write then fails with ``EPIPE`` (``BrokenPipeError``) although the refusal already lies
in its socket's receive queue. So the daemon ends its side of the refusal with
``shutdown(SHUT_WR)`` and drains what the client sent before closing (no reset), and
:func:`request` reads the answer even when its write failed: the caller gets the
refusal, never a raw socket error.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time
from typing import Any

from strataflow.common.private_file import open_private
from strataflow.store.catalog import list_entries
from strataflow.store.root import StoreRoot, tier_bytes
from strataflow.store.stats import counters
from strataflow.store.sweep import sweep
from strataflow.store.tiers import balance, live_readers

__all__ = ["StoreDaemon", "request", "SOCKET", "main"]

SOCKET = "daemon.sock"
LOCK = "daemon.lock"
_CRED = struct.Struct("3i")  # pid, uid, gid
#: the answer to a process of another uid
REFUSAL = {"error": "refused: another user's store (the daemon serves only the user who owns it)"}


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    _, uid, _ = _CRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
    return uid


class StoreDaemon:
    """The daemon of the store at ``root`` (see the module's docstring)."""

    def __init__(self, root: str | None, interval: float = 5.0) -> None:
        self.root = StoreRoot(root)
        self.interval = interval
        self._stop = threading.Event()
        self._lock_fd = open_private(self.root.sub(LOCK), os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise RuntimeError(f"a store daemon already runs for {self.root.path}") from None
        os.ftruncate(self._lock_fd, 0)
        os.write(self._lock_fd, json.dumps({"pid": os.getpid(), "since": time.time()}).encode())
        self.sock_path = self.root.sub(SOCKET)
        try:
            os.unlink(self.sock_path)  # a dead daemon's: the lock proves it stale
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(self.sock_path)
        finally:
            os.umask(old)
        os.chmod(self.sock_path, 0o600)
        self.sock.listen(16)
        self.started = time.time()
        self.passes = 0
        self.moves: list[dict] = []
        self.swept: dict = sweep(self.root)

    # -- background work -------------------------------------------------------------------------
    def work_once(self) -> None:
        """One pass: sweep, then move blocks down the full tiers."""
        self.swept = sweep(self.root)
        self.moves = (self.moves + balance(self.root))[-100:]
        self.passes += 1

    def _worker(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.work_once()
            except Exception as exc:  # noqa: BLE001 - keep serving; say why in the status
                self.swept = {"error": f"{type(exc).__name__}: {exc}"}

    # -- requests ----------------------------------------------------------------------------------
    def status(self) -> dict:
        entries = list_entries(self.root.path, self.root.auth)
        return {"pid": os.getpid(), "root": self.root.path, "since": self.started, "passes": self.passes,
                "tiers": [{**t.to_json(), "bytes": tier_bytes(t)} for t in self.root.tiers],
                "datasets": len(entries), "readers": {e.name: live_readers(self.root.path, e.id) for e in entries},
                "last_sweep": self.swept, "recent_moves": self.moves[-10:], **counters(self.root.path)}

    def answer(self, req: dict) -> dict:
        op = req.get("op")
        if op == "status":
            return self.status()
        if op == "ls":
            return {"datasets": [{"name": e.name, "partitions": e.num_partitions, "bytes": e.nbytes,
                                  "kinds": e.kinds, "created": e.created}
                                 for e in list_entries(self.root.path, self.root.auth)]}
        if op == "balance":
            return {"moves": balance(self.root)}
        if op == "sweep":
            return {"swept": sweep(self.root)}
        if op == "stop":
            self._stop.set()
            return {"stopping": True}
        return {"error": f"unknown op {op!r}"}

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if peer_uid(conn) != os.geteuid():
                _refuse(conn)
                return
            line = conn.makefile("rb").readline(1 << 16)
            try:
                out = self.answer(json.loads(line))
            except Exception as exc:  # noqa: BLE001 - a bad request gets an answer, not a dead daemon
                out = {"error": f"{type(exc).__name__}: {exc}"}
            conn.sendall(json.dumps(out).encode() + b"\n")

    def serve_forever(self) -> None:
        worker = threading.Thread(target=self._worker, name="store-daemon-work", daemon=True)
        worker.start()
        self.sock.settimeout(0.5)
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except socket.timeout:
                    continue
                conn.settimeout(10)
                self._serve(conn)
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        try:
            os.unlink(self.sock_path)
        except FileNotFoundError:
            pass
        self.sock.close()
        os.close(self._lock_fd)


def _refuse(conn: socket.socket) -> None:
    """Answers a process of another uid with :data:`REFUSAL`, without reading its request
    first; ends the connection so that the answer stays readable (the module's note): no
    more to send, then what the client already sent is read and dropped (never waiting:
    a client that has not written yet will meet a closed socket, and :func:`request`
    reads the refusal anyway)."""
    try:
        conn.sendall(json.dumps(REFUSAL).encode() + b"\n")
        conn.shutdown(socket.SHUT_WR)
        conn.setblocking(False)  # a socket with a timeout would wait for the client first
        while conn.recv(1 << 16):
            pass
    except OSError:  # BlockingIOError (nothing more sent), or the client gone: nothing to answer
        pass


def request(root: str, op: str, timeout: float = 10.0, **fields: Any) -> dict | None:
    """The daemon's answer to ``op``; None if no daemon listens on the store's socket.
    A daemon that refuses this process (another user's) answers :data:`REFUSAL`, which
    is returned whether or not the request could be written."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(os.path.join(root, SOCKET))
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None
    with s:
        try:
            s.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon answered (a refusal) and closed before reading: its answer is queued
        try:
            line = s.makefile("rb").readline()
        except ConnectionResetError:
            line = b""
        if not line:
            return {"error": "the store daemon closed the connection without an answer (refused: another user's "
                             "store?)"}
        return json.loads(line)


def main(argv: list[str] | None = None) -> int:
    """``python -m strataflow.store.daemon ROOT [INTERVAL]``: run in the foreground."""
    argv = sys.argv[1:] if argv is None else argv
    daemon = StoreDaemon(argv[0] if argv and argv[0] != "-" else None, float(argv[1]) if len(argv) > 1 else 5.0)
    print(json.dumps({"pid": os.getpid(), "socket": daemon.sock_path}), flush=True)
    daemon.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
