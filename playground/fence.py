"""The worker's second fence: an audit hook (PEP 578) that, while a student's program runs, refuses what a program
must never reach even if a guard of the sandbox had a hole: files, sockets, processes, native code, new modules,
code made from text, and the frames of the running program.

A hook cannot be removed once added, and the program cannot reach the flag that arms it: the worker arms it around
each run (`armed()`), and its own work (the reply, the next request) happens unarmed. CPython raises these events
from C, below anything RestrictedPython rewrites.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .guards import Refused

__autodiff_hidden__ = True

# events by prefix: `os.*` covers os.system, os.exec*, os.spawn*, os.posix_spawn, os.fork, os.remove, os.listdir ...
REFUSED_PREFIXES = ("os.", "subprocess.", "socket.", "ctypes.", "shutil.", "pty.", "fcntl.", "mmap.", "winreg.")
# (not `sys._getframe`, `sys.settrace` or `object.__getattr__`: the engine's recorders read the program's frames)
REFUSED_EVENTS = frozenset(
    {
        "open", "import", "compile", "code.__new__", "function.__new__", "sys._current_frames", "sys.addaudithook",
        "builtins.input", "marshal.loads", "pickle.find_class", "urllib.Request", "webbrowser.open",
        "cpython.run_command", "cpython.run_file", "resource.setrlimit", "signal.pthread_kill", "gc.get_referrers",
        "gc.get_referents", "gc.get_objects",
    }
)  # fmt: skip
PROGRAM_FILES = "<program "  # the file name the sandbox compiles each program under
_state: dict[str, object] = {"armed": False, "installed": False, "allowed": ()}


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _state["armed"]:
        return
    if event == "exec":  # the program itself, once; nothing else is run from code objects
        code = args[0] if args else None
        if str(getattr(code, "co_filename", "")).startswith(PROGRAM_FILES):
            return
        _refuse(event)
    if event == "compile" and args and args[0] in _state["allowed"]:  # type: ignore[operator]
        return  # the engine's recorders read the program's own text (its loops, its statements' lines)
    if event in REFUSED_EVENTS or event.startswith(REFUSED_PREFIXES):
        _refuse(event)


def _refuse(event: str) -> None:
    _state["armed"] = False  # the refusal's own work (its sentence, the traceback) runs unarmed...
    try:
        raise Refused(
            f"The Playground stopped the program: it tried `{event}`, which reaches outside its run.",
            "A program here computes with tensors, numbers, lists and its own classes.",
        )
    finally:
        _state["armed"] = True  # ... and the run stays fenced until it ends


def install() -> None:
    """Add the hook to this process (once; a worker calls it after its warm-up, before any program runs)."""
    if not _state["installed"]:
        sys.addaudithook(_hook)
        _state["installed"] = True


@contextmanager
def armed(source: str) -> Iterator[None]:
    """Refuse the events above while the block runs `source` (compiled under a `PROGRAM_FILES` name)."""
    _state["armed"], _state["allowed"] = True, (source, source.encode("utf-8"))
    try:
        yield
    finally:
        _state["armed"], _state["allowed"] = False, ()
