"""Parse a student's program with `ast` and interpret a whitelist of node types.

Nothing the student writes is ever given to `eval`, `exec` or `compile`. Names resolve only to the
values the program assigned and to a fixed set of globals; attribute access is allowed only for the
engine's API, checked against the *type* of the object at run time (no dunders, no imports, no
builtins beyond `range`, `print`, `len`, `float`, `int`, `abs`, `min`, `max`). Every run is bounded:
program length, nesting, statements, loop iterations, elements per tensor, bytes held, nodes, and
wall time, each stopped with a plain message that points at the line.

Programs may define simple functions (`def name(a, b): ... return expr`, at the top level, positional parameters
only), interpreted like the rest: each call has its own local variables, and reads fall back to the program's.
Each node records what made it (`autodiff.structure`): the interpreter pushes a frame for each loop, iteration and
call of the student's program, and none of its own Python frames (`own_frames`; this module is also hidden).
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autodiff import AutodiffError, BackwardRecorder, Device, Distribution, Gradients, GraphSnapshot, Tensor, module
from autodiff.memory import MemoryUsage
from autodiff.module import ConvOptions
from autodiff.stage.naming import expressions, node_names, with_gone_inputs
from autodiff.structure import GroupFrame, frame, own_frames, parse_python

__autodiff_hidden__ = True  # the interpreter's frames are not the student's program (see `autodiff.structure`)


@dataclass(frozen=True)
class Limits:
    """What one run may use. Values a classroom laptop serves comfortably for many students at once."""

    program_chars: int = 4_000
    nesting: int = 40
    statements: int = 20_000
    loop_iterations: int = 1_000
    elements_per_tensor: int = 1_048_576  # 1024 × 1024
    bytes_held: int = 64 * 2**20
    nodes: int = 5_000
    seconds: float = 5.0
    string_chars: int = 500
    print_lines: int = 500
    list_values: int = 1_048_576  # numbers held in Python lists (literals and tolist()), all together
    process_bytes: int = 512 * 2**20  # the whole run's memory: enforced by its worker process (RLIMIT_AS)


SECONDS_ENV = "PLAYGROUND_SECONDS"  # a server's own time limit for one run, from 1 to 60 s (its operator's choice)


def served_limits(env: dict[str, str] | None = None) -> tuple[Limits, str | None]:
    """This server's limits: the defaults, with the time a run may take set by $PLAYGROUND_SECONDS where its
    operator chose one (a busy shared machine may want more). Anything but a number of seconds from 1 to 60 keeps the
    default, and the sentence that says so comes second."""
    raw = (os.environ if env is None else env).get(SECONDS_ENV, "").strip()
    if not raw:
        return Limits(), None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 1 <= seconds <= 60:
        limits = Limits()
        refused = f"This server's {SECONDS_ENV} is {raw[:20]!r}, not 1 to 60 seconds"
        return limits, f"{refused}: a run may take {limits.seconds:g} s, the default."
    return Limits(seconds=seconds), None


ERROR_CHARS = 2_000  # an error's message (and its hint) is cut to this: it may quote what the program made


def cut(text: str, limit: int = ERROR_CHARS) -> str:
    """`text` cut to `limit` characters, saying so."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def source_lines(source: str) -> list[str]:
    """The program's lines as Python numbers them (U+2028 and form feeds are not line breaks to Python)."""
    return re.split(r"\r\n|\r|\n", source)


class PlaygroundError(Exception):
    """A refusal or an error in the student's program, with where it happened and what to do."""

    internal = False  # True only for a bug in the interpreter itself (the fuzz tests look for it)

    def __init__(self, message: str, line: int | None = None, column: int | None = None, hint: str = "") -> None:
        message, hint = cut(message), cut(hint)  # bounded where it is made
        self.message, self.line, self.column, self.hint = message, line, column, hint
        where = f"Line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message + (f" Hint: {hint}" if hint else ""))


@dataclass
class BackwardRun:
    """One backward the program ran, recorded for the replay."""

    before: GraphSnapshot
    recorder: BackwardRecorder
    names: dict[int, str]


@dataclass
class RunResult:
    output: list[str] = field(default_factory=list)
    error: PlaygroundError | None = None
    snapshot: GraphSnapshot | None = None
    names: dict[int, str] = field(default_factory=dict)
    backward: BackwardRun | None = None  # the last backward
    memory: list[tuple[int, MemoryUsage]] = field(default_factory=list)  # after each loop iteration
    lines: dict[int, tuple[int, int]] = field(default_factory=dict)  # NodeId -> the statement that made it (its lines)
    statements: int = 0
    reply_bytes: int = 0  # the size of the worker's reply: what holding this result costs a session


