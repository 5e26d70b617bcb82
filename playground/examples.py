"""Ready-made programs for the Playground's examples menu: the seed's programs and a few more."""

EXAMPLES = {
    "Seed: gradients after backward": """\
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
unused = Tensor.from_floats([5.0, 5.0], ad).require_grad()
h = x * x
loss = (h + x * 3.0).sum()
grads = loss.backward()
print("x.grad       =", x.grad(grads))
print("h.grad       =", h.grad(grads))
print("loss.grad    =", loss.grad(grads))
print("unused.grad  =", unused.grad(grads))
print("x.grad_remove=", x.grad_remove(grads))
print("x.grad again =", x.grad(grads))
""",
    "Seed: backward twice": """\
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
loss = (x * x + x * 3.0).sum()
grads = loss.backward()
print("first backward: x.grad =", x.grad(grads))
loss.backward()  # refused: the tape is consumed
""",
    "Seed: shared subgraph": """\
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
shared = x.exp()
l1 = (shared * 2.0).sum()
l2 = (shared * 3.0).sum()
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
    "Neuron": """\
w = Tensor.from_floats([[0.5, -0.3, 0.8]], ad).require_grad()
x = Tensor.from_floats([[1.0], [2.0], [3.0]], ad)
b = Tensor.from_floats([[0.1]], ad).require_grad()
out = (w @ x + b).tanh()
grads = out.sum().backward()
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
}
