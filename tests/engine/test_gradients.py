"""Every op's backward rule against central finite differences in float64."""

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from hypothesis import given, settings
from hypothesis import strategies as st

RNG = np.random.default_rng(0)


def rand(*shape, low=-1.5, high=1.5):
    return RNG.uniform(low, high, size=shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


UNARY = {
    "neg": (lambda a: -a, rand),
    "exp": (lambda a: a.exp(), rand),
    "log": (lambda a: a.log(), positive),
    "sqrt": (lambda a: a.sqrt(), positive),
    "sin": (lambda a: a.sin(), rand),
    "cos": (lambda a: a.cos(), rand),
    "tanh": (lambda a: a.tanh(), rand),
    "sigmoid": (lambda a: a.sigmoid(), rand),
    "relu": (lambda a: a.relu(), lambda *s: np.sign(rand(*s)) * positive(*s)),  # away from the kink
    "pow2": (lambda a: a**2, rand),
    "pow_half": (lambda a: a**0.5, positive),
    "pow_neg": (lambda a: a**-1.5, positive),
    "add_scalar": (lambda a: a + 2.5, rand),
    "radd_scalar": (lambda a: 2.5 + a, rand),
    "sub_scalar": (lambda a: a - 2.5, rand),
    "rsub_scalar": (lambda a: 2.5 - a, rand),
    "mul_scalar": (lambda a: a * -3.0, rand),
    "rmul_scalar": (lambda a: 3.0 * a, rand),
    "div_scalar": (lambda a: a / 4.0, rand),
    "rdiv_scalar": (lambda a: 2.0 / a, positive),
    "sum": (lambda a: a.sum(), rand),
    "mean": (lambda a: a.mean(), rand),
    "sum_dim0": (lambda a: a.sum_dim(0), rand),
    "sum_dim1": (lambda a: a.sum_dim(1), rand),
    "mean_dim_last": (lambda a: a.mean_dim(-1), rand),
    "reshape": (lambda a: a.reshape([3, 2, 1]), rand),
    "reshape_infer": (lambda a: a.reshape([-1]), rand),
    "transpose": (lambda a: a.transpose(), rand),
    "swap_dims": (lambda a: a.swap_dims(0, 1), rand),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op_matches_finite_differences(name):
    op, make = UNARY[name]
    assert_gradients_match(op, [make(2, 3)])


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}

BROADCAST_CASES = [
    ((2, 3), (2, 3)),
    ((2, 3), (1, 3)),
    ((2, 3), (2, 1)),
    ((2, 3), (3,)),
    ((1,), (2, 3)),
    ((4, 1, 3), (2, 1)),
]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_CASES, ids=str)
def test_binary_op_with_broadcasting_matches_finite_differences(name, shapes):
    a_shape, b_shape = shapes
    assert_gradients_match(BINARY[name], [rand(*a_shape), positive(*b_shape)])


@pytest.mark.parametrize(
    "a_shape,b_shape", [((2, 3), (3, 4)), ((1, 3), (3, 1)), ((2, 2, 3), (2, 3, 2)), ((2, 2, 3), (1, 3, 2))], ids=str
)
def test_matmul_matches_finite_differences(a_shape, b_shape):
    assert_gradients_match(lambda a, b: a @ b, [rand(*a_shape), rand(*b_shape)])


def test_tensor_used_twice_accumulates_both_paths():
    assert_gradients_match(lambda x: x * x + x * 3.0, [rand(2)])


def test_neuron_and_mlp_programs():
    assert_gradients_match(lambda w, x, b: (w @ x + b).tanh(), [rand(3, 4), rand(4, 1), rand(3, 1)])
    assert_gradients_match(
        lambda w1, w2, x: ((x @ w1).relu() @ w2 - 1.0) ** 2,
        [rand(3, 4) + 0.05, rand(4, 2), rand(5, 3)],
    )


# -- property-based: random shapes and random op chains --------------------------------------

dims = st.integers(min_value=1, max_value=3)


@st.composite
def broadcast_pair(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(dims) for _ in range(rank)]
    other = [1 if draw(st.booleans()) else d for d in shape]
    other = other[draw(st.integers(0, rank - 1)) :]
    if draw(st.booleans()):
        shape, other = other, shape
    return tuple(shape), tuple(other)


@settings(max_examples=40, deadline=None)
@given(pair=broadcast_pair(), name=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 10_000))
def test_binary_ops_over_random_broadcast_shapes(pair, name, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.5, 1.5, size=pair[0])
    b = rng.uniform(0.5, 2.0, size=pair[1])
    assert_gradients_match(BINARY[name], [a, b])


SMOOTH_UNARY = ["neg", "exp", "sin", "cos", "tanh", "sigmoid", "pow2", "mul_scalar", "rsub_scalar", "add_scalar"]
CHAIN_BINARY = ["add", "sub", "mul"]


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(dims, min_size=1, max_size=3).map(tuple),
    chain=st.lists(st.tuples(st.sampled_from(SMOOTH_UNARY + CHAIN_BINARY), st.integers(0, 1)), min_size=1, max_size=6),
    seed=st.integers(0, 10_000),
)
def test_random_op_chains(shape, chain, seed):
    rng = np.random.default_rng(seed)

    def program(x, y):
        values = [x, y]
        for name, pick in chain:
            if name in BINARY:
                values.append(BINARY[name](values[-1], values[pick]))
            else:
                values.append(UNARY[name][0](values[-1]) * 0.5)  # keep values in a tame range
        return values[-1]

    assert_gradients_match(program, [rng.uniform(-1, 1, size=shape), rng.uniform(-1, 1, size=shape)], tol=1e-4)
