"""The Playground's sandbox: the programs students bring (micrograd, CS231n) with their published numbers, the attacks
a full Python invites and the bombs a program can be (each refused or stopped, in words), the limits, and fuzzing.
docs/playground-safety.md lists each attack with its outcome."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodiff import Device, Distribution, Tensor
from autodiff.stage.naming import labels
from playground import Limits, run_program
from playground.examples import EXAMPLES

SEED = """\
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
unused = Tensor.from_floats([5.0, 5.0], ad).require_grad()
h = x * x
loss = (h + x * 3.0).sum()
grads = loss.backward()
print("x.grad", x.grad(grads))
print("h.grad", h.grad(grads))
print("loss.grad", loss.grad(grads))
print("unused.grad", unused.grad(grads))
print("x.grad_remove", x.grad_remove(grads))
print("x.grad again", x.grad(grads))
"""

MICROGRAD_README = EXAMPLES["micrograd's README example"]  # only `Value(...)` written as the engine's Tensor

CS231N_NEURON = EXAMPLES["CS231n's neuron, with w[0]"]  # cs231n.github.io/optimization-2

MICROGRAD_MLP = EXAMPLES["micrograd's MLP, with classes"]
WHILE_LOOP = EXAMPLES["Gradient descent until the loss is small (while)"]


def cpython_output(source: str) -> list[str]:
    """What CPython prints running `source` as it is, with the engine's names a Playground program has."""
    ad = Device.numpy().autodiff()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<cpython>", "exec"), {"Tensor": Tensor, "Distribution": Distribution, "ad": ad})
    return out.getvalue().splitlines()


def test_micrograds_readme_prints_its_published_numbers():
    result = run_program(MICROGRAD_README)
    assert result.error is None, result.error
    assert result.output == ["24.7041", "138.8338", "645.5773"]  # micrograd's README, its comments


def test_cs231ns_neuron_prints_its_published_gradients_and_names_w0():
    result = run_program(CS231N_NEURON)
    assert result.error is None, result.error
    assert result.output == ["w.grad = [-0.1966, -0.3932, 0.1966]", "x.grad = [0.3932, -0.5898]"]  # CS231n's notes
    shown = labels(result.backward.before.nodes, result.backward.names).values()
    assert {"w[0]", "x[1]", "w[2]"} <= set(shown)
    assert not any("#" in label for label in shown)


def test_a_micrograd_mlp_prints_what_cpython_prints_and_is_drawn_by_its_parts():
    result = run_program(MICROGRAD_MLP)
    assert result.error is None, result.error
    assert result.output == cpython_output(MICROGRAD_MLP)
    nodes = result.backward.before.nodes
    names = result.backward.names
    # leaves named by the attribute that holds them, boxes by the objects whose methods made them
    assert {names.get(int(n.id)) for n in nodes if n.op == "from_floats"} >= {"w[0]", "w[1]", "b"}
    parts = {g.name for n in nodes for g in n.group}
    assert {"MLP 1", "Layer 1", "Layer 3", "Neuron 1", "making Neuron 1"} <= parts
    tanh = next(n for n in nodes if n.op == "tanh")
    assert [g.name for g in tanh.group][:3] == ["for x in xs", "iteration 1", "MLP 1"]  # the program's own loop first
    assert not any(g.name.startswith("<") for n in nodes for g in n.group)  # comprehensions are part of their line
    assert not any("#" in label for label in labels(nodes, names).values())


def test_a_while_loop_with_a_stopping_rule_runs_as_in_cpython():
    result = run_program(WHILE_LOOP)
    assert result.error is None, result.error
    assert result.output == cpython_output(WHILE_LOOP)
    steps = int(result.output[-1].split()[2])  # "stopped after N steps: ..."
    assert [count for count, _ in result.memory] == list(range(1, steps + 1))  # the memory chart: each iteration


