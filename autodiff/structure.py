"""What made each node: the program's own structure (loops and their iterations, the functions on the call stack,
explicit scopes), recorded for the pictures so that a big graph folds into the parts a student wrote.

A node's `group` is a path of `GroupFrame`s, outermost first. Recording costs nothing unless a device keeps
values for pictures (`Device.autodiff(keep_values=True)`); then `current_path()` runs once per node:

- the Python call stack is walked once, outward from the op. Only the user's code counts: frames in the engine,
  in the stdlib, site-packages / dist-packages or under `sys.prefix` (IPython, pytest, Streamlit), in modules
  that set `__autodiff_hidden__ = True` and in functions that assign that local (a harness) are skipped; a
  script, a notebook cell, a test file, a course's module are the user's.
- each user frame gives a "function" frame (not a module's body: its qualified name's last part, `lambda` for a
  lambda), then the `for` / `while` loops of its own code enclosing the running line (read from its source with
  `ast`, once per file, through `linecache` so that notebook cells work; no source, no loops), each a "loop" frame
  (its header as written) and an "iteration" frame: `i = 3` when the loop variable is one name holding a number,
  bool or short string, else `iteration 3`, counted from 1 each time the loop variable holds another object than
  at the last node (a `while`: each time the running position goes back).
- `scope(...)` blocks go after the function (and its loops) whose `with` entered them. Inside
  `program_files(prefix)` only code compiled under such a file name is the user's (an interpreter's program, not
  the interpreter's callers).
- a method's box names its object (`Neuron 3` for `__call__`, `making Neuron 3` for `__init__`, `Neuron 3.forward`
  otherwise: its class and its number among the class's objects); a comprehension is part of its line, not a box.

Keys are unique per instance: a function's key holds its caller's key, its Python frame and its call site, a
loop's the enclosing key and the count of the loop statement's entries, an iteration's its loop's and its count.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
import sys
import sysconfig
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Literal

GroupKind = Literal["function", "loop", "iteration", "scope"]


@dataclass(frozen=True, slots=True)
class GroupFrame:
    """One level of what made a node. Consecutive nodes whose frames at a depth have the same `key` belong to one
    group there (one call, one iteration, one `with scope(...)` block)."""

    kind: GroupKind
    name: str  # what its box says: `layer1`, `lambda`, `for i in range(30)`, `i = 3`, `layer 1`
    key: str  # identity of this instance: two calls of one function, or two iterations, differ


GroupPath = tuple[GroupFrame, ...]


# -- explicit frames: `scope` ----------------------------------------------------------------------------------------
# The scopes entered and not yet left, outermost first. Each entry is the frame with where it was entered: the id of
# the Python frame whose `with` entered it and that frame's line, so that a scope lands between the loops of its
# function that enclose the `with` and those inside it.
_Entry = tuple[GroupFrame, int, int]
_entered: ContextVar[tuple[_Entry, ...]] = ContextVar("autodiff_structure_entered", default=())
_program_files: ContextVar[str] = ContextVar("autodiff_structure_program_files", default="")
_scope_numbers = itertools.count(1)


class scope:  # noqa: N801 (used like a function: `with autodiff.scope("layer 1"):`)
    """`with autodiff.scope("layer 1"): ...`: the nodes made inside belong to a group named "layer 1" (on a device
    that keeps values; elsewhere entering and leaving cost a few hundred nanoseconds and nothing is recorded).
    Scopes nest. Each entry is its own group: two `with scope("layer 1")` blocks are two boxes.

    Where a scope sits in a node's path: the Python call stack's frames come outermost first, each function followed
    by its own loops enclosing the line it runs; a scope goes right after the function whose `with` entered it and
    that function's loops enclosing the `with`, so the loops inside the block and the functions called from it come
    after it (`with scope("a"): for i in ...:` reads a / loop / iteration; `with scope("a"): h = layer(x)` reads
    a / layer). A scope entered where the path shows nothing (a library's frame, a hidden module) is appended
    innermost.
    """

    __slots__ = ("name", "_token")

    def __init__(self, name: str) -> None:
        self.name = str(name)
        self._token: Token[tuple[_Entry, ...]] | None = None

    def __enter__(self) -> scope:
        caller = sys._getframe(1)
        group = GroupFrame("scope", self.name, f"scope {next(_scope_numbers)}")
        self._token = _entered.set((*_entered.get(), (group, id(caller), caller.f_lineno)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _entered.reset(self._token)
            self._token = None


@contextmanager
def program_files(prefix: str) -> Iterator[None]:
    """Inside, only code compiled under a file name that starts with `prefix` is the user's: an interpreter that runs
    a program of its own (the Playground's sandbox) shows that program's functions and loops, not its callers'."""
    token = _program_files.set(prefix)
    try:
        yield
    finally:
        _program_files.reset(token)


# -- the Python call stack -------------------------------------------------------------------------------------------
_ENGINE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the autodiff package: never a group


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(name, "") for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots = {os.path.abspath(r) for r in roots if r}
    return tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots if r != os.sep and os.path.dirname(r) != r))


