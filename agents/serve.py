"""``python -m agents.serve``: llama-cpp-python's OpenAI-compatible server with the model's extra buffer types
off, so it runs on any x86 CPU, Intel or AMD, AMX or not.

Why: a native build of llama-cpp-python (``pip install "llama-cpp-python[server]"``, built with
``GGML_NATIVE``) compiles ggml's AMX matrix kernels on a CPU that lists ``amx_tile``/``amx_int8``, and loads
the weights into the AMX "extra" buffer type; some Intel VMs advertise AMX but fault on it, and the server
dies at its first request (a general protection fault in ``libggml-cpu.so``). ggml reaches the AMX kernels
(``ggml-cpu/amx/``) only through that extra buffer type, and llama.cpp places weights there only when
``llama_model_params.use_extra_bufts`` is true (its default); llama-cpp-python's ``Llama`` and server do not
expose the field, so this launcher sets it to false in the default parameters every model is loaded with, then
runs ``python -m llama_cpp.server`` with the same arguments. The AVX2/AVX-512 kernels of the build still do
the work; only the repacked (and AMX) weight layouts are off.

It also records where it logs (the file its stdout goes to, ``> server.log``) and its process id under
`record_dir`, so a run whose server stops answering names its log (`server_note`).

Nothing here imports ``llama_cpp`` until `main` runs: the agents package never needs it.

Example:
    ``python -m agents.serve --model m.gguf --n_ctx 8192 --chat_format chatml-function-calling --port 8765``
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from core.user_cache import cache_root

__all__ = [
    "main",
    "record_dir",
    "record_path",
    "server_note",
    "stdout_log",
    "without_extra_buffer_types",
    "write_record",
]


def record_dir() -> Path:
    """Where each launched server records its process id and its log, one file per port: ``servers/`` in the
    user's medstrat cache (`core.user_cache.cache_root`), read by every run of the user on this machine."""
    return cache_root() / "servers"


_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def record_path(port: int) -> Path:
    """The record of the server launched on ``port`` (this machine)."""
    return record_dir() / f"{int(port)}.json"


def stdout_log() -> str | None:
    """The file this process's stdout (else stderr) is redirected to (``> server.log 2>&1``), if any."""
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("/") and Path(target).is_file():
                return target
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A process that exited but whose parent (the shell that started it with `&`) has not reaped it yet is a
    # zombie: signal 0 still reaches it.
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
        return "\nState:\tZ" not in status
    return True


def server_note(api_base: str | None) -> str | None:
    """What the record of the server behind a (loopback) ``api_base`` says, its log and whether its process
    has exited (``"its process 123 has exited; its log: /path/server.log"``), or None without a record.
    """
    if not api_base:
        return None
    parts = urlsplit(api_base)
    if parts.hostname not in _LOOPBACK or parts.port is None:
        return None
    try:
        record = json.loads(record_path(parts.port).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    notes = []
    pid = record.get("pid")
    if isinstance(pid, int):
        notes.append(f"its process {pid} has exited" if not _alive(pid) else f"its process {pid} is running")
    if record.get("log"):
        notes.append(f"its log: {record['log']}")
    return "; ".join(notes) or None


def write_record(port: int, log: str | None, pid: int | None = None) -> Path:
    """Record the server on ``port``: its process id and its log (read by `server_note`).

    Args:
        port: The port it listens on.
        log: Its log file, if known.
        pid: Its process id (default: this process).

    Returns:
        The record's path.
    """
    record_dir().mkdir(parents=True, exist_ok=True)
    path = record_path(port)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"pid": pid or os.getpid(), "log": log}), encoding="utf-8")
    os.replace(tmp, path)
    return path


def without_extra_buffer_types(native: Any) -> None:
    """Make every model ``native`` (``llama_cpp.llama_cpp``) loads skip the extra buffer types.

    ``Llama`` and the server read ``llama_model_default_params()`` from that module at load time, so wrapping
    it there reaches every model they load.

    Raises:
        RuntimeError: This llama-cpp-python's ``llama_model_params`` has no ``use_extra_bufts`` field (too
            old to turn them off at run time).
    """
    fields = {name for name, *_ in native.llama_model_params._fields_}
    if "use_extra_bufts" not in fields:
        raise RuntimeError(
            "this llama-cpp-python has no llama_model_params.use_extra_bufts (0.3.16 or later has it): "
            "cannot turn off the AMX/repack buffer types; upgrade it (docs/agents.md, Local models)"
        )
    default = native.llama_model_default_params
    if getattr(default, "_medstrat_no_extra_bufts", False):
        return

    def params() -> Any:
        made = default()
        made.use_extra_bufts = False
        return made

    params._medstrat_no_extra_bufts = True  # type: ignore[attr-defined]
    native.llama_model_default_params = params


def main(argv: list[str] | None = None) -> int:
    """Serve a GGUF as ``python -m llama_cpp.server`` does, with the extra buffer types off.

    Args:
        argv: The server's arguments (default: ``sys.argv[1:]``), handed to ``llama_cpp.server`` unchanged.

    Returns:
        The server's exit status.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    ours = argparse.ArgumentParser(add_help=False)
    ours.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
    known, _ = ours.parse_known_args(args)
    import llama_cpp.llama_cpp as native  # here, not at import: the agents package never needs it

    without_extra_buffer_types(native)
    if not {"-h", "--help"} & set(args):
        record = write_record(known.port, stdout_log())
        # A clean exit (Ctrl-C, `kill %1`) takes its record along; a crash leaves it for the run to name.
        atexit.register(lambda: record.unlink(missing_ok=True))
    print(
        "agents.serve: llama-cpp-python with extra buffer types off (no AMX/repack weights; docs/agents.md)",
        file=sys.stderr,
        flush=True,
    )
    import runpy

    # Exactly `python -m llama_cpp.server ARGS`, in this process, whose models now load without extra buffers.
    sys.argv = ["python -m llama_cpp.server", *args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