def test_seed_program_prints_the_seed_values():
    result = run_program(SEED)
    assert result.error is None
    assert result.output == [
        "x.grad Tensor([5.0, 7.0])",
        "h.grad None",
        "loss.grad None",
        "unused.grad None",
        "x.grad_remove Tensor([5.0, 7.0])",
        "x.grad again None",
    ]
    assert result.backward is not None and result.names[0] == "x"


def test_backward_twice_is_refused_with_the_line():
    result = run_program(SEED + "loss.backward()\n")
    assert result.error is not None and result.error.line == 12
    assert "consumed at NodeId(5)" in result.error.message


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_runs(name):
    result = run_program(EXAMPLES[name])
    assert result.error is None or "consumed" in result.error.message, result.error
    assert result.output


def test_random_is_seeded_per_run():
    source = "import random\nprint(random.random(), random.uniform(-1, 1))\n"
    assert run_program(source).output == run_program(source).output


def test_loops_record_memory_and_del_drops():
    result = run_program(
        "x = Tensor.random([64, 64], Distribution.Default, ad).require_grad()\n"
        "for i in range(5):\n    loss = (x.exp() * x).matmul(x).sum()\n    del loss\n"
    )
    assert result.error is None
    tensor = 64 * 64 * 4
    assert [u.bytes_in_use for _, u in result.memory] == [tensor * (1 + 2 * k) for k in range(1, 6)]


def test_an_error_shows_the_line_the_caret_pythons_message_and_what_to_do():
    result = run_program("a = 1\nb = [1, 2]\nc = b[5] + a\n")
    error = result.error
    assert (error.line, error.column) == (3, 5)  # the caret under `b[5]`
    assert error.message == "IndexError: list index out of range"
    assert error.hint  # a sentence that says what to do


