"""Run a student's Python: compiled by RestrictedPython with the Playground's policy, executed with guards
(`playground/guards.py`), limited, and recorded for the pictures.

The mechanism and the threats it holds are in docs/playground-safety.md. In short: RestrictedPython (the Zope
project's compile-time guards) turns every attribute read, write, subscript and iteration into a call of a guard and
refuses `_` names; the guards show the engine's public API alone; the builtins are a fixed set (no `open`, `eval`,
`exec`, `compile`, `globals`, `__import__`); `import` gives `math`, `random` (seeded per run) and `autodiff`'s
program names alone. In the app, a run happens in a worker process (`playground/workers.py`) that caps its own memory
and CPU and, around each run, refuses files, sockets, processes and new modules at the interpreter's audit hook
(`playground/fence.py`).

Every run is bounded, each limit stopped with a sentence: program length, time (a timer in the running thread),
recursion depth, values per tensor, bytes held, graph nodes (the device's memory pool tells the budget of each
buffer), printed lines. What made each node (its statement, the name that held it, the loops, calls and objects it
belongs to) is recorded by the engine's own recorders (`autodiff.stage.recording`, `autodiff.structure`), the same
that draw a lesson's or a notebook's program.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import itertools
import linecache
import math
import operator
import random
import signal
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any

import numpy as np
from RestrictedPython import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import RestrictingNodeTransformer

import autodiff
from autodiff import AutodiffError, Device, Distribution, Gradients, Tensor, module
from autodiff.module import ConvOptions
from autodiff.observer import Observer
from autodiff.stage.naming import expressions, with_gone_inputs
from autodiff.stage.recording import Provenance, recorded_backward, traced_call
from autodiff.structure import forget_source, parse_python, program_files

from . import fence
from .fence import PROGRAM_FILES
from .guards import (
    CLASS_METHODS,
    WHY_UNDERSCORE,
    Module,
    ProgramClasses,
    Refused,
    TensorClass,
    kind,
    readable,
    writable,
)
from .results import BackwardRun, Limits, PlaygroundError, RunResult, source_lines

__autodiff_hidden__ = True  # the sandbox's frames are not the student's program (see `autodiff.structure`)

MEMORY_POINTS = 1_000  # loop iterations whose memory the chart keeps
LIST_CHECKED = 10_000  # elements of one list argument looked at for objects the engine must not be handed
_runs = itertools.count(1)


class LimitReached(BaseException):
    """A limit of the run was reached: the run stops with this sentence (a `BaseException`: `except` cannot hide it)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


