"""Ready-made programs for the Playground's examples menu: the seed's programs and a few more. Where a
lesson has the same program, the example is made from the lesson's own code (`course/programs.py`)."""

import inspect
import textwrap
from collections.abc import Callable

from course.programs import neuron_program, seed_program, shared_losses


def body(program: Callable[..., object]) -> str:
    """A lesson program's statements, without its `def` line and its `return`: Playground code."""
    lines = textwrap.dedent(inspect.getsource(program)).splitlines()[1:]
    return textwrap.dedent("\n".join(line for line in lines if not line.lstrip().startswith("return "))) + "\n"


EXAMPLES = {
    "Seed: gradients after backward": body(seed_program)
    + """\
grads = loss.backward()
print("x.grad       =", x.grad(grads))
print("h.grad       =", h.grad(grads))
print("loss.grad    =", loss.grad(grads))
print("unused.grad  =", unused.grad(grads))
print("x.grad_remove=", x.grad_remove(grads))
print("x.grad again =", x.grad(grads))
""",
    "Seed: backward twice": body(seed_program)
    + """\
grads = loss.backward()
print("first backward: x.grad =", x.grad(grads))
loss.backward()  # refused: the tape is consumed
""",
    "Seed: shared subgraph": "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\n"
    + body(shared_losses)
    + """\
print("l1 -> x.grad =", x.grad(l1.backward()))
fresh = x.exp()
total = (fresh * 2.0).sum() + (fresh * 3.0).sum()
print("l1+l2 -> x.grad =", x.grad(total.backward()))
d = shared.detach()
print("detached:", d.is_tracked, d.is_require_grad)
""",
    "Seed: memory growth": """\
x = Tensor.random([256, 256], Distribution.Default, ad).require_grad()
for i in range(10):
    loss = (x.exp() * x).matmul(x).sum()
    del loss
grads = ((x.exp() * x).matmul(x).sum()).backward()
print("x.grad shape", x.grad(grads).dims())
""",
    "Neuron": body(neuron_program)
    + """\
grads = loss.backward()
print("w.grad", w.grad(grads))
print("b.grad", b.grad(grads))
""",
    "Gradient descent": """\
w = Tensor.from_floats([0.0], ad).require_grad()
for step in range(20):
    loss = ((w - 3.0) ** 2).sum()
    grads = loss.backward()
    step_taken = w.without_autodiff() - w.grad(grads) * 0.1
    w = Tensor.from_inner(step_taken, ad).require_grad()
print("w after 20 steps:", w)
""",
    "Per-sample loop (30 samples)": """\
w1 = Tensor.random([2, 4], Distribution.Default, ad).require_grad()
w2 = Tensor.random([4, 1], Distribution.Default, ad).require_grad()
x = Tensor.from_floats([[2.0, 3.0]], ad)
loss = ((x.matmul(w1).tanh().matmul(w2) - 1.0) ** 2).sum()
for i in range(30):
    x = Tensor.from_floats([[0.5 * i, 1.0 - i]], ad)
    loss = loss + ((x.matmul(w1).tanh().matmul(w2) - 1.0) ** 2).sum()
grads = loss.backward()
print("w1.grad", w1.grad(grads))
""",
    "Three-layer MLP, one function per layer": """\
w1 = Tensor.random([2, 4], Distribution.Default, ad).require_grad()
b1 = Tensor.zeros([1, 4], ad).require_grad()
w2 = Tensor.random([4, 4], Distribution.Default, ad).require_grad()
b2 = Tensor.zeros([1, 4], ad).require_grad()
w3 = Tensor.random([4, 1], Distribution.Default, ad).require_grad()
b3 = Tensor.zeros([1, 1], ad).require_grad()


def layer1(x):
    return (x.matmul(w1) + b1).tanh()


def layer2(h):
    return (h.matmul(w2) + b2).tanh()


def layer3(h):
    return h.matmul(w3) + b3


x = Tensor.from_floats([[0.5, -1.0], [1.0, 2.0], [-0.5, 0.25]], ad)
target = Tensor.from_floats([[1.0], [0.0], [0.5]], ad)
pred = layer3(layer2(layer1(x)))
loss = ((pred - target) ** 2).mean()
grads = loss.backward()
print("loss", loss)
print("w1.grad", w1.grad(grads))
""",
}