# -- attacks: each is refused at compile time, by a guard, or by a limit, in words --------------------------------
HOSTILE = {
    # the old interpreter's hostile programs, still refused
    "import": ("import os", "`os` reaches the server's files"),
    "from_import": ("from os import system", "`os` reaches the server's files"),
    "import_dunder": ("__import__('os')", '"__import__" is an invalid variable name'),
    "import_importlib": ("import importlib", "a program here may import `math`, `random` and `autodiff`"),
    "import_relative": ("from . import sandbox", "a program here may import"),
    "import_submodule": ("import os.path", "`os` reaches"),
    "import_numpy": ("import numpy", "`numpy` is not available"),
    "import_as": ("import os as o", "`os` reaches the server's files"),
    "import_star": ("from os import *", "imports are not allowed"),
    "import_among_others": ("import math, os", "`os` reaches the server's files"),
    "import_device": ("from autodiff import Device", "`Device` is not in `autodiff` here"),
    "module_internals": ('import math\nm = getattr(math, "__loader__")', "`__loader__` is not available"),
    "random_class": ("import random\nr = random.Random", "has no attribute `Random`"),
    "bound_method_self": ('x = Tensor.ones([1], ad)\ng = getattr(x.exp, "__self__")', "`__self__` is not available"),
    "dunder_class": ("x = [].__class__", '"__class__" is an invalid attribute name'),
    "subclasses": ("x = ().__class__.__bases__[0].__subclasses__()", "is an invalid attribute name"),
    "type_subclasses": ("x = type.__subclasses__(object)", '"__subclasses__" is an invalid attribute name'),
    "type_three_arguments": ("T = type('T', (), {'__del__': print})", "`type` with three arguments makes a class"),
    "type_of_tensor": ("t = Tensor.ones([1], ad)\nd = type(t).data", "has no attribute `data`"),
    "getattr_dunder": ('f = getattr(ad, "__class__")', "`__class__` is not available"),
    "getattr_built": ('n = "_" + "_cl" + "ass__"\nf = getattr(1, n)', "`__class__` is not available"),
    "getattr_server": ('f = getattr(ad, "server")', "A device's attributes are not available"),
    "tensor_dunder": ("t = Tensor.ones([1], ad)\nt.__dict__", '"__dict__" is an invalid attribute name'),
    "tensor_data": ("t = Tensor.ones([1], ad)\nd = t.data", "`data` is not available on a Tensor"),
    "tensor_node": ("t = Tensor.ones([1], ad)\nd = t.node", "`node` is not available on a Tensor"),
    "tensor_numpy": ("t = Tensor.ones([1], ad)\na = t.numpy()", "`numpy` is not available on a Tensor"),
    "tensor_device": ("t = Tensor.ones([1], ad)\nd = t.device", "`device` is not available on a Tensor"),
    "tensor_getattr_data": ('t = Tensor.ones([1], ad)\nd = getattr(t, "data")', "`data` is not available"),
    "server": ("s = ad.server", "A device's attributes are not available"),
    "backend": ("s = ad.backend", "A device's attributes are not available"),
    "grads_internals": (
        "x = Tensor.ones([1], ad).require_grad()\ng = x.sum().backward()\nc = g.container",
        "no attribute",
    ),
    "open": ('f = open("/tmp/playground-pwned.txt", "w")', "`open` reads and writes files on the server"),
    "eval": ('eval("1")', "Eval calls are not allowed"),
    "exec": ('exec("x = 1")', "Exec calls are not allowed"),
    "eval_alias": ('e = eval\ne("1")', "`eval` runs text as code"),
    "compile": ('c = compile("1", "f", "eval")', "`compile` makes code from text"),
    "globals": ("g = globals()", "`globals` hands out the program's namespace"),
    "locals": ("g = locals()", "`locals` hands out"),
    "vars": ("v = vars(ad)", "`vars` hands out"),
    "builtins_name": ('b = __builtins__["open"]', '"__builtins__" is an invalid variable name'),
    "builtins_via_function": ("def f():\n    pass\ng = f.__globals__", '"__globals__" is an invalid attribute name'),
    "gen_frame": ("g = (i for i in [1])\nf = g.gi_frame.f_globals", "is a restricted name"),
    "gen_frame_getattr": ('g = (i for i in [1])\nf = getattr(g, "gi_frame")', "`gi_frame` is not available"),
    "frame_via_traceback": (
        "try:\n    1 / 0\nexcept Exception as e:\n    t = e.__traceback__",
        '"__traceback__" is an invalid attribute name',
    ),
    "tb_frame_getattr": (
        'try:\n    1 / 0\nexcept Exception as e:\n    t = getattr(getattr(e, "__traceback__"), "tb_frame")',
        "`__traceback__` is not available",
    ),
    "format_attribute": ('s = "{0.__class__}".format(1)', "`str.format` is not available"),
    "format_map": ('s = "{x.__class__}".format_map({"x": 1})', "`str.format` is not available"),
    "format_getattr": ('f = getattr("{0.__class__}", "format")', "`str.format` is not available"),
    "class_del": ("class A:\n    def __del__(self):\n        pass", 'may not define "__del__"'),
    "class_dunder_assign": ("class A:\n    pass\nA.__init__ = 1", '"__init__" is an invalid attribute name'),
    "setattr_dunder": ("class A:\n    pass\nsetattr(A(), '__class__', int)", "does not start with `_`"),
    "subclass_tensor": ("class T(Tensor):\n    pass", "may build only on the program's own classes"),
    "subclass_type": ("class M(type):\n    pass", "may build only on the program's own classes"),
    "metaclass": ("class A(metaclass=type):\n    pass", 'The keyword argument "metaclass" is not allowed'),
    "tensor_write": ("t = Tensor.ones([2], ad)\nt.data = 1", "A tensor cannot be changed in place"),
    "tensor_item_write": ("t = Tensor.ones([2], ad)\nt[0] = 1.0", "A tensor cannot be changed in place"),
    "module_write": ("import math\nmath.pi = 3", "cannot be changed by a program here"),
    "builtin_write": ("len.x = 1", "cannot be changed by a program here"),
    "function_attribute": ("def f():\n    pass\nc = f.func_code", "has no attribute `func_code`"),
    "super_escape": ("class A:\n    def f(self):\n        return super().__class__", '"__class__" is an invalid'),
    "super_of_tensor": ("t = Tensor.ones([1], ad)\nd = super(Tensor, t).shape", "obj must be an instance or subtype"),
    # a red team's findings (2026-12-06): each reached a file or the engine's buffers before it was closed
    "type_of_a_class": ("T = type(type(1))", "The class of the class int is not available"),
    "type_of_the_engines": ("g = type(ad)", "is not available here"),
    "tensor_called": ("t = Tensor(1, ad)", "not by calling `Tensor(...)`"),
    "fake_device": ("class D:\n    pass\nt = Tensor.from_ints([1], D())", "of your program's"),
    "fake_inner": ("class F:\n    pass\nt = Tensor.from_inner(F(), ad)", "of your program's"),
    "fake_gradients": (
        "class G:\n    def replace(self, n, b):\n        pass\nx = Tensor.ones([1], ad).require_grad()\n"
        "x.grad_replace(G(), x)",
        "of your program's",
    ),
    "fake_in_a_list": ("class F:\n    pass\nt = Tensor.cat([Tensor.ones([1], ad), F()], 0)", "of your program's"),
    "mixin_with_a_builtin": ("class C:\n    pass\nclass K(C, str):\n    pass", "may build only on the program's"),
    "exception_words_outside_the_run": (
        "class E(Exception):\n    def __str__(self):\n        return open('/etc/passwd').read()\nraise E()",
        "Line 4",
    ),
    "exception_words_not_text": ("class E(Exception):\n    def __str__(self):\n        return 5\nraise E()", "Line 4"),
    "setattr_markup": ("class A:\n    pass\nsetattr(A(), '<img src=x>', 1)", "a Python identifier"),
    "exception_group": ("try:\n    pass\nexcept* Exception:\n    pass", "not allowed"),
    "bare_except": ("try:\n    pass\nexcept:\n    pass", "A bare `except:` is not allowed here"),
    "input": ("x = input()", "`input` waits for typing"),
    "exit": ("exit()", "`exit` would stop the server's worker"),
    "breakpoint": ("breakpoint()", '"breakpoint" is a reserved name'),
    "memoryview": ("m = memoryview(b'a')", "`memoryview` reads an object's raw memory"),
    # bombs: stopped by a limit, in words
    "huge_shape": ("t = Tensor.zeros([100000, 100000], ad)", "the limit is 1,048,576"),
    "huge_matmul": ("a = Tensor.ones([4000, 1], ad)\nb = Tensor.ones([1, 4000], ad)\nc = a @ b", "the limit is"),
    "huge_broadcast": ("a = Tensor.ones([2000, 1], ad)\nb = Tensor.ones([1, 2000], ad)\nc = a + b", "the limit is"),
    "conversion_before_check": (
        "r = [0.5] * 8\nfor i in range(18):\n    r = [r, r]\nt = Tensor.from_floats(r, ad)",
        "from_floats got more than 1,048,576 values",
    ),
    "memory_hog": (
        "x = Tensor.random([1024, 1024], Distribution.Default, ad).require_grad()\n"
        "for i in range(40):\n    loss = (x.exp() * x).sum()",
        "MiB; the limit is",
    ),
    "node_flood": ("x = Tensor.ones([1], ad).require_grad()\nwhile True:\n    x = x * 1.0", "graph nodes"),
    "backward_size": (
        "x = Tensor.random([1024, 1024], Distribution.Default, ad).require_grad()\ny = x * 1.0\n"
        "for i in range(12):\n    y = y * 1.0\nl = y.sum()\ng = l.backward()",
        "This backward would need about",
    ),
    "trace_copies": (
        "x = Tensor.random([512, 512], Distribution.Default, ad).require_grad()\ny = x * 1.0\n"
        "for i in range(40):\n    y = y * 1.0\nl = y.sum()\ng = l.backward()\nz = x * 1.0",
        "the replay of its last",
    ),
    "recursion": ("def f(x):\n    return f(x)\nf(1)", "Functions call each other more than about 200 deep"),
    "recursion_in_class": ("class A:\n    def __repr__(self):\n        return repr(self)\nprint(A())", "200 deep"),
    "long_program": ("x = 1\n" * 3000, "characters long"),
    "print_flood": ("while True:\n    print(1)", "printed more than 500 lines"),
    "print_newlines": ('print("\\n" * 1000)', "printed more than 500 lines"),
    "nan_data": ('t = Tensor.from_floats([float("nan")], ad)', "NaN"),
    "float32_overflow": ('t = Tensor.from_floats([float("1e39")], ad)', "too large for float32"),
    "syntax": ("x = (1 +", "not valid Python"),
    "parser_nesting": ("x = " + "-(" * 1000 + "1" + ")" * 1000, "not valid Python"),
    "index_out_of_range": ("t = Tensor.ones([2], ad)\ny = t[5]", "Index 5 is out of range"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_attacks_and_bombs_are_refused_or_stopped_in_words(name, tmp_path):
    source, words = HOSTILE[name]
    target = Path("/tmp/playground-pwned.txt")
    target.unlink(missing_ok=True)
    start = time.monotonic()
    result = run_program(source, Limits(seconds=3.0))
    assert result.error is not None, f"{name} was not refused"
    assert words in str(result.error), str(result.error)
    assert not result.error.internal
    assert time.monotonic() - start < 15
    assert not target.exists()


@pytest.mark.parametrize(
    "source",
    ["while True:\n    pass", "while True:\n    try:\n        pass\n    except Exception:\n        pass",
     "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass"],
)  # fmt: skip
def test_a_loop_that_never_ends_is_stopped_by_the_time_limit_even_through_except_and_finally(source):
    start = time.monotonic()
    result = run_program(source, Limits(seconds=0.5))
    assert result.error is not None and "ran longer than 0.5 seconds" in result.error.message
    assert time.monotonic() - start < 2.5  # five times the goal


def test_a_refusal_cannot_be_caught_by_the_program():
    result = run_program('try:\n    open("/etc/passwd")\nexcept Exception:\n    print("caught")\n')
    assert result.output == [] and "`open` reads and writes files" in result.error.message


def test_nothing_of_a_run_stays_for_the_next():
    first = run_program("import math\nclass A:\n    pass\nA.shared = [1]\nx = 5\n")
    assert first.error is None
    second = run_program("print(x)\n")
    assert "NameError: name 'x' is not defined" in second.error.message
    third = run_program("import math\nprint(hasattr(math, 'shared'), math.pi)\n")
    assert third.output == ["False 3.141592653589793"]


def test_engine_errors_point_at_the_line():
    result = run_program("a = Tensor.ones([2, 3], ad)\nb = Tensor.ones([4], ad)\nc = a + b\n")
    assert result.error.line == 3 and "do not match" in result.error.message


# -- fuzzing -------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_random_text_gives_only_typed_errors(text):
    result = run_program(text, Limits(seconds=1.0))
    assert result.error is None or not result.error.internal


NAMES = ["x", "y", "ad", "Tensor", "Distribution", "print", "range", "grads", "getattr", "type", "len", "self"]
METHODS = ["exp", "sum", "backward", "grad", "require_grad", "reshape", "matmul", "tanh", "detach", "ones",
           "from_floats", "zeros", "random", "item", "mean_dim", "Default", "data", "node", "append",
           "format"]  # fmt: skip
numbers = st.one_of(st.integers(-5, 5), st.floats(-3, 3, allow_nan=False))


def expressions():
    leaves = st.one_of(
        numbers.map(lambda v: ast.Constant(v)),
        st.sampled_from(NAMES).map(lambda n: ast.Name(n, ast.Load())),
        st.lists(numbers.map(lambda v: ast.Constant(v)), min_size=1, max_size=3).map(lambda e: ast.List(e, ast.Load())),
    )

    def extend(children):
        return st.one_of(
            st.tuples(
                children,
                st.sampled_from([ast.Add(), ast.Mult(), ast.Sub(), ast.Div(), ast.Pow(), ast.MatMult()]),
                children,
            ).map(lambda t: ast.BinOp(t[0], t[1], t[2])),
            st.tuples(children, st.sampled_from(METHODS), st.lists(children, max_size=3)).map(
                lambda t: ast.Call(ast.Attribute(t[0], t[1], ast.Load()), t[2], [])
            ),
            st.tuples(st.sampled_from(NAMES), st.lists(children, max_size=3)).map(
                lambda t: ast.Call(ast.Name(t[0], ast.Load()), t[1], [])
            ),
            st.tuples(children, children).map(lambda t: ast.Subscript(t[0], t[1], ast.Load())),
        )

    return st.recursive(leaves, extend, max_leaves=12)


statements = st.one_of(
    st.tuples(st.sampled_from(["x", "y", "grads"]), expressions()).map(
        lambda t: ast.Assign([ast.Name(t[0], ast.Store())], t[1])
    ),
    expressions().map(ast.Expr),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statements, min_size=1, max_size=8))
def test_random_programs_give_only_typed_errors(body):
    source = ast.unparse(ast.fix_missing_locations(ast.Module(body, [])))
    start = time.monotonic()
    result = run_program(source, Limits(seconds=1.0))
    assert result.error is None or not result.error.internal, (source, result.error)
    assert time.monotonic() - start < 5


def test_twenty_concurrent_runs_do_not_cross_talk():
    # Twenty sessions' programs at once, in threads (the app runs each in a worker process; threads share more)
    import threading

    outputs: dict[int, list[str]] = {}

    def session(k: int) -> None:
        program = (
            f"x = Tensor.from_floats([{k}.0, 1.0], ad).require_grad()\n"
            "for i in range(20):\n    y = (x * x).sum()\n"
            f"g = y.backward()\nprint({k}, x.grad(g))\n"
        )
        outputs[k] = run_program(program).output

    threads = [threading.Thread(target=session, args=(k,)) for k in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {k: out for k, out in outputs.items()} == {k: [f"{k} Tensor([{2.0 * k}, 2.0])"] for k in range(20)}


def test_a_failed_run_keeps_its_error_as_text_only():
    result = run_program("x = Tensor.ones([256, 256], ad)\ny = undefined_name")
    assert result.error is not None
    assert result.error.__traceback__ is None and result.error.__context__ is None  # no frames, no variables


def test_program_text_is_kept_as_typed_in_errors():
    hostile = "[Session expired: log in again](https://evil.example/login) ![](https://evil.example/p.png)"
    result = run_program(f'n = int("{hostile}")')
    assert hostile in result.error.message  # the page escapes it (tests/app, tests/browser)


def test_no_file_appears_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for source, _ in HOSTILE.values():
        if "open" in source or "import" in source:
            run_program(source, Limits(seconds=1.0))
    assert os.listdir(tmp_path) == []


def test_the_pages_list_is_what_the_guards_allow_and_every_example_runs():
    from playground.guards import TENSOR_API, TENSOR_CONSTRUCTORS
    from playground.reference import SHAPE_EXAMPLES, TENSOR_KINDS

    listed = [name for names in TENSOR_KINDS.values() for name in names]
    assert sorted(listed) == sorted(TENSOR_API | TENSOR_CONSTRUCTORS)  # each once, none missing
    for method, example in SHAPE_EXAMPLES.items():
        result = run_program(example)
        assert result.error is None and result.output, (method, result.error)
    sliced = run_program(SHAPE_EXAMPLES["slice"]).output
    assert sliced == ["Tensor([[2.0, 3.0]])"]  # rows 0..1, columns 1..3, as its comment says


def test_a_program_run_again_is_drawn_the_same():
    # a worker keeps a program compiled: its second run must count its loops and objects from the start again
    first, second = run_program(MICROGRAD_MLP), run_program(MICROGRAD_MLP)
    assert [[g.name for g in n.group] for n in first.snapshot.nodes] == [
        [g.name for g in n.group] for n in second.snapshot.nodes
    ]
    assert first.names == second.names and first.lines == second.lines