# -- compiling: RestrictedPython's policy, with what students write ---------------------------------------------------
class StudentPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer, with the Python a model is written in: a class may define the protocols a model
    uses (`__call__`, `__repr__`, arithmetic; `CLASS_METHODS`), `super().__init__(...)` works, `nonlocal` is allowed
    (a closure's counter), and a bare `except:` is refused (it would catch the run's own time limit)."""

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if allow_magic_methods and name in CLASS_METHODS and getattr(node, "col_offset", 0) != 0:
            return
        if allow_magic_methods and name is not None and name.startswith("__") and name.endswith("__"):
            self.error(node, f'A class here may not define "{name}": Python would call it behind the program\'s back.')
            return
        super().check_name(node, name, allow_magic_methods)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        value = node.value
        if (
            node.attr in CLASS_METHODS
            and isinstance(node.ctx, ast.Load)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        ):  # `super().__init__`: read through `_super_attr_`, which allows the class protocols on `super()` alone
            value = self.visit(value)
            call = ast.Call(ast.Name("_super_attr_", ast.Load()), [value, ast.Constant(node.attr)], [])
            return ast.fix_missing_locations(ast.copy_location(call, node))
        return super().visit_Attribute(node)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        """`a @ b` goes through `_matmul_`, which refuses a matmul whose broadcast inputs pass the element limit before
        anything is allocated (MLX materialises them)."""
        visited = self.node_contents_visit(node)
        if isinstance(visited, ast.BinOp) and isinstance(visited.op, ast.MatMult):
            call = ast.Call(ast.Name("_matmul_", ast.Load()), [visited.left, visited.right], [])
            return ast.fix_missing_locations(ast.copy_location(call, visited))
        return visited

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        return self.node_contents_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        if node.type is None:
            self.error(node, "A bare `except:` is not allowed here: write `except Exception:`.")
        return super().visit_ExceptHandler(node)

    def visit_While(self, node: ast.While) -> Any:
        """A `while` statement's test goes through `_while_`, which keeps the memory chart's point at each iteration's
        end, as `_loop_` does for a `for`."""
        visited = self.node_contents_visit(node)
        if isinstance(visited, ast.While):
            call = ast.Call(ast.Name("_while_", ast.Load()), [ast.Constant(node.lineno), visited.test], [])
            visited.test = ast.fix_missing_locations(ast.copy_location(call, visited.test))
        return visited

    def visit_For(self, node: ast.For) -> Any:
        """A `for` statement iterates through `_loop_` (memory after each iteration), a comprehension `_getiter_`."""
        visited = super().visit_For(node)
        if isinstance(visited, ast.For):
            loop = ast.Call(ast.Name("_loop_", ast.Load()), [visited.iter], [])
            visited.iter = ast.fix_missing_locations(ast.copy_location(loop, visited.iter))
        return visited


def compiled(source: str, filename: str, limits: Limits) -> Any:
    """The program's code object, or `PlaygroundError` with the line and what to change (Python's own message for a
    syntax error, RestrictedPython's refusal in our words)."""
    if len(source) > limits.program_chars:
        raise PlaygroundError(
            f"The program is {len(source):,} characters long; the limit is {limits.program_chars:,}.",
            hint="Shorten it, or use a loop instead of repeating lines.",
        )
    try:
        parse_python(source)  # Python's own message and position for a syntax error (one parse at a time)
        result = compile_restricted_exec(source, filename, policy=StudentPolicy)
    except SyntaxError as error:
        raise PlaygroundError(
            f"This is not valid Python: {error.msg}.", error.lineno, error.offset or 1, "Check brackets and colons."
        ) from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise PlaygroundError(
            f"The program could not be read ({type(error).__name__}).", hint="Nest less deeply."
        ) from None
    if result.errors:
        raise _compile_refusal(result.errors[0])
    return result.code


# -- the run ----------------------------------------------------------------------------------------------------------
class Budget(Observer):
    """The run's budget, told of each buffer the device's pool allocates: values per tensor, bytes held (with the
    replay's copies), graph nodes. Raises `LimitReached` from inside the op that went past."""

    def __init__(self, limits: Limits, ad: Device) -> None:
        self.limits, self.ad = limits, ad
        self.trace_bytes = 0  # the last backward's recorded copies
        self.active = True

    def allocated(self, owner: Any, nbytes: int) -> None:
        if not self.active:
            return
        limits = self.limits
        values = math.prod(getattr(owner, "shape", ()) or (1,))
        if values > limits.elements_per_tensor:
            self.active = False
            raise LimitReached(
                f"A tensor of shape {list(owner.shape)} has {values:,} values; the limit is "
                f"{limits.elements_per_tensor:,}.",
                "Use smaller shapes.",
            )
        held = self.ad.backend.pool.bytes_in_use + nbytes + self.trace_bytes
        if held > limits.bytes_held:
            self.active = False
            raise LimitReached(
                f"The program holds {held / 2**20:.1f} MiB; the limit is {limits.bytes_held / 2**20:.0f} MiB (its "
                "tensors, and the replay of its last backward).",
                "Drop tensors you no longer need (`del loss`), run a backward to free abandoned graphs, or use "
                "smaller shapes.",
            )
        if self.ad.nodes_created > limits.nodes:
            self.active = False
            raise LimitReached(
                f"The program created more than {limits.nodes:,} graph nodes.",
                "Use fewer iterations, or without_autodiff() for work that needs no gradient.",
            )


