"""The child side of ``run_python``: set the limits and the guard, then run the model's script.

Started as ``python _code_child.py POLICY_JSON SCRIPT`` by `agents.tools.code_tool` (never imported by
the parent). The policy names the folders the script may write (its workspace and the candidate's output
folder) and the folders it may not read (the dataset's root outside ``data/``, i.e. ``VLM/`` and the ground
truth, sibling datasets and sibling candidates). Limits are set with ``resource.setrlimit`` before anything
else runs; the guard is a ``sys.addaudithook`` hook, which turns a refused operation into a
``PermissionError`` inside the script.

What the guard covers, honestly: file opens, listings, renames, deletions, folder creation, permission and
time changes made through Python; socket connections, name lookups and binds; starting processes
(``subprocess``, ``os.system``, ``exec``/``spawn``/``fork``). It does not cover what compiled code does on its
own (a C extension or ``ctypes`` calling the OS directly; numpy itself loads libraries through ``ctypes``, so
that cannot be refused): it is a seatbelt against a model's mistakes, not a jail for hostile code. For
that, run the whole experiment in a container without network access and with the dataset mounted
read-only.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import sys
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

# Audit events (https://docs.python.org/3/library/audit_events.html) refused outright.
_NETWORK = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
    }
)
_PROCESS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
    }
)
# Events whose first argument is a path that gets modified.
_MODIFY_FIRST = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "os.chflags",
        "os.lchflags",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
    }
)
# Events whose first two arguments are paths that get modified (source and destination).
_MODIFY_TWO = frozenset({"os.rename", "os.link"})
_READ_FIRST = frozenset({"os.listdir", "os.scandir"})


def _set_limits(limits: dict[str, Any]) -> None:
    def cap(which: int, value: int) -> None:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value if which != resource.RLIMIT_CPU else hard))

    cap(resource.RLIMIT_CPU, max(1, int(limits["cpu_s"])))
    cap(resource.RLIMIT_AS, int(limits["memory_mb"]) * 1024 * 1024)
    cap(resource.RLIMIT_FSIZE, int(limits["file_mb"]) * 1024 * 1024)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _install_guard(policy: dict[str, Any]) -> None:
    realpath = os.path.realpath
    sep = os.sep
    writable = tuple(realpath(p) for p in policy["writable"])
    readable = tuple(realpath(p) for p in policy["readable"])
    hidden = tuple(realpath(p) for p in policy["hidden"])
    busy = [False]

    def under(path: str, roots: tuple[str, ...]) -> bool:
        return any(path == r or path.startswith(r + sep) for r in roots)

    def resolve(path: Any) -> str | None:
        if isinstance(path, int) or path is None:
            return None  # an already open descriptor: it was checked when it was opened
        try:
            raw = os.fsdecode(path)
        except TypeError:
            return None
        return realpath(raw)

    def check_read(path: Any) -> None:
        where = resolve(path)
        if where is not None and under(where, hidden) and not under(where, readable + writable):
            raise PermissionError(f"run_python: reading {os.fsdecode(path)!r} is not allowed (outside data/)")

    def check_write(path: Any) -> None:
        where = resolve(path)
        if where is None or where == os.devnull:
            return
        if not under(where, writable):
            raise PermissionError(
                f"run_python: writing {os.fsdecode(path)!r} is not allowed; write under output/ or the "
                "workspace only (data/ is read-only)"
            )

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy[0]:
            return
        if event in _NETWORK:
            raise PermissionError(f"run_python: network access is disabled ({event})")
        if event in _PROCESS:
            raise PermissionError(f"run_python: starting processes is disabled ({event})")
        if event == "open":
            busy[0] = True
            try:
                path, mode, flags = [*args, None, None, None][:3]
                writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                    isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
                )
                check_write(path) if writing else check_read(path)
            finally:
                busy[0] = False
        elif event in _MODIFY_FIRST or event in _MODIFY_TWO or event in _READ_FIRST:
            busy[0] = True
            try:
                if event in _READ_FIRST:
                    check_read(args[0] if args else ".")
                else:
                    for path in args[: 2 if event in _MODIFY_TWO else 1]:
                        check_write(path)
            finally:
                busy[0] = False

    sys.addaudithook(hook)


def main() -> None:
    """Read the policy, limit and guard this process, then run the script as ``__main__``."""
    policy = json.loads(sys.argv[1])
    script = sys.argv[2]
    _set_limits(policy["limits"])
    _install_guard(policy)
    sys.argv = [script]
    sys.path[0] = os.getcwd()  # the workspace, as for ``python script.py`` there (not this package's folder)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