_LIBRARY = _library_roots()
_ENGINE_FILE, _LIBRARY_FILE, _USER_FILE = 0, 1, 2
_file_kinds: dict[str, int] = {}


def _file_kind(filename: str) -> int:
    """Whether a code object's file is the engine's, a library's (the stdlib, site-packages, frozen modules) or the
    user's (anything else: a script, a test, a notebook cell, `<string>`)."""
    kind = _file_kinds.get(filename)
    if kind is None:
        if filename.startswith("<"):
            kind = _LIBRARY_FILE if filename.startswith("<frozen ") else _USER_FILE
        else:
            path = os.path.abspath(filename)
            parts = path.split(os.sep)
            if path.startswith(_ENGINE):
                kind = _ENGINE_FILE
            elif path.startswith(_LIBRARY) or "site-packages" in parts or "dist-packages" in parts:
                kind = _LIBRARY_FILE
            else:
                kind = _USER_FILE
        _file_kinds[filename] = kind
    return kind


_hidden_codes: dict[int, tuple[CodeType, bool]] = {}  # by id, beside the code (see `_loops_by_code`)


def is_harness(frame: FrameType) -> bool:
    """A frame not to show: a function that assigns `__autodiff_hidden__` or a module that sets it (a harness
    running a program, not the program)."""
    return bool(frame.f_globals.get("__autodiff_hidden__")) or _hidden(frame.f_code)


def _hidden(code: CodeType) -> bool:
    """A function that assigns a local `__autodiff_hidden__ = True` is not shown (a harness: pytest's
    `__tracebackhide__`); read from its code, whatever the value."""
    known = _hidden_codes.get(id(code))
    if known is None or known[0] is not code:
        known = _hidden_codes[id(code)] = (code, "__autodiff_hidden__" in code.co_varnames)
    return known[1]


@dataclass(frozen=True, slots=True)
class _Loop:
    """A `for` or `while` statement of a function's own body: where it is and what its box says."""

    first: int  # its header's first line
    body_first: int  # its body's first line (a `for` header's own line runs once, before the loop)
    last: int  # its body's last line (not its `else:`)
    header: str  # `for i in range(30)`, as written (whitespace collapsed)
    target: str | tuple[str, ...] | None  # `for i`: "i"; `for a, b`: ("a", "b"); a `while` or other target: None


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_loops_by_file: dict[str, dict[tuple[int, str], tuple[_Loop, ...]]] = {}
# by the code object's id (hashing a code object hashes its bytecode and constants, nested functions included: a
# module's takes microseconds), beside the code itself, which keeps that id from being reused
_loops_by_code: dict[int, tuple[CodeType, tuple[_Loop, ...]]] = {}


_PARSING = threading.Lock()


def parse_python(text: str) -> ast.Module:
    """`ast.parse`, one thread at a time. CPython 3.11 keeps the AST builder's recursion depth in state every thread
    shares, so two sessions' threads parsing at once can fail with "AST constructor recursion depth mismatch"
    (cpython gh-106905): the app's sessions are threads of one server."""
    with _PARSING:
        return ast.parse(text)


def _loops_of(code: CodeType, module_globals: dict[str, object]) -> tuple[_Loop, ...]:
    known = _loops_by_code.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    by_scope = _loops_by_file.get(code.co_filename)
    if by_scope is None:
        by_scope = _loops_by_file[code.co_filename] = _parse_loops(code.co_filename, module_globals)
    if code.co_name == "<module>":
        loops = by_scope.get((0, "<module>"), ())
    else:
        loops = by_scope.get((code.co_firstlineno, code.co_name), ())
    _loops_by_code[id(code)] = (code, loops)
    return loops