TENSOR_METHODS = {
    "require_grad",
    "backward",
    "grad",
    "grad_remove",
    "grad_replace",
    "detach",
    "without_autodiff",
    "sum",
    "mean",
    "sum_dim",
    "mean_dim",
    "matmul",
    "reshape",
    "transpose",
    "swap_dims",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "tolist",
    "dims",
    "item",
    # Burn's ops whose output is never larger than their input (expand, repeat_dim and cat are not here: the
    # element limit is checked on an op's result, after it is made)
    "abs",
    "sign",
    "recip",
    "tan",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "erf",
    "log1p",
    "powf",
    "powf_scalar",
    "clamp",
    "clamp_min",
    "clamp_max",
    "max_dim",
    "min_dim",
    "max",
    "min",
    "prod",
    "prod_dim",
    "cumsum",
    "permute",
    "flip",
    "unsqueeze",
    "unsqueeze_dim",
    "squeeze",
    "slice",
}
TENSOR_PROPERTIES = {"is_tracked", "is_require_grad", "node_id", "shape", "dtype"}
TENSOR_CONSTRUCTORS = {"from_floats", "zeros", "ones", "random", "from_inner"}
DISTRIBUTIONS = {"uniform", "normal"}
BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
NUMBER_LIMIT = 1e15


class _TensorClass:
    """What the name `Tensor` means in a program: its constructors, on this run's devices."""


class _DistributionClass:
    """What the name `Distribution` means in a program."""


@dataclass(frozen=True)
class _Function:
    """A function the program defined with `def`: its name, parameters and body, interpreted at each call."""

    name: str
    parameters: tuple[str, ...]
    body: list[ast.stmt]


