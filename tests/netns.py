"""A private network namespace for the test run: only ``lo``, brought up, so that what
the tests start (a Ray cluster) binds to 127.0.0.1 and can reach no other address.

``enter_private_netns()`` moves the *calling thread* into a new network namespace
(``unshare(CLONE_NEWNET)`` through libc: Python 3.11 has no ``os.unshare``) and brings
``lo`` up with ``ioctl(SIOCSIFFLAGS)`` (no ``ip`` binary needed). It returns True, or a
string saying why not (not Linux, not permitted, ...), for ``pytest.skip``.

Namespaces are per thread in Linux: threads that already exist stay in the old
namespace; threads and processes started afterwards *from the calling thread* (or from
threads it starts) inherit the new one. So call it early, from the main thread, before
anything starts threads (``pytest_configure`` or the top of ``conftest.py``), and start
Ray from that thread. ``threads_outside()`` lists the threads left behind.

Without root, ``user_namespace=True`` (the default) tries an unprivileged user
namespace as well (``CLONE_NEWUSER``, the uid and gid mapped to themselves): the
kernel allows it only while the process has one thread, and only where unprivileged
user namespaces are enabled.

Note: ``/sys/class/net`` shows the interfaces of the namespace sysfs was mounted in
(the host's), not the caller's: read ``socket.if_nameindex()`` or ``/proc/self/net/dev``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import socket
import struct
import sys
import threading

__all__ = ["remove_new_ray_token", "enter_private_netns", "leave_private_netns", "in_private_netns", "interfaces", "threads_outside",
           "unshare_argv"]

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_entered: bool | str | None = None  # the answer of the first call (later calls repeat it)
_host_ns: str | None = None  # the namespace we left
_host_fd: int | None = None  # an open descriptor of it, for ``leave_private_netns``


def _thread_ns(tid: int | None = None) -> str:
    tid = threading.get_native_id() if tid is None else tid
    return os.readlink(f"/proc/self/task/{tid}/ns/net")


def interfaces() -> list[str]:
    """The network interfaces of the calling thread's namespace."""
    return [name for _, name in socket.if_nameindex()]


def threads_outside() -> list[int]:
    """Native ids of this process's threads that are not in the calling thread's
    network namespace (those that existed before ``enter_private_netns``)."""
    mine = _thread_ns()
    out = []
    for tid in os.listdir("/proc/self/task"):
        try:
            if _thread_ns(int(tid)) != mine:
                out.append(int(tid))
        except OSError:
            pass  # the thread ended meanwhile
    return out


def in_private_netns() -> bool:
    """Whether the calling thread is in a namespace entered by ``enter_private_netns``."""
    return _entered is True and _host_ns is not None and _thread_ns() != _host_ns


def _bring_lo_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _unshare(libc, flags: int) -> int:
    return 0 if libc.unshare(flags) == 0 else ctypes.get_errno()


def _enter(user_namespace: bool) -> bool | str:
    global _host_ns, _host_fd
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux (this is {sys.platform})"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.unshare
    except (OSError, AttributeError) as exc:
        return f"no unshare() in libc: {exc}"
    host = _thread_ns()
    host_fd = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        answer = _enter_from(libc, host, user_namespace)
    except BaseException:
        os.close(host_fd)
        raise
    if answer is True:
        _host_fd = host_fd
    else:
        os.close(host_fd)
    return answer


def _enter_from(libc, host: str, user_namespace: bool) -> bool | str:
    global _host_ns
    err = _unshare(libc, CLONE_NEWNET)
    if err == errno.EPERM and user_namespace:
        uid, gid = os.getuid(), os.getgid()
        nthreads = len(os.listdir("/proc/self/task"))
        err2 = _unshare(libc, CLONE_NEWUSER | CLONE_NEWNET)
        if err2:
            why = os.strerror(err2)
            if err2 == errno.EINVAL and nthreads > 1:
                why += f" (a user namespace needs a single-threaded process; this one has {nthreads} threads)"
            return (f"unshare(CLONE_NEWNET) not permitted (needs root or CAP_SYS_ADMIN: uid {uid}), "
                    f"and an unprivileged user namespace failed: {why}")
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            return f"in a new user namespace but could not map uid/gid: {exc}"
        err = 0
    if err:
        if err == errno.EPERM:
            return f"unshare(CLONE_NEWNET) not permitted (needs root or CAP_SYS_ADMIN; uid {os.getuid()})"
        return f"unshare(CLONE_NEWNET) failed: {os.strerror(err)}"
    try:
        _bring_lo_up()
    except OSError as exc:
        return f"in a new network namespace, but could not bring lo up: {exc}"
    names = interfaces()
    if names != ["lo"]:
        return f"the new namespace has interfaces other than lo: {names}"
    try:  # lo really works
        with socket.socket() as srv:
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            with socket.create_connection(srv.getsockname(), timeout=2.0):
                pass
    except OSError as exc:
        return f"lo is up but 127.0.0.1 does not answer: {exc}"
    _host_ns = host
    return True


def enter_private_netns(user_namespace: bool = True) -> bool | str:
    """Moves the calling thread (and what it starts from now on) into a new network
    namespace whose only interface is ``lo``, up; True, or why not. Idempotent: later
    calls return the first answer without entering another namespace."""
    global _entered
    if _entered is None:
        _entered = _enter(user_namespace)
    return _entered


def leave_private_netns() -> bool | str:
    """Moves the calling thread back to the namespace ``enter_private_netns`` left
    (``setns``); True, or why not (not entered, or entered through a user namespace,
    which cannot go back). Threads started inside stay there. A later
    ``enter_private_netns`` makes a new namespace."""
    global _entered, _host_ns, _host_fd
    if _entered is not True or _host_fd is None:
        return "not in a namespace entered by enter_private_netns"
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if libc.setns(_host_fd, CLONE_NEWNET) != 0:
        return f"setns back to the host's network namespace failed: {os.strerror(ctypes.get_errno())}"
    os.close(_host_fd)
    _entered, _host_ns, _host_fd = None, None, None
    return True


def unshare_argv(argv: list[str]) -> list[str]:
    """``argv`` run in a new network namespace with lo up, through util-linux
    ``unshare`` and iproute2 ``ip`` (the subprocess alternative: root only)."""
    return ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv]


if __name__ == "__main__":
    before = interfaces()
    answer = enter_private_netns()
    print(f"before: {before}; enter_private_netns() -> {answer!r}; now: {interfaces()}; "
          f"threads outside: {threads_outside()}")


RAY_TOKEN = os.path.expanduser("~/.ray/auth_token")


def remove_new_ray_token(had_token: bool) -> None:
    """Ray writes an auth token under ~/.ray when it starts a cluster: removed (and its
    directory, if empty) unless it was there before (``had_token``), so a test or
    benchmark leaves the host's home as it found it."""
    if had_token or not os.path.exists(RAY_TOKEN):
        return
    os.remove(RAY_TOKEN)
    try:
        os.rmdir(os.path.dirname(RAY_TOKEN))
    except OSError:
        pass