class Run:
    """One program's run: its devices, its globals (the guards, the builtins, the engine's names), its output."""

    def __init__(self, limits: Limits, backend: str, result: RunResult, filename: str) -> None:
        self.limits, self.result, self.filename = limits, result, filename
        self.inner = Device.named(backend)
        self.ad = self.inner.autodiff(keep_values=True)  # the graph shows each node's value
        self.budget = Budget(limits, self.ad)
        self.ad.backend.pool.observer = self.budget
        self.classes = ProgramClasses()
        self.provenance = Provenance({}, {})
        self.remembered: dict[int, str] = {}  # each node's expression, as of the last backward
        self.random = random.Random(0)  # seeded per run: a replay is repeatable
        self.namespace: dict[str, Any] = {}
        self.line_open = False  # the last print ended without a newline
        self.whiles: dict[int, int] = {}  # each `while` (by its line): the iterations of its running entry

    # -- the hooks RestrictedPython's code calls ------------------------------------------------------------------
    def getattr_(self, owner: object, name: object, *default: object) -> Any:
        try:
            checked = readable(owner, name, self.classes)
        except Refused:
            if default and isinstance(name, str) and not name.startswith("_"):
                return default[0]
            raise
        if owner is TensorClass:
            return self.constructor(checked, self.engine_call(getattr(Tensor, checked)))
        value = getattr(owner, checked, *default)
        if isinstance(owner, Tensor) and checked == "backward":
            return self.backward(owner)
        if isinstance(owner, Tensor) and checked == "matmul":
            return lambda other: self.matmul(owner, other)
        if isinstance(owner, Tensor) and callable(value):
            return self.engine_call(value)
        return value

    def engine_call(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function` (an engine's method or function), refusing what the engine must never be handed: an object of
        the program's own classes (it would stand in for a buffer, a device or a gradient container and be handed
        the engine's own objects), or a device other than this run's."""

        def checked(*args: Any, **kwargs: Any) -> Any:
            self.check_arguments((*args, *kwargs.values()))
            return function(*args, **kwargs)

        checked.__name__ = checked.__qualname__ = getattr(function, "__name__", "function")
        return checked

    def check_arguments(self, values: Iterable[Any], depth: int = 0) -> None:
        """The arguments, and the elements of a list or tuple among them (`Tensor.cat([a, b], 0)`): deeper data
        is converted by numpy, which hands a program's object nothing of the engine's."""
        for value in values:
            cls = type(value)
            if cls in PLAIN:
                continue
            if cls in self.classes.classes:
                raise Refused(
                    f"The engine takes numbers, lists and tensors, not {kind(value)} of your program's.",
                    "Pass the values it holds: `Tensor.from_floats([1.0, 2.0], ad)`.",
                )
            if isinstance(value, Device) and value is not self.ad and value is not self.inner:
                raise Refused("A tensor is made on this run's device: pass `ad`.")
            if isinstance(value, Gradients | Tensor) and cls not in (Gradients, Tensor):
                raise Refused(f"{kind(value).capitalize()} is not one the engine made.")
            if depth == 0 and cls in (list, tuple):
                self.check_arguments(value[:LIST_CHECKED], 1)

    def super_attr(self, owner: object, name: str) -> Any:
        if not isinstance(owner, super) or getattr(owner, "__thisclass__", None) not in self.classes.classes:
            raise Refused(f"`{name}` is read only from `super()` in a method of the program's own class.")
        return getattr(owner, name)

    def write(self, owner: object) -> object:
        return writable(owner, self.classes)

    def hasattr_(self, owner: object, name: object) -> bool:
        try:
            self.getattr_(owner, name)
        except (Refused, AttributeError):
            return False
        return True

    def setattr_(self, owner: object, name: object, value: object) -> None:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise Refused("`setattr` takes a name that is a Python identifier and does not start with `_`.")
        setattr(self.write(owner), name, value)

    def loop(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """A `for` statement's iterator: the device's memory is kept after each iteration (the memory chart)."""
        memory = self.result.memory
        for count, value in enumerate(iterable, start=1):
            yield value
            if len(memory) < MEMORY_POINTS:
                memory.append((count, self.ad.memory_usage()))

    def while_test(self, line: int, value: object) -> bool:
        """A `while` test's value: a true one after the first ends an iteration, a false one ends the last (the loop's
        count starts again at its next entry); the device's memory is kept at each end."""
        going = bool(value)
        count = self.whiles.get(line, 0)
        if count and len(self.result.memory) < MEMORY_POINTS:
            self.result.memory.append((count, self.ad.memory_usage()))
        self.whiles[line] = count + 1 if going else 0
        return going

    def make_class(self, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        """A `class` statement: its bases are the program's own classes (or none), its methods `CLASS_METHODS`."""
        for base in bases:
            if base is not object and base not in self.classes.classes and base not in EXCEPTIONS:
                raise Refused(
                    f"`class {name}` may build only on the program's own classes, not on {kind(base)}.",
                    "Hold the other object in an attribute instead: `self.w = Tensor.from_floats(...)`.",
                )
        for key in namespace:
            if key.startswith("__") and key.endswith("__") and key not in CLASS_METHODS | CLASS_BOOKKEEPING:
                raise Refused(f"A class here may not define `{key}`.")
        cls = type(name, bases, namespace)
        self.classes.classes.add(cls)
        return cls

    # -- the engine, bounded -----------------------------------------------------------------------------------------
    def constructor(self, name: str, make: Callable[..., Any]) -> Callable[..., Any]:
        """A Tensor constructor that refuses a shape past the element limit before it allocates anything."""
        limit = self.limits.elements_per_tensor

        def checked(*args: Any, **kwargs: Any) -> Any:
            shape = kwargs.get("shape", args[0] if args else None)
            if name == "from_floats":
                if _count_values(shape, limit) > limit:
                    raise LimitReached(f"from_floats got more than {limit:,} values.", "Use smaller data.")
            elif name in ("zeros", "ones", "random") and isinstance(shape, list | tuple):
                dims = [d for d in shape if isinstance(d, int)]
                if len(dims) == len(shape) and all(d > 0 for d in dims) and math.prod(dims) > limit:
                    raise LimitReached(
                        f"A tensor of shape {dims} has {math.prod(dims):,} values; the limit is {limit:,}.",
                        "Use smaller shapes.",
                    )
            return make(*args, **kwargs)

        checked.__name__ = checked.__qualname__ = name
        return checked

    def matmul(self, left: Any, right: Any) -> Any:
        """`left @ right`, refused before it allocates when its output, or an input broadcast to the batch (MLX
        materialises them), would pass the element limit."""
        if isinstance(left, Tensor) and isinstance(right, Tensor) and len(left.shape) >= 2 and len(right.shape) >= 2:
            try:
                batch = tuple(np.broadcast_shapes(left.shape[:-2], right.shape[:-2]))
            except ValueError:
                batch = None  # the engine explains the mismatch
            if batch is not None:
                limit = self.limits.elements_per_tensor
                for shape in ((*batch, left.shape[-2], right.shape[-1]), (*batch, *left.shape[-2:]),
                              (*batch, *right.shape[-2:])):  # fmt: skip
                    if math.prod(shape) > limit:
                        raise LimitReached(
                            f"A tensor of shape {list(shape)} has {math.prod(shape):,} values; the limit is {limit:,}.",
                            "Use smaller shapes.",
                        )
        return left @ right

    def backward(self, tensor: Tensor) -> Callable[[], Gradients]:
        def backward() -> Gradients:
            before = self.ad.snapshot()
            # every tracked node may get a gradient of its own size: refuse before anything is allocated
            estimate = sum(math.prod(n.shape) * 4 for n in before.nodes if n.requirement.is_tracked)
            if before.memory.bytes_in_use + estimate > self.limits.bytes_held:
                raise LimitReached(
                    f"This backward would need about {estimate / 2**20:.0f} MiB for its gradients; "
                    f"the limit is {self.limits.bytes_held / 2**20:.0f} MiB in all.",
                    "Use smaller tensors, or fewer operations before the backward.",
                )
            self.remembered.update(expressions(before.nodes, self.provenance.names))  # for nodes a sweep removes
            run = recorded_backward(tensor, before)
            self.budget.trace_bytes = run.recorder.bytes_recorded
            self.result.backward = BackwardRun(before, run.recorder, {})  # named when the run ends
            return run.grads

        backward.__name__ = backward.__qualname__ = "backward"
        return backward

    def inplace(self, op: str, left: Any, right: Any) -> Any:
        """`left op= right` on a name (RestrictedPython's `_inplacevar_`); `@=` is checked as `@` is."""
        return self.matmul(left, right) if op == "@=" else INPLACE[op](left, right)

    # -- print -------------------------------------------------------------------------------------------------------
    def printer(self, _getattr_: object = None) -> Printer:
        return Printer(self)

    def printed(self, text: str) -> None:
        """What `print` wrote, as lines: a `print(..., end="")` leaves its line open for the next, as in a terminal."""
        output, limits = self.result.output, self.limits
        width = limits.string_chars * 4
        lines = text.split("\n")
        if self.line_open and output:
            output[-1] = (output[-1] + lines.pop(0))[:width]
        for line in lines:
            if len(output) >= limits.print_lines:
                raise LimitReached(f"The program printed more than {limits.print_lines} lines.")
            output.append(line[:width])
        self.line_open = not text.endswith("\n")
        if not self.line_open:
            output.pop()  # the line a newline opened stays empty until something is printed on it

    # -- the program's names -----------------------------------------------------------------------------------------
    def globals(self) -> dict[str, Any]:
        modules = {
            "math": Module("math", {k: v for k, v in vars(math).items() if not k.startswith("_")}),
            "random": Module("random", _random_members(self.random)),
            "autodiff": Module(
                "autodiff", {"Tensor": TensorClass, "Distribution": Distribution, "scope": autodiff.scope}
            ),
        }

        def import_(name: str, globals: object = None, locals: object = None, fromlist: object = (), level: int = 0):
            found = modules.get(name) if level == 0 else None
            if found is None:
                raise Refused(*IMPORT_REFUSALS.get(name.partition(".")[0], (_import_refusal(name), "")))
            return found

        names = {**SAFE_BUILTINS, "__import__": import_, "getattr": self.getattr_, "hasattr": self.hasattr_}
        names["setattr"] = self.setattr_
        names["type"] = _type_of
        for name, (message, hint) in REFUSED_BUILTINS.items():
            names[name] = _refuser(name, message, hint)
        return {
            "__builtins__": names,
            "__name__": "__main__",
            "__metaclass__": self.make_class,
            "_getattr_": self.getattr_,
            "_super_attr_": self.super_attr,
            "_write_": self.write,
            "_getitem_": operator.getitem,
            "_getiter_": iter,
            "_loop_": self.loop,
            "_while_": self.while_test,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_inplacevar_": self.inplace,
            "_matmul_": self.matmul,
            "_apply_": _apply,
            "_print_": self.printer,
            "ad": self.ad,
            "device": self.ad,
            "inner": self.inner,
            "Tensor": TensorClass,
            "Distribution": Distribution,
            "ConvOptions": self.engine_call(ConvOptions),
            "conv1d": self.engine_call(module.conv1d),
            "conv2d": self.engine_call(module.conv2d),
            "max_pool2d": self.engine_call(module.max_pool2d),
            "avg_pool2d": self.engine_call(module.avg_pool2d),
            "scope": autodiff.scope,
        }

    def run(self, code: Any, source: str) -> None:
        namespace = self.namespace = self.globals()
        forget_source(self.filename, keep_loops=True)  # a program run again: its loops count from the start
        limit = sys.getrecursionlimit()
        if threading.current_thread() is threading.main_thread():  # a worker's run; the limit is the process's
            sys.setrecursionlimit(_stack_depth() + self.limits.call_depth + 100)  # the guards' own frames beside
        try:
            with _time_limit(self.limits.seconds):

                def program() -> None:
                    exec(code, namespace)

                with program_files(self.filename):
                    traced_call(self._watched, source, program, self.ad, self.provenance)
        finally:
            sys.setrecursionlimit(limit)
            self.budget.active = False

    def _watched(self, code: Any) -> int | None:
        return 0 if code.co_filename == self.filename else None

    def finish(self) -> None:
        """The graph as the program left it, and every node's name (a node a backward's sweep removed keeps its
        expression as it was)."""
        self.budget.active = False
        result = self.result
        result.lines = dict(self.provenance.lines)
        try:
            result.snapshot = self.ad.snapshot()  # while the program's variables still hold their tensors
        finally:
            self.namespace.clear()  # the program's objects go with the run
        names = dict(self.provenance.names)
        result.names = with_gone_inputs(result.snapshot.nodes, names, self.remembered)
        if result.backward is not None:
            run = result.backward
            run.names.update(with_gone_inputs(run.before.nodes, names, self.remembered))


class Printer:
    """What `print` is in a program (RestrictedPython's `_print_`): each line goes to the run's output, bounded."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def _call_print(self, *values: object, sep: object = " ", end: object = "\n", **_: object) -> None:
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("print's sep and end must be strings")
        self.run.printed(sep.join(str(value) for value in values) + end)

    def __call__(self) -> str:
        return "\n".join(self.run.result.output)


DEFAULT_LIMITS = Limits()


def run_program(
    source: str, limits: Limits = DEFAULT_LIMITS, backend: str = "numpy", fenced: bool = False
) -> RunResult:
    """Run a program on fresh devices; never raises for anything the program does. `fenced` (a worker process, once
    it called `fence.install()`): the audit hook refuses files, sockets, processes and new modules meanwhile."""
    result = RunResult()
    lines = source_lines(source)
    try:
        filename, code = _compiled_once(source, limits)
    except PlaygroundError as error:
        result.error = error
        return result
    run = Run(limits, backend, result, filename)
    # fenced until the run's result is plain data: its error's words and its graph are read inside too
    with fence.armed(source) if fenced else contextlib.nullcontext():
        try:
            run.run(code, source)
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as error:  # noqa: BLE001 (everything the program does ends as a sentence)
            result.error = _explained(error, filename, lines, limits)
        finally:
            try:
                run.finish()
            except BaseException:  # noqa: BLE001 (a run stopped inside an op may leave a graph that cannot be shown)
                result.snapshot, result.backward = None, None
                run.namespace.clear()
    if result.error is not None:  # kept as text only: a traceback would keep every variable alive
        result.error.__traceback__ = result.error.__context__ = result.error.__cause__ = None
    return result


# -- errors in words ------------------------------------------------------------------------------------------------
HINTS: dict[type[BaseException], str] = {
    NameError: "Assign it first, or check the spelling (names are case-sensitive).",
    AttributeError: "Check the spelling; the list of what a program may use is on this page.",
    TypeError: "Check the number and the kinds of the arguments.",
    IndexError: "Indices count from 0; the last is -1.",
    KeyError: "Check which keys the dict holds.",
    ValueError: "Check the values you pass.",
    ZeroDivisionError: "Never divide by zero: check the divisor first.",
    OverflowError: "Use smaller numbers.",
    RecursionError: "A function that calls itself needs a case that stops; usually a loop is simpler.",
    MemoryError: "Use smaller tensors, fewer of them at once, or shorter lists.",
    AssertionError: "An `assert` in your program failed: the values are not what it expects.",
    StopIteration: "`next()` reached the end of an iterator.",
}


def _explained(error: BaseException, filename: str, lines: list[str], limits: Limits) -> PlaygroundError:
    """The error in words: where in the program, Python's own message, what to do. Nothing of the program runs here:
    an error's words are read from its arguments only when they are plain text and numbers."""
    try:
        line, column = _where(error, filename, lines)
    except Exception:  # noqa: BLE001 (a position is a help, never a reason to lose the message)
        line, column = None, None
    if isinstance(error, LimitReached | Refused):
        return PlaygroundError(error.message, line, column, error.hint)
    if isinstance(error, RecursionError):
        message = f"Functions call each other more than about {limits.call_depth} deep (RecursionError)."
        return PlaygroundError(message, line, column, HINTS[RecursionError])
    if isinstance(error, MemoryError) and not isinstance(error, AutodiffError):
        message = f"Your program used more than {limits.process_bytes // 2**20} MiB of memory and was stopped."
        return PlaygroundError(message, line, column, HINTS[MemoryError])
    if not isinstance(error, Exception):
        refusal = PlaygroundError(f"The Playground hit an internal problem ({type(error).__name__}).", line, column)
        refusal.internal = True
        return refusal
    if isinstance(error, AutodiffError):
        return PlaygroundError(_words(error), line, column)
    hint = next((text for cls, text in HINTS.items() if isinstance(error, cls)), "")
    said = _words(error)
    return PlaygroundError(f"{type(error).__name__}: {said}" if said else type(error).__name__, line, column, hint)


PLAIN = (str, int, float, bool, type(None))


def _words(error: BaseException) -> str:
    """An error's message, without running any of the program's code: Python's own text when the error is Python's
    or the engine's and its arguments are plain, else its plain-text arguments alone (a program's own exception
    class, or an argument of a program's own class, keeps its `__str__` to itself)."""
    args = error.args if type(error.args) is tuple else ()
    ours = type(error).__module__ == "builtins" or isinstance(error, AutodiffError)
    if ours and all(type(arg) in PLAIN for arg in args):
        return str(error)
    return ", ".join(arg for arg in args if type(arg) is str)


def _where(error: BaseException, filename: str, lines: list[str]) -> tuple[int | None, int | None]:
    """The program's line and column (in characters, from 1) where `error` was raised: the innermost of its frames.
    Read from the traceback's code objects alone (no source file is opened)."""
    found: tuple[int | None, int | None] = (None, None)
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == filename and tb.tb_lineno:
            positions = list(code.co_positions())  # type: ignore[attr-defined]  # Python 3.11's
            index = tb.tb_lasti // 2
            offset = positions[index][2] if 0 <= index < len(positions) else None
            column = None
            if offset is not None and 0 < tb.tb_lineno <= len(lines):
                text = lines[tb.tb_lineno - 1]  # the offset counts UTF-8 bytes: the student counts characters
                column = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1
            found = (tb.tb_lineno, column)
        tb = tb.tb_next
    return found


COMPILED_KEPT = 32  # programs a worker keeps compiled: a class pressing Run on the same example compiles it once
_compiled: OrderedDict[str, tuple[str, Any]] = OrderedDict()
_compiling = threading.Lock()


def _compiled_once(source: str, limits: Limits) -> tuple[str, Any]:
    """The program's file name (`<program N>`, one per distinct text) and its code, compiled the first time only.
    Its text stays registered in `linecache` while it is kept (the engine's recorders read its loops from it); a
    program pushed out is forgotten there and by `autodiff.structure`."""
    with _compiling:
        if len(source) <= limits.program_chars and source in _compiled:
            _compiled.move_to_end(source)
            return _compiled[source]
    filename = f"{PROGRAM_FILES}{next(_runs)}>"
    code = compiled(source, filename, limits)
    with _compiling:
        _compiled[source] = (filename, code)
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        while len(_compiled) > COMPILED_KEPT:
            _, (gone, _) = _compiled.popitem(last=False)
            linecache.cache.pop(gone, None)
            forget_source(gone)
    return filename, code


def _compile_refusal(message: str) -> PlaygroundError:
    """RestrictedPython's refusal (`Line 3: "__class__" is an invalid attribute name because it starts with "_".`) as
    a sentence of ours, with its line."""
    head, _, text = message.partition(": ")
    number = head.removeprefix("Line ").strip()
    line = int(number) if number.isdigit() else None
    if 'starts with "_"' in text:
        return PlaygroundError(
            text.removesuffix(".") + f": {WHY_UNDERSCORE}.", line, hint="Use the object's public methods."
        )
    return PlaygroundError(text, line)


# -- builtins ---------------------------------------------------------------------------------------------------------
SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in (
        "abs", "all", "any", "bool", "callable", "chr", "dict", "divmod", "enumerate", "filter", "float", "format",
        "frozenset", "hash", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
        "object", "ord", "pow", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum",
        "super", "tuple", "zip", "classmethod", "staticmethod", "property", "True", "False", "None", "bin", "hex",
        "oct", "id", "NotImplemented", "Ellipsis",
        "Exception", "ArithmeticError", "AssertionError", "AttributeError", "IndexError", "KeyError",
        "LookupError", "NameError", "NotImplementedError", "OverflowError", "RecursionError", "RuntimeError",
        "StopIteration", "TypeError", "ValueError", "ZeroDivisionError",
    )
}  # fmt: skip
SAFE_BUILTINS["AutodiffError"] = AutodiffError
SAFE_BUILTINS["__build_class__"] = builtins.__build_class__  # `class` statements (a program cannot name it)
EXCEPTIONS = frozenset(v for v in SAFE_BUILTINS.values() if isinstance(v, type) and issubclass(v, Exception))
CLASS_BOOKKEEPING = frozenset({"__module__", "__qualname__", "__doc__", "__classcell__"})  # what Python puts there
REFUSED_BUILTINS = {
    "open": ("`open` reads and writes files on the server; the Playground has none.", "Put your data in the program."),
    "input": ("`input` waits for typing; a Playground run has no keyboard.", "Assign the value in the program."),
    "eval": ("`eval` runs text as code; the Playground runs only the program itself.", "Write the code directly."),
    "exec": ("`exec` runs text as code; the Playground runs only the program itself.", "Write the code directly."),
    "compile": ("`compile` makes code from text; the Playground runs only the program itself.", ""),
    "globals": ("`globals` hands out the program's namespace, the guards included.", "Use the names directly."),
    "locals": ("`locals` hands out a function's namespace.", "Use the names directly."),
    "vars": ("`vars` hands out an object's namespace, its internals included.", "Read the attributes by name."),
    "dir": ("`dir` lists internals; the list of what a program may use is on this page.", ""),
    "breakpoint": ("`breakpoint` starts a debugger; the Playground has none.", "Print the values instead."),
    "help": ("`help` is interactive; the list of what a program may use is on this page.", ""),
    "memoryview": ("`memoryview` reads an object's raw memory.", ""),
    "delattr": ("`delattr` is not available; use `del obj.name`.", ""),
    "exit": ("`exit` would stop the server's worker; a program ends at its last line.", ""),
    "quit": ("`quit` would stop the server's worker; a program ends at its last line.", ""),
}
IMPORT_REFUSALS = {
    "numpy": ("`numpy` is not available in the Playground: its arrays reach files.", "Use Tensor and its ops."),
    "torch": ("`torch` is not here: the Playground runs this engine.", "Use `Tensor.from_floats(..., ad)`."),
    "os": ("`os` reaches the server's files and processes; the Playground has none.", ""),
    "sys": ("`sys` reaches the interpreter running the Playground.", ""),
    "subprocess": ("`subprocess` starts programs on the server; the Playground runs only yours.", ""),
    "socket": ("`socket` opens network connections; a Playground run has none.", ""),
    "micrograd": ("`micrograd` is not here: write `Tensor.from_floats([...], ad)` where it says `Value(...)`.", ""),
}


def _import_refusal(name: str) -> str:
    return f"`import {name}` is refused: a program here may import `math`, `random` and `autodiff`."


def _type_of(*args: object) -> type:
    """`type(x)`: the class of a value (the program's `Tensor` for a tensor). Refused: `type(name, bases, namespace)`
    and the type of a class (`type` itself: it makes classes past the checks of a `class` statement), and the class
    of one of the engine's other objects (calling it would build one from anything)."""
    if len(args) != 1:
        raise Refused("`type` with three arguments makes a class past the Playground's checks.", "Write a `class`.")
    found = type(args[0])
    if found is Tensor:
        return TensorClass
    if issubclass(found, type) or found.__module__.split(".")[0] in ("autodiff", "numpy", "mlx", "playground"):
        raise Refused(f"The class of {kind(args[0])} is not available here.", "Use `isinstance(x, Tensor)`.")
    return found


def _refuser(name: str, message: str, hint: str) -> Callable[..., Any]:
    def refused(*args: object, **kwargs: object) -> Any:
        raise Refused(message, hint)

    refused.__name__ = refused.__qualname__ = name
    return refused


def _random_members(generator: random.Random) -> dict[str, Any]:
    """`random`'s functions, bound to this run's own seeded generator (`random.seed(n)` reseeds it)."""
    names = (
        "random", "uniform", "gauss", "normalvariate", "randint", "randrange", "choice", "choices", "shuffle",
        "sample", "seed", "betavariate", "expovariate", "triangular",
    )  # fmt: skip
    return {name: getattr(generator, name) for name in names}


INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv, "//=": operator.ifloordiv,
    "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul, "<<=": operator.ilshift, ">>=": operator.irshift,
    "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor,
}  # fmt: skip


def _apply(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


def _count_values(data: Any, limit: int) -> int:
    """How many numbers nested lists hold, counting no further than just past `limit` (a `range` is as many
    numbers as it is long: numpy converts it)."""
    count, stack = 0, [data]
    while stack and count <= limit:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        else:
            count += len(item) if isinstance(item, range) else 1
    return count


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


class _time_limit:  # noqa: N801 (a context manager used like a function)
    """Stop the run after `seconds` with `LimitReached`, raised in the running thread by a timer signal (where the
    run is the process's main thread: a worker; elsewhere, a test, the worker pool's wall clock is the limit). After
    the first, the signal comes again every 0.1 s, so a `finally:` that loops is stopped too."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")

    def __enter__(self) -> None:
        if self.armed:
            self.previous = signal.signal(signal.SIGALRM, self._expired)
            signal.setitimer(signal.ITIMER_REAL, self.seconds, 0.1)

    def _expired(self, signum: int, frame: object) -> None:
        raise LimitReached(
            f"Your program ran longer than {self.seconds:g} seconds and was stopped.",
            "Use smaller tensors, fewer iterations, or a loop that stops.",
        )

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