def _parse_loops(filename: str, module_globals: dict[str, object]) -> dict[tuple[int, str], tuple[_Loop, ...]]:
    """A file's loops by the function whose own body holds them: (its first line, its code's name) -> its loops,
    outermost first; the module's own under (0, "<module>"). Empty when the source is unavailable."""
    try:
        text = "".join(linecache.getlines(filename, module_globals))
        tree = parse_python(text) if text else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is None:
        return {}
    lines = text.splitlines(keepends=True)
    found: dict[tuple[int, str], list[_Loop]] = {}
    stack: list[tuple[ast.AST, tuple[int, str]]] = [(tree, (0, "<module>"))]
    while stack:
        node, owner = stack.pop()
        for child in ast.iter_child_nodes(node):
            child_owner = owner
            if isinstance(child, _FUNCTIONS):
                decorators = getattr(child, "decorator_list", [])
                first = min([child.lineno, *(d.lineno for d in decorators)])
                child_owner = (first, "<lambda>" if isinstance(child, ast.Lambda) else child.name)
            elif isinstance(child, ast.For | ast.AsyncFor | ast.While):
                found.setdefault(owner, []).append(_loop(child, lines))
            stack.append((child, child_owner))
    return {owner: tuple(sorted(loops, key=lambda loop: loop.first)) for owner, loops in found.items()}


def _loop(node: ast.For | ast.AsyncFor | ast.While, lines: list[str]) -> _Loop:
    header_end = node.test if isinstance(node, ast.While) else node.iter
    header = _segment(lines, node.lineno, node.col_offset, header_end.end_lineno, header_end.end_col_offset)
    target: str | tuple[str, ...] | None = None
    if isinstance(node, ast.For | ast.AsyncFor):
        if isinstance(node.target, ast.Name):
            target = node.target.id
        elif isinstance(node.target, ast.Tuple | ast.List) and all(isinstance(e, ast.Name) for e in node.target.elts):
            target = tuple(e.id for e in node.target.elts if isinstance(e, ast.Name))
    body_first = node.body[0].lineno
    if isinstance(node, ast.While):
        body_first = node.lineno  # its condition runs once per iteration
    last = node.body[-1].end_lineno or node.body[-1].lineno
    return _Loop(node.lineno, body_first, last, header, target)


def _segment(lines: list[str], line: int, column: int, end_line: int | None, end_column: int | None) -> str:
    """The source between two positions (columns in UTF-8 bytes, as `ast` gives them), whitespace collapsed."""
    if end_line is None or end_column is None:
        return lines[line - 1].strip().removesuffix(":")
    chunk = [text.encode("utf-8") for text in lines[line - 1 : end_line]]
    chunk[-1] = chunk[-1][:end_column]
    chunk[0] = chunk[0][column:]
    text = " ".join(b"".join(chunk).decode("utf-8", errors="replace").split())
    return text if len(text) <= 80 else text[:79] + "…"


class _LoopState:
    """The loop instance a loop statement is in (entries counted) and its iteration (counted from 1)."""

    __slots__ = ("instance", "entries", "count", "last")

    def __init__(self) -> None:
        self.instance = ""
        self.entries = 0
        self.count = 0
        self.last: object = None


_loop_states: dict[int, _LoopState] = {}  # by the id of its `_Loop`, which the caches above keep
_NO_VALUE = object()
_SHOWN = (int, float, bool)


def _advance(loop: _Loop, frame: FrameType, state: _LoopState, position: tuple[int, int]) -> object:
    """Count a new iteration when the loop variable holds another object than at the last node (a `while`, or a
    target that is not names: when the frame's `position` went back); returns the loop variable's value."""
    target = loop.target
    value: object = _NO_VALUE
    identity: object
    if isinstance(target, str):
        value = frame.f_locals.get(target, _NO_VALUE)
        identity = id(value)
        changed = identity != state.last
    elif isinstance(target, tuple):
        local = frame.f_locals
        identity = tuple(id(local.get(name, _NO_VALUE)) for name in target)
        changed = identity != state.last
    else:
        identity = position
        changed = state.last is None or position < state.last  # type: ignore[operator]
    if changed or not state.count:
        state.count += 1
    state.last = identity
    return value