class _Return(Exception):
    """A `return` leaving a function's body, with its value."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def run_program(source: str, limits: Limits = Limits(), backend: str = "numpy") -> RunResult:
    """Run a program on fresh devices; never raises for anything the program does."""
    result = RunResult()
    try:
        tree = _parse(source, limits)
        _Interpreter(limits, backend, result, source_lines(source)).run(tree)
    except PlaygroundError as error:
        # kept as text only: a traceback would keep the interpreter and every variable alive
        error.__traceback__ = error.__context__ = error.__cause__ = None
        result.error = error
    return result


def _parse(source: str, limits: Limits) -> ast.Module:
    if len(source) > limits.program_chars:
        raise PlaygroundError(
            f"The program is {len(source):,} characters long; the limit is {limits.program_chars:,}.",
            hint="Shorten it, or use a loop instead of repeating lines.",
        )
    try:
        tree = parse_python(source)
    except SyntaxError as error:
        raise PlaygroundError(
            f"This is not valid Python: {error.msg}.", error.lineno, (error.offset or 1), "Check brackets and colons."
        ) from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise PlaygroundError(
            f"The program could not be read ({type(error).__name__}).", hint="Nest less deeply."
        ) from None
    return tree


class _Interpreter:
    def __init__(self, limits: Limits, backend: str, result: RunResult, lines: list[str]) -> None:
        self.limits, self.result, self.lines = limits, result, lines
        self.inner = Device.named(backend)
        self.ad = self.inner.autodiff(keep_values=True)  # the graph shows each node's value
        self.deadline = time.monotonic() + limits.seconds
        self.variables: dict[str, Any] = {}
        self.named: dict[int, str] = {}  # every tensor ever bound to a variable: the last name it had
        self.remembered: dict[int, str] = {}  # each node's expression, as of the last backward
        self.globals: dict[str, Any] = {
            "ad": self.ad,
            "device": self.ad,
            "inner": self.inner,
            "Tensor": _TensorClass(),
            "Distribution": _DistributionClass(),
            "None": None,
            "True": True,
            "False": False,
        }
        self.functions: dict[str, Callable[..., Any]] = {
            "print": self._print,
            "range": self._range,
            "len": len,
            "float": float,
            "int": int,
            "abs": abs,
            "min": min,
            "max": max,
            **self._module_functions(),
        }
        self.node: ast.AST | None = None  # where we are, for error positions
        self.depth = 0  # how deeply the evaluation nests (expressions, loops and calls)
        self.locals: dict[str, Any] | None = None  # the running function's variables; None at the top level
        self.loops = 0  # loops running now (in the running function, or at the top level)
        self.calls = 0  # calls of the program's functions running now
        self.numbers = itertools.count(1)  # each loop entry, iteration and call's number, for its frame's key
        self.list_values = 0  # numbers the program holds in Python lists (counted as they are made)

    # -- statements ------------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        try:
            with own_frames():  # the program's loops and calls are pushed as they run; the Python stack is ours
                self._block(tree.body)
        except PlaygroundError:
            raise
        except AutodiffError as error:
            raise self._error(str(error)) from None
        except RecursionError:
            raise self._error("The program nests too deeply to run.") from None
        except (OverflowError, ZeroDivisionError, FloatingPointError) as error:
            raise self._error(f"Arithmetic error: {error}.", "Use smaller numbers, and never divide by zero.") from None
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as error:
            raise self._error(f"That call does not work here: {_public(error)}.", "Check the arguments.") from None
        except MemoryError:
            message = f"Your program used more than {self.limits.process_bytes // 2**20} MiB of memory and was stopped."
            raise self._error(message, "Use smaller tensors, fewer of them at once, or shorter lists.") from None
        except Exception as error:  # a bug of ours, not the student's: still no traceback on the page
            refusal = self._error(f"The Playground hit an internal problem ({type(error).__name__}).")
            refusal.internal = True
            raise refusal from None
        finally:
            self.result.snapshot = self.ad.snapshot()
            self.result.names = with_gone_inputs(self.result.snapshot.nodes, self._names(), self.remembered)

    def _block(self, statements: list[ast.stmt]) -> None:
        if self.depth > self.limits.nesting:
            raise self._error(f"Loops nest more than {self.limits.nesting} levels deep.")
        for statement in statements:
            self.node = statement
            self.result.statements += 1
            if self.result.statements > self.limits.statements:
                raise self._error(
                    f"The program ran more than {self.limits.statements:,} statements.", "Use fewer loop iterations."
                )
            if time.monotonic() > self.deadline:
                raise self._error(
                    f"The program ran longer than {self.limits.seconds:g} seconds.",
                    "Use smaller tensors or fewer iterations.",
                )
            made = self.ad.nodes_created
            self._statement(statement)
            for node_id in range(made, self.ad.nodes_created):  # the innermost statement's (it ran first)
                self.result.lines.setdefault(node_id, (statement.lineno, statement.end_lineno or statement.lineno))
            self._check_budget()

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self._error("Assign to one plain name, like `x = ...`.")
            self._assign(node.targets[0], self._eval(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and type(node.op) in BINARY:
            current = self._name(node.target)
            self._assign(node.target, self._binary(node.op, current, self._eval(node.value)))
        elif isinstance(node, ast.Expr):
            self._eval(node.value)
        elif isinstance(node, ast.For):
            self._for(node)
        elif isinstance(node, ast.FunctionDef):
            self._define(node)
        elif isinstance(node, ast.Return):
            if self.locals is None:
                raise self._error("`return` works only inside a function (`def`).")
            raise _Return(None if node.value is None else self._eval(node.value))
        elif isinstance(node, ast.Delete):
            scope = self.variables if self.locals is None else self.locals
            for target in node.targets:
                if not isinstance(target, ast.Name) or target.id not in scope:
                    raise self._error("`del` takes names your program assigned, like `del loss`.")
                del scope[target.id]
        elif isinstance(node, ast.Pass):
            pass
        else:
            raise self._unsupported(node)

    def _assign(self, target: ast.Name, value: Any) -> None:
        self._check_name(target.id)
        (self.variables if self.locals is None else self.locals)[target.id] = value
        if isinstance(value, Tensor) and value.node_id is not None:  # a reassigned `w` still reads `w` on the graph
            self.named[int(value.node_id)] = target.id

    def _check_name(self, name: str) -> None:
        if name in self.globals or name in self.functions or name.startswith("_"):
            raise self._error(f"`{name}` is a reserved name here; pick another.")

    def _for(self, node: ast.For) -> None:
        if node.orelse or not isinstance(node.target, ast.Name):
            raise self._error("Write loops as `for i in range(n):` with one loop variable and no `else`.")
        iterable = self._eval(node.iter)
        if not isinstance(iterable, range):
            raise self._error("A loop must run over `range(n)`.")
        # what made each node: this loop entry, and each iteration in it (keys unique per entry and iteration)
        loop = GroupFrame("loop", self._header(node), f"loop {next(self.numbers)}")
        self.depth += 1
        self.loops += 1
        try:
            with frame(loop):
                for count, value in enumerate(iterable, start=1):
                    self._assign(node.target, value)
                    with frame(GroupFrame("iteration", f"{node.target.id} = {value}", f"{loop.key}/{count}")):
                        self._block(node.body)
                    self.result.memory.append((count, self.ad.memory_usage()))
        finally:
            self.depth -= 1
            self.loops -= 1

    def _header(self, node: ast.For) -> str:
        """The loop's header as the student wrote it (`for i in range(30)`), whitespace collapsed."""
        end_line, end_column = node.iter.end_lineno, node.iter.end_col_offset
        if end_line is None or end_column is None or not 0 < node.lineno <= end_line <= len(self.lines):
            return f"for {node.target.id if isinstance(node.target, ast.Name) else '…'} in …"
        chunk = [text.encode("utf-8") for text in self.lines[node.lineno - 1 : end_line]]
        chunk[-1] = chunk[-1][:end_column]
        chunk[0] = chunk[0][node.col_offset :]
        return cut(" ".join(b"".join(chunk).decode("utf-8", errors="replace").split()), 80)

    # -- functions -------------------------------------------------------------------------------
    def _define(self, node: ast.FunctionDef) -> None:
        """`def name(a, b): ...`: positional parameters only, at the top level of the program."""
        arguments = node.args
        if self.locals is not None or self.loops:
            raise self._error("Define functions at the top level of the program, not inside a loop or a function.")
        if node.decorator_list:
            raise self._error("Decorators (`@...`) are not supported; write a plain `def name(x):`.")
        if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
            raise self._error("Only plain parameters are supported: write `def name(a, b):` and pass values in order.")
        if arguments.defaults:
            raise self._error("Default values for parameters are not supported; pass every value when you call.")
        if getattr(node, "type_params", None):
            raise self._error("Type parameters are not supported; write a plain `def name(x):`.")
        self._check_name(node.name)
        parameters = tuple(a.arg for a in arguments.args)
        for parameter in parameters:
            self._check_name(parameter)
        if len(set(parameters)) != len(parameters):
            raise self._error("Each parameter needs its own name.")
        self.variables[node.name] = _Function(node.name, parameters, node.body)

    def _call_function(self, function: _Function, args: list[Any]) -> Any:
        """Run a function's body with its own local variables; its nodes carry its "function" frame."""
        if len(args) != len(function.parameters):
            wanted = len(function.parameters)
            raise self._error(
                f"`{function.name}` takes {wanted} argument{'s' if wanted != 1 else ''} "
                f"({', '.join(function.parameters)}); this call passes {len(args)}."
            )
        if self.depth > self.limits.nesting:
            raise self._calls_too_deep()
        saved, self.locals = self.locals, dict(zip(function.parameters, args, strict=True))
        loops, self.loops = self.loops, 0
        self.depth += 1
        self.calls += 1
        try:
            with frame(GroupFrame("function", function.name, f"call {next(self.numbers)}")):
                self._block(function.body)
            return None
        except _Return as returned:
            return returned.value
        finally:
            self.depth -= 1
            self.calls -= 1
            self.locals, self.loops = saved, loops

    def _calls_too_deep(self) -> PlaygroundError:
        return self._error(
            f"Function calls nest more than {self.limits.nesting} levels deep (with the expressions inside them).",
            "A function that calls itself needs a way to stop; usually a loop is simpler.",
        )

    # -- expressions -----------------------------------------------------------------------------
    def _eval(self, node: ast.expr) -> Any:
        self.node = node
        self.depth += 1
        try:
            if self.depth > self.limits.nesting:
                if self.calls:
                    raise self._calls_too_deep()
                raise self._error(
                    f"The program nests more than {self.limits.nesting} levels deep.",
                    "Split long expressions into several assignments.",
                )
            return self._expression(node)
        finally:
            self.depth -= 1

    def _expression(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            return self._binary(node.op, self._eval(node.left), self._eval(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = self._eval(node.operand)
            self._check_operand(value)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.List | ast.Tuple):
            self._count_list_values(len(node.elts))
            return [self._eval(element) for element in node.elts]
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        raise self._unsupported(node)

    def _constant(self, node: ast.Constant) -> Any:
        value = node.value
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            if not math.isfinite(value) or abs(value) > NUMBER_LIMIT:
                raise self._error(f"The number {value} is too large.", f"Use numbers below {NUMBER_LIMIT:g}.")
            return value
        if isinstance(value, str):
            if len(value) > self.limits.string_chars:
                raise self._error(f"Strings are limited to {self.limits.string_chars} characters.")
            return value
        raise self._error(f"Values like {type(value).__name__} are not supported here.")

    def _name(self, node: ast.Name) -> Any:
        if self.locals is not None and node.id in self.locals:
            return self.locals[node.id]
        if node.id in self.variables:
            return self.variables[node.id]
        if node.id in self.globals:
            return self.globals[node.id]
        if node.id in self.functions:
            raise self._error(f"`{node.id}` is a function: call it, like `{node.id}(...)`.")
        raise self._error(f"`{node.id}` is not defined.", "Assign it first, or check the spelling.")

    def _check_operand(self, value: Any) -> None:
        if not isinstance(value, Tensor | int | float) or isinstance(value, bool):
            raise self._error(f"Arithmetic works on tensors and numbers, not on {_kind(value)}.")

    def _binary(self, op: ast.operator, left: Any, right: Any) -> Any:
        self._check_operand(left)
        self._check_operand(right)
        if isinstance(left, Tensor) or isinstance(right, Tensor):
            self._check_result_size(op, left, right)
            return BINARY[type(op)](left, right)
        if isinstance(op, ast.MatMult):
            raise self._error("`@` multiplies tensors, not numbers.")
        if isinstance(op, ast.Pow) and abs(right) > 64 and abs(left) > 1:
            raise self._error("That power is too large.", "Keep exponents at most 64.")
        value = BINARY[type(op)](left, right)
        if isinstance(value, complex) or not math.isfinite(value) or abs(value) > NUMBER_LIMIT:
            raise self._error("That number is too large or not a real number.", f"Keep numbers below {NUMBER_LIMIT:g}.")
        return value

    def _check_result_size(self, op: ast.operator, left: Any, right: Any) -> None:
        """Refuse an op whose output would be too large, before it allocates anything."""
        if not (isinstance(left, Tensor) and isinstance(right, Tensor)):
            return
        try:
            if isinstance(op, ast.MatMult):
                batch = np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
                # MLX materialises both inputs broadcast to the batch: they count like the output
                shapes = [
                    (*batch, left.shape[-2], right.shape[-1]),
                    (*batch, *left.shape[-2:]),
                    (*batch, *right.shape[-2:]),
                ]
            else:
                shapes = [np.broadcast_shapes(left.shape, right.shape)]
        except (ValueError, IndexError):
            return  # the engine explains the mismatch
        for shape in shapes:
            self._check_elements(shape)

    def _check_elements(self, shape: Any) -> None:
        try:
            count = math.prod(int(d) for d in shape)
        except (TypeError, ValueError):
            return  # the engine explains a malformed shape
        if count > self.limits.elements_per_tensor:
            raise self._error(
                f"A tensor of shape {list(shape)} has {count:,} values; the limit is "
                f"{self.limits.elements_per_tensor:,}.",
                "Use smaller shapes.",
            )

    def _call(self, node: ast.Call) -> Any:
        if node.keywords:
            raise self._error("Keyword arguments are not supported here; pass values in order.")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self._error("`*` arguments are not supported here.")
        if isinstance(node.func, ast.Name) and node.func.id in self.functions:
            function = self.functions[node.func.id]
        elif isinstance(node.func, ast.Name) and isinstance(defined := self._defined(node.func.id), _Function):
            args = [self._eval(a) for a in node.args]
            self.node = node
            return self._call_function(defined, args)
        elif isinstance(node.func, ast.Attribute):
            function = self._method(node.func)
        else:
            raise self._error(
                "Only the engine's functions and methods, `print`, `range`, a few builtins and the functions your "
                "program defines with `def` can be called."
            )
        args = [self._eval(a) for a in node.args]
        self.node = node
        result = function(*args)
        if isinstance(result, Tensor):
            self._check_elements(result.shape)
        return result

    def _defined(self, name: str) -> Any:
        """What a name means in the program (local, then the program's own), or None."""
        if self.locals is not None and name in self.locals:
            return self.locals[name]
        return self.variables.get(name)

    def _method(self, node: ast.Attribute) -> Callable[..., Any]:
        owner = self._eval(node.value)
        name = node.attr
        self.node = node
        if isinstance(owner, _TensorClass) and name in TENSOR_CONSTRUCTORS:
            return self._constructor(name)
        if isinstance(owner, _DistributionClass) and name in DISTRIBUTIONS:
            return self._distribution(name)
        if isinstance(owner, Tensor) and name in TENSOR_METHODS:
            if name == "backward":
                return self._backward(owner)
            if name == "matmul":
                return self._matmul(owner)
            if name == "tolist":
                self._count_list_values(math.prod(owner.shape))
            return getattr(owner, name)
        raise self._error(f"`{_kind(owner)}` has no method `{name}` here.", "See the examples for what you can call.")

    def _attribute(self, node: ast.Attribute) -> Any:
        owner = self._eval(node.value)
        self.node = node
        if isinstance(owner, _DistributionClass) and node.attr == "Default":
            return Distribution.Default
        if isinstance(owner, Tensor) and node.attr in TENSOR_PROPERTIES:
            value = getattr(owner, node.attr)
            return None if value is None else (int(value) if node.attr == "node_id" else value)
        raise self._error(f"`{_kind(owner)}` has no attribute `{node.attr}` here.")

    def _constructor(self, name: str) -> Callable[..., Tensor]:
        def make(*args: Any) -> Tensor:
            if name == "from_floats":
                data, device = args
                count = _count_values(data, self.limits.elements_per_tensor)  # before numpy converts anything
                if count > self.limits.elements_per_tensor:
                    raise self._error(
                        f"from_floats got more than {self.limits.elements_per_tensor:,} values.", "Use smaller data."
                    )
                return Tensor.from_floats(data, device)
            if name == "from_inner":
                return Tensor.from_inner(*args)
            if name == "random":
                shape, distribution, device = args
                self._check_elements(shape)
                return Tensor.random(shape, distribution, device)
            shape, device = args
            self._check_elements(shape)
            return getattr(Tensor, name)(shape, device)

        return _named(make, name)

    def _matmul(self, left: Tensor) -> Callable[[Tensor], Tensor]:
        def matmul(right: Tensor) -> Tensor:
            self._check_result_size(ast.MatMult(), left, right)  # the same check as `@`, before it allocates
            return left.matmul(right)

        return _named(matmul, "matmul")

    def _module_functions(self) -> dict[str, Callable[..., Any]]:
        """Burn's conv and pooling (`autodiff.module`), each refused before it allocates a result, or the windows it
        reads (the input once per kernel position), past the element limit."""

        def conv_options(stride: Any, padding: Any, dilation: Any, groups: Any) -> ConvOptions:
            return ConvOptions(stride, padding, dilation, groups)

        def conv(function: Callable[..., Tensor]) -> Callable[..., Tensor]:
            def call(x: Any, weight: Any, bias: Any, options: Any) -> Tensor:
                if isinstance(x, Tensor) and isinstance(weight, Tensor) and isinstance(options, ConvOptions):
                    out = module.calculate_conv_output_shape(x.shape, weight.shape, options)
                    kernel = math.prod(weight.shape[1:])  # per output channel: its input channels × kernel positions
                    self._check_elements((out[0], options.groups * kernel, *out[2:]))  # the windows
                    self._check_elements((out[0], out[1], kernel))  # the weight, once per example (MLX's matmul)
                return function(x, weight, bias, options)

            return call

        def check_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any) -> None:
            if isinstance(x, Tensor):
                out = module.calculate_pool_output_shape(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
                self._check_elements((*out[:2], math.prod(kernel_size), *out[2:]))  # the windows

        def max_pool2d(
            x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any = False
        ) -> Tensor:
            check_pool(x, kernel_size, stride, padding, dilation, ceil_mode)
            return module.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)

        def avg_pool2d(
            x: Any, kernel_size: Any, stride: Any, padding: Any, count_include_pad: Any = True, ceil_mode: Any = False
        ) -> Tensor:
            check_pool(x, kernel_size, stride, padding, [1, 1], ceil_mode)
            return module.avg_pool2d(x, kernel_size, stride, padding, count_include_pad, ceil_mode)

        return {
            "ConvOptions": _named(conv_options, "ConvOptions"),
            "conv1d": _named(conv(module.conv1d), "conv1d"),
            "conv2d": _named(conv(module.conv2d), "conv2d"),
            "max_pool2d": max_pool2d,
            "avg_pool2d": avg_pool2d,
        }

    def _distribution(self, name: str) -> Callable[[float, float], Distribution]:
        def make(a: float, b: float) -> Distribution:
            for value in (a, b):
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise self._error(f"Distribution.{name} takes two numbers, like Distribution.{name}(0.0, 1.0).")
                if not math.isfinite(value) or abs(value) > NUMBER_LIMIT:
                    raise self._error(
                        f"Distribution.{name} needs finite numbers below {NUMBER_LIMIT:g}.",
                        "Use numbers like 0.0 and 1.0.",
                    )
            return getattr(Distribution, name)(a, b)

        return _named(make, name)

    def _backward(self, tensor: Tensor) -> Callable[[], Gradients]:
        def backward() -> Gradients:
            before = self.ad.snapshot()
            # every tracked node may get a gradient of its own size: refuse before anything is allocated
            estimate = sum(math.prod(n.shape) * 4 for n in before.nodes if n.requirement.is_tracked)
            if before.memory.bytes_in_use + estimate > self.limits.bytes_held:
                raise self._error(
                    f"This backward would need about {estimate / 2**20:.0f} MiB for its gradients; "
                    f"the limit is {self.limits.bytes_held / 2**20:.0f} MiB in all.",
                    "Use smaller tensors, or fewer operations before the backward.",
                )
            names = self._names()
            self.remembered.update(expressions(before.nodes, names))  # for nodes a later sweep removes
            recorder = BackwardRecorder()
            grads = tensor.backward(recorder=recorder)
            self.result.backward = BackwardRun(before, recorder, names)
            return grads

        return _named(backward, "backward")

    # -- builtins --------------------------------------------------------------------------------
    def _print(self, *values: Any) -> None:
        if len(self.result.output) >= self.limits.print_lines:
            raise self._error(f"The program printed more than {self.limits.print_lines} lines.")
        line = " ".join(_show(v) for v in values)
        self.result.output.append(line[: self.limits.string_chars * 4])

    def _range(self, *args: Any) -> range:
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in args) or not 1 <= len(args) <= 3:
            raise self._error("`range` takes one to three whole numbers, like `range(10)`.")
        values = range(*args)
        if len(values) > self.limits.loop_iterations:
            raise self._error(
                f"A loop may run at most {self.limits.loop_iterations:,} times; this one would run {len(values):,}.",
                "Use a smaller range.",
            )
        return values

    # -- limits and errors -----------------------------------------------------------------------
    def _count_list_values(self, count: int) -> None:
        self.list_values += count
        if self.list_values > self.limits.list_values:
            raise self._error(
                f"The program's lists hold more than {self.limits.list_values:,} numbers.",
                "Keep data in tensors; call tolist() only on small ones.",
            )

    def _check_budget(self) -> None:
        trace = self.result.backward.recorder.bytes_recorded if self.result.backward else 0  # the replay's copies
        held = self.ad.memory_usage().bytes_in_use + trace
        if held > self.limits.bytes_held:
            raise self._error(
                f"The program holds {held / 2**20:.1f} MiB; the limit is "
                f"{self.limits.bytes_held / 2**20:.0f} MiB (its tensors, and the replay of its last "
                "backward).",
                "Drop tensors you no longer need (`del loss`), run a backward to free abandoned "
                "graphs, or use smaller shapes.",
            )
        if self.ad.nodes_created > self.limits.nodes:
            raise self._error(
                f"The program created more than {self.limits.nodes:,} graph nodes.",
                "Use fewer iterations, or without_autodiff() for work that needs no gradient.",
            )

    def _names(self) -> dict[int, str]:
        return {**self.named, **node_names(self.variables)}

    def _error(self, message: str, hint: str = "") -> PlaygroundError:
        node = self.node
        line = getattr(node, "lineno", None)
        offset = getattr(node, "col_offset", None)  # in UTF-8 bytes: the student counts characters
        column = None
        if line is not None and offset is not None:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            column = len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1
        return PlaygroundError(message, line, column, hint)

    def _unsupported(self, node: ast.AST) -> PlaygroundError:
        self.node = node
        for kinds, message, hint in UNSUPPORTED:
            if isinstance(node, kinds):
                return self._error(message, hint)
        return self._error(
            "This kind of Python is not supported in the Playground.",
            "Use assignments, arithmetic, calls of the engine's methods, `for i in range(n):`, "
            "`def` functions, `del` and `print`.",
        )


