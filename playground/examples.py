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
    "micrograd's README example": """\
# micrograd's README (github.com/karpathy/micrograd), Value(...) written as the engine's Tensor
a = Tensor.from_floats([-4.0], ad).require_grad()
b = Tensor.from_floats([2.0], ad).require_grad()
c = a + b
d = a * b + b**3
c += c + 1
c += 1 + c + (-a)
d += d * 2 + (b + a).relu()
d += 3 * d + (b - a).relu()
e = c - d
f = e**2
g = f / 2.0
g += 10.0 / f
print(f"{g.item():.4f}")
grads = g.backward()
print(f"{a.grad(grads).item():.4f}")
print(f"{b.grad(grads).item():.4f}")
""",
    "micrograd's MLP, with classes": """\
# micrograd's nn.py (github.com/karpathy/micrograd), Value(...) written as the engine's Tensor
import random


class Module:
    def parameters(self):
        return []


class Neuron(Module):
    def __init__(self, nin, nonlin=True):
        self.w = [Tensor.from_floats([random.uniform(-1, 1)], ad).require_grad() for _ in range(nin)]
        self.b = Tensor.from_floats([0.0], ad).require_grad()
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.tanh() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]

    def __repr__(self):
        return f"{'Tanh' if self.nonlin else 'Linear'}Neuron({len(self.w)})"


class Layer(Module):
    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP(Module):
    def __init__(self, nin, nouts):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


random.seed(1337)
model = MLP(3, [4, 4, 1])
xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
ys = [1.0, -1.0, -1.0, 1.0]
ypred = []
for x in xs:
    ypred.append(model(x))
loss = sum((yout - ygt) ** 2 for ygt, yout in zip(ys, ypred))
grads = loss.backward()
print(model.layers[0].neurons[0], "of", len(model.parameters()), "parameters")
print(f"loss {loss.item():.6f}")
first = model.layers[0].neurons[0]
print("its w[0].grad", f"{first.w[0].grad(grads).item():.6f}", "and b.grad", f"{first.b.grad(grads).item():.6f}")
""",
    "CS231n's neuron, with w[0]": """\
# CS231n's sigmoid neuron (cs231n.github.io/optimization-2): f = sigmoid(w0*x0 + w1*x1 + w2)
w = Tensor.from_floats([2.0, -3.0, -3.0], ad).require_grad()
x = Tensor.from_floats([-1.0, -2.0], ad).require_grad()
dot = w[0] * x[0] + w[1] * x[1] + w[2]
f = dot.sigmoid()
grads = f.backward()
print("w.grad =", [round(v, 4) for v in w.grad(grads).tolist()])
print("x.grad =", [round(v, 4) for v in x.grad(grads).tolist()])
""",
    "Gradient descent until the loss is small (while)": """\
w = Tensor.from_floats([0.0], ad).require_grad()
step = 0
loss_value = float("inf")
while loss_value > 0.01:  # stop when the loss is small
    loss = ((w - 3.0) ** 2).sum()
    loss_value = loss.item()
    grads = loss.backward()
    step += 1
    if step % 5 == 0:
        print(f"step {step}: loss {loss_value:.4f}")
    w = Tensor.from_inner(w.without_autodiff() - w.grad(grads) * 0.1, ad).require_grad()
print(f"stopped after {step} steps: w = {w.item():.4f}")
""",
}