def _iteration_name(loop: _Loop, value: object, count: int) -> str:
    """`i = 3` when the loop variable is one name holding a number, a bool or a short string, else `iteration 3` (and
    for `_`, the name a program gives a variable it never reads)."""
    if loop.target != "_" and (type(value) in _SHOWN or (type(value) is str and len(value) <= 20)):
        return f"{loop.target} = {value!r}"
    return f"iteration {count}"


# The frames made so far, by what identifies them (their parent frame's id and their own identity), so that
# consecutive nodes share their frames instead of building each again: cleared whole when it grows past its limit
# (keys are derived the same way again; clearing whole never leaves an entry naming a dead parent's id).
_made: dict[tuple[int, ...], GroupFrame] = {}
_MADE_LIMIT = 20_000
_MODULE = "<module>"


def _stack_path(start: FrameType | None, entered: tuple[_Entry, ...], program: str) -> list[GroupFrame]:
    """The user's frames from the outermost in, each a "function" frame (not a module's body) and the loops of its
    own code enclosing the line it runs, with the scopes it entered placed among them; `entered` entries whose
    Python frame is not on the path are left for the caller to append."""
    frames: list[FrameType] = []
    kinds = _file_kinds
    while start is not None:
        filename = start.f_code.co_filename
        kind = kinds.get(filename)
        if kind is None:
            kind = _file_kind(filename)
        shown = kind == _USER_FILE and (not program or filename.startswith(program))
        if shown and not is_harness(start):
            frames.append(start)
        start = start.f_back
    made = _made
    if len(made) > _MADE_LIMIT:
        made.clear()
    path: list[GroupFrame] = []
    parent: GroupFrame | None = None  # the innermost frame so far (a module's body too): its key prefixes the next
    for python_frame in reversed(frames):
        code = python_frame.f_code
        caller = python_frame.f_back
        call_site = caller.f_lasti if caller is not None else -1
        # a Python frame's id is reused by the next call once the frame is gone: two calls from one comprehension
        # (`[n(x) for n in neurons]`) differ by the comprehension's element, two methods by their object
        instance = _instance_of(python_frame, code)
        token: tuple[int, ...] = (id(parent), id(python_frame), id(code), call_site, instance)
        function = made.get(token)
        if function is None:
            prefix = parent.key if parent is not None else ""
            key = f"{prefix}/{code.co_name}:{id(python_frame):x}:{call_site}:{instance:x}"
            if code.co_name == _MODULE or code.co_name in _COMPREHENSIONS:
                # a module's body, or a comprehension (part of the line that holds it): a key, not a box
                function = GroupFrame("scope", _MODULE, key)
            else:
                function = GroupFrame("function", _function_name(code, python_frame), key)
            made[token] = function
        if function.kind == "function":
            path.append(function)
        parent = function
        scopes = [entry for entry in entered if entry[1] == id(python_frame)] if entered else []
        loops = _loops_of(code, python_frame.f_globals)
        if loops:
            line = python_frame.f_lineno
            enclosing = [loop for loop in loops if loop.body_first <= line <= loop.last]
            for depth, loop in enumerate(enclosing):
                if scopes:
                    path.extend(entry[0] for entry in scopes if not _encloses(loop, entry[2]))
                    scopes = [entry for entry in scopes if _encloses(loop, entry[2])]
                state = _loop_states.get(id(loop))
                if state is None:
                    state = _loop_states[id(loop)] = _LoopState()
                if state.instance != parent.key:
                    state.instance, state.entries, state.count, state.last = parent.key, state.entries + 1, 0, None
                inner = enclosing[depth + 1] if depth + 1 < len(enclosing) else None
                position = (inner.first, -1) if inner is not None else (line, python_frame.f_lasti)
                value = _advance(loop, python_frame, state, position)
                token = (id(parent), id(loop), state.entries)
                group = made.get(token)
                if group is None:
                    group = made[token] = GroupFrame("loop", loop.header, f"{parent.key}/{loop.first}#{state.entries}")
                path.append(group)
                token = (id(group), state.count)
                parent = made.get(token)
                if parent is None:
                    name = _iteration_name(loop, value, state.count)
                    parent = made[token] = GroupFrame("iteration", name, f"{group.key}/{state.count}")
                path.append(parent)
        path.extend(entry[0] for entry in scopes)
    return path