# What the Playground says of the Python it does not run, in words (never a parser class's name), with what to write
UNSUPPORTED: list[tuple[type[ast.AST] | tuple[type[ast.AST], ...], str, str]] = [
    (
        (ast.Import, ast.ImportFrom),
        "Imports are not available in the Playground.",
        "Everything you need is already here.",
    ),
    (
        ast.Subscript,
        "Indexing (`x[0]`) is not supported in the Playground.",
        "Use the tensor's own methods (`slice`, `sum_dim`, `reshape`), or print the whole value.",
    ),
    (ast.While, "`while` loops are not supported; use `for … in range(n)`.", "A `for` loop always stops."),
    (
        (ast.If, ast.IfExp, ast.Match),
        "Decisions (`if`, `match`) are not supported in the Playground.",
        "A program here always builds the same graph: write the case you want to see.",
    ),
    (
        ast.Compare,
        "Comparisons (`<`, `==`, `in`, ...) are not supported in the Playground.",
        "Print the values and compare them by eye.",
    ),
    (ast.BoolOp, "`and` and `or` are not supported in the Playground.", ""),
    (ast.Lambda, "`lambda` is not supported; define a function with `def name(x): return ...`.", ""),
    (
        (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp),
        "Comprehensions (`[... for ...]`) are not supported; use a `for i in range(n):` loop.",
        "",
    ),
    ((ast.Dict, ast.Set), "Dictionaries and sets are not supported; use one variable per value.", ""),
    (ast.ClassDef, "Classes are not supported; use functions (`def name(x): ...`).", ""),
    (ast.AsyncFunctionDef, "`async def` is not supported; write `def name(x): ...`.", ""),
    (
        (ast.Await, ast.Yield, ast.YieldFrom, ast.AsyncFor, ast.AsyncWith),
        "`async`, `await` and `yield` are not supported; write a plain function that returns its result.",
        "",
    ),
    ((ast.With,), "`with` blocks are not supported in the Playground.", "Write the statements without it."),
    ((ast.Try,), "`try` is not supported: the Playground shows each error with its line.", ""),
    ((ast.Raise, ast.Assert), "`raise` and `assert` are not supported; print what you want to check.", ""),
    (
        (ast.Global, ast.Nonlocal),
        "`global` and `nonlocal` are not supported.",
        "Pass values into a function and `return` what it computes.",
    ),
    ((ast.Break, ast.Continue), "`break` and `continue` are not supported; choose the loop's `range` instead.", ""),
    (ast.JoinedStr, 'f-strings are not supported; pass several values to `print`, like `print("loss", loss)`.', ""),
    (ast.NamedExpr, "`:=` is not supported; assign on a line of its own.", ""),
    (ast.Starred, "`*` unpacking is not supported here; pass values one by one.", ""),
    ((ast.AnnAssign,), "Type annotations are not supported; write `x = ...`.", ""),
    (ast.Slice, "Slices (`a:b`) are not supported; use the tensor's `slice` method.", ""),
]


