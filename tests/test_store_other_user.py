"""Another user against a store (issue 42: "another user's access refused where the test
can run as another uid"). The suite runs as root, so it can be another user for real: a
child forked from this process drops to uid/gid 65534 (``nobody``) and tries the store of
root's, in several ways; what it met comes back through a pipe. The child is forked, not
started afresh, so that it needs no read access to the interpreter or the project's
files: every module it calls was imported here, before the fork.

The checks are those of the operating system (0700 directories, 0600 files and socket)
and the store's own (the owner check of :func:`strataflow.store.root.check_private`, the
daemon's peer credentials), each shown to refuse on its own: the store's checks with the
file modes loosened, as a careless ``chmod`` would leave them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import traceback

import pytest

from strataflow.store import Store, StoreAccessError
from strataflow.store.daemon import SOCKET, request

OTHER = 65534  # nobody

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user needs root")


def as_other_user(probe) -> dict:
    """``probe()``'s result (a JSON-able dict) as run by uid/gid ``OTHER`` in a forked
    child; an exception in the child comes back as {"raised": type, "message": ...}."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop every privilege, run the probe, report, leave at once
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(OTHER)
            os.setuid(OTHER)
            try:
                out = {"uid": os.geteuid(), **probe()}
            except Exception as exc:  # noqa: BLE001 - what the other user met is the result
                out = {"uid": os.geteuid(), "raised": type(exc).__name__, "message": str(exc),
                       "is_permission": isinstance(exc, PermissionError)}
            os.write(w, json.dumps(out).encode())
        except BaseException:  # noqa: BLE001 - never return into pytest from a forked child
            os.write(w, json.dumps({"child_failed": traceback.format_exc()}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert "child_failed" not in out, out["child_failed"]
    assert out["uid"] == OTHER
    return out


@pytest.fixture
def shared_parent():
    """A directory anyone may pass through (0755), as ``/dev/shm`` and ``/tmp`` are, holding
    root's store; removed after."""
    d = tempfile.mkdtemp(prefix="sf-other-user-")
    os.chmod(d, 0o755)
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


@pytest.fixture
def root_store(shared_parent):
    """Root's store with one saved dataset, and the path of one of its block files."""
    from strataflow import Context

    path = os.path.join(shared_parent, "store")
    with Context(memory="64MB", parallelism=1, backend="threads", progress=False, store=path) as ctx:
        import numpy as np

        ctx.store.save(ctx.from_numpy(np.arange(1024, dtype=np.float64), 1), "secret")
    blocks = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(path, "data")) for f in fs]
    assert blocks
    return path, blocks[0]


def test_another_user_cannot_open_the_store_or_read_its_files(root_store):
    path, block = root_store
    Store(path).ls()  # everything the probes call is imported before the fork

    opened = as_other_user(lambda: {"names": Store(path).ls()})
    assert opened.get("raised") == "StoreAccessError" and opened["is_permission"], opened
    assert "belongs to uid 0" in opened["message"] and f"uid {OTHER}" in opened["message"]

    def read_block():
        with open(block, "rb") as f:
            return {"bytes": len(f.read())}

    read = as_other_user(read_block)
    assert read.get("raised") == "PermissionError", read  # 0700 store, 0600 block files

    def list_store():
        return {"names": os.listdir(path)}

    assert as_other_user(list_store).get("raised") == "PermissionError"


def test_the_owner_check_refuses_even_where_the_modes_would_let_another_user_in(root_store):
    """With the store's modes loosened (0755/0644: a careless chmod), the files are readable
    by anyone, but the store's owner check still refuses the other user."""
    path, _ = root_store
    for d, dirs, files in os.walk(path):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    out = as_other_user(lambda: {"names": Store(path).ls()})
    assert out.get("raised") == "StoreAccessError", out
    assert "belongs to uid 0" in out["message"]


def test_a_store_behind_a_directory_another_user_cannot_pass_says_so(tmp_path):
    """The other user's own store path under root's private directory: refused with a
    StoreAccessError naming the directory, not a bare PermissionError from deep inside."""
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    path = str(private / "store")
    out = as_other_user(lambda: {"names": Store(path).ls()})
    assert out.get("raised") == "StoreAccessError", out
    assert path in out["message"] and "permission denied" in out["message"].lower()


def _connect_and_ask(sock_path: str):
    def probe():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        try:
            s.connect(sock_path)
            # no request sent: a daemon answers another uid at once, before reading (a
            # request written meanwhile could meet the closed connection: EPIPE)
            return {"answer": s.makefile("rb").readline().decode()}
        finally:
            s.close()
    return probe


def test_the_daemon_refuses_another_user_by_its_peer_credentials(root_store):
    path, _ = root_store
    proc = subprocess.Popen([sys.executable, "-m", "strataflow.store.daemon", path, "3600"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert '"socket"' in proc.stdout.readline(), proc.stderr.read()
        sock_path = os.path.join(path, SOCKET)
        assert request(path, "ls")["datasets"][0]["name"] == "secret"  # the owner is served

        blocked = as_other_user(_connect_and_ask(sock_path))
        assert blocked.get("raised") == "PermissionError", blocked  # 0700 store directory

        os.chmod(path, 0o711)  # a careless chmod: the socket reachable and writable by all
        os.chmod(sock_path, 0o666)
        asked = as_other_user(_connect_and_ask(sock_path))
        assert "refused" in asked.get("answer", ""), asked
        assert "secret" not in asked["answer"]
        assert request(path, "ls")["datasets"][0]["name"] == "secret"  # and still serves its owner
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_another_users_request_always_reads_the_refusal(root_store):
    """Issue 50: another user asking the daemon sometimes met a raw BrokenPipeError (the
    daemon answers another uid before reading, so the request could meet a closed socket).
    The race forced, as another uid for real: ``request`` writes only once the daemon has
    answered and closed; it still returns the refusal."""
    import select

    from strataflow.store import daemon as daemon_mod

    path, _ = root_store
    proc = subprocess.Popen([sys.executable, "-m", "strataflow.store.daemon", path, "3600"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert '"socket"' in proc.stdout.readline(), proc.stderr.read()
        os.chmod(path, 0o711)  # the socket reachable by another user: only the daemon's check refuses
        os.chmod(os.path.join(path, SOCKET), 0o666)

        class LateWriter(socket.socket):
            def connect(self, address):
                super().connect(address)
                poll = select.poll()
                poll.register(self, select.POLLHUP | select.POLLRDHUP)
                assert poll.poll(60_000), "the daemon never closed the connection"  # bounds a hang only

        def ask_late():
            daemon_mod.socket.socket = LateWriter  # in the forked child only
            return {"answer": request(path, "ls")}

        asked = as_other_user(ask_late)
        assert "raised" not in asked, asked
        assert "refused" in asked["answer"]["error"] and "secret" not in json.dumps(asked)
        assert request(path, "ls")["datasets"][0]["name"] == "secret"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