_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
# each class's instances in the order a method of theirs first ran: `Neuron 3` (by the class object, so a class
# defined again, by a new run or a cell run again, counts from 1)
_instances: weakref.WeakKeyDictionary[type, weakref.WeakKeyDictionary[object, int]] = weakref.WeakKeyDictionary()


def _function_name(code: CodeType, python_frame: FrameType) -> str:
    """What a call's box says: the function's name (`layer1`, `lambda`); a method's names its object, as a student
    names it: `Neuron 3` for `__call__` (the object used as a function), `Neuron 3.forward` for another method."""
    name = getattr(code, "co_qualname", code.co_name).rpartition(".")[2]
    if name == "<lambda>":
        return "lambda"
    if not code.co_argcount or code.co_varnames[0] != "self":
        return name
    owner = _locals(python_frame).get("self")
    cls = type(owner)
    try:
        numbers = _instances.setdefault(cls, weakref.WeakKeyDictionary())
        number = numbers.setdefault(owner, len(numbers) + 1)
    except TypeError:  # a class whose objects take no weak reference (`__slots__`): its name alone
        return f"{cls.__name__}" if name == "__call__" else f"{cls.__name__}.{name}"
    if name == "__call__":
        return f"{cls.__name__} {number}"
    if name == "__init__":
        return f"making {cls.__name__} {number}"
    return f"{cls.__name__} {number}.{name}"


def _instance_of(python_frame: FrameType, code: CodeType) -> int:
    """What tells this call from the one before at the same place: a comprehension's element (the ids of its
    variables), a method's object; 0 for anything else (its frame and call site tell it)."""
    if code.co_name in _COMPREHENSIONS:
        return hash(tuple(id(value) for name, value in _locals(python_frame).items() if name != ".0")) & _BITS
    if code.co_argcount and code.co_varnames[0] == "self":
        return id(_locals(python_frame).get("self"))
    return 0


_BITS = 0xFFFFFFFFFFFF
_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED: a function's frame, whose f_locals is a snapshot


def _locals(python_frame: FrameType) -> dict[str, object]:
    """A function frame's variables, read without keeping them: Python 3.11's `f_locals` of a running function is a
    snapshot the frame keeps until it ends, which would hold a tensor its code has since dropped (and the memory
    figures with it); the snapshot is emptied once read (the next reader, a debugger's too, takes a fresh one)."""
    local = python_frame.f_locals
    copy = dict(local)
    if python_frame.f_code.co_flags & _OPTIMIZED:  # a module's or a class body's are its real namespace
        local.clear()
    return copy


def forget_source(filename: str, keep_loops: bool = False) -> None:
    """Forget what was read of `filename`'s loops and how far each got (an interpreter that runs programs under names
    of its own, each registered in `linecache`, calls this when a program goes, so that nothing of it stays), or, with
    `keep_loops`, only how far each loop got: the same program run again counts its iterations from 1."""
    loops = _loops_by_file.get(filename, {}) if keep_loops else _loops_by_file.pop(filename, {})
    for found in loops.values():
        for loop in found:
            _loop_states.pop(id(loop), None)
    if not keep_loops:
        _file_kinds.pop(filename, None)
        for key in [key for key, (code, _) in _loops_by_code.items() if code.co_filename == filename]:
            del _loops_by_code[key]
        for key in [key for key in _hidden_codes if _hidden_codes[key][0].co_filename == filename]:
            del _hidden_codes[key]
    _made.clear()


def _encloses(loop: _Loop, line: int) -> bool:
    return loop.body_first <= line <= loop.last


def current_path() -> GroupPath:
    """What the code running now is part of: the user's functions and loops on the Python call stack (skipping the
    engine's frames, libraries' and modules that set `__autodiff_hidden__ = True`), then the scopes entered, outermost
    first. Called once per recorded node; the Python stack is walked once."""
    entered = _entered.get()
    path = _stack_path(sys._getframe(1), entered, _program_files.get())
    if entered:
        placed = {id(f) for f in path}
        path.extend(entry[0] for entry in entered if id(entry[0]) not in placed)
    return tuple(path)