def _kind(value: Any) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, _TensorClass):
        return "Tensor (the class)"
    if isinstance(value, _DistributionClass):
        return "Distribution"
    if isinstance(value, Gradients):
        return "Gradients"
    if isinstance(value, _Function):
        return f"the function {value.name}"
    return type(value).__name__


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


def _named(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`function` under the name the student called, so a message about its arguments shows no internals."""
    function.__name__ = function.__qualname__ = name
    return function


def _public(error: Exception) -> str:
    """An exception's text without the interpreter's own qualified names (`_Interpreter._x.<locals>.`)."""
    return re.sub(r"\b(?:_?\w+\.)*<locals>\.", "", str(error))


def _show(value: Any) -> str:
    """How `print` writes a value: plain names for the engine's classes, never a module path or address."""
    if isinstance(value, Tensor):
        return repr(value)  # values as the seed prints them (float32 `5.4365635`), a large one by its shape
    if isinstance(value, Gradients):
        return f"Gradients({len(value)} entries)"
    if isinstance(value, Device):
        return repr(value)
    if isinstance(value, _TensorClass | _DistributionClass | _Function):
        return _kind(value)
    if isinstance(value, Distribution):
        return "Distribution"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, bool | int | float | str | range) or value is None:
        return repr(value) if isinstance(value, float) else str(value)
    return type(value).__name__
