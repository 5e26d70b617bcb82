"""The chain rule in numbers (the stage's card): what it writes is the arithmetic the engine did, in the program's
names; where paths meet, the terms add up to the gradient that finite differences give."""

from __future__ import annotations

import re

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, Tensor
from autodiff.stage.chain_rule import gradient_sums, step_cards
from autodiff.stage.naming import node_names
from autodiff.stage.narration import describe, short_names
from autodiff.trace import GradientRegistered, StepStarted
from course.programs import PROGRAMS, record_program

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def numbers(text: str) -> np.ndarray:
    return np.array([float(v) for v in NUMBER.findall(text)])


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_upstream_times_the_local_derivative_is_what_the_engine_sent(key):
    run = record_program(key)
    cards = step_cards(run.before, run.recorder, run.names)
    events = run.recorder.events
    checked = 0
    for index, card in cards.items():
        following = events[index + 1 :]
        end = next((k for k, e in enumerate(following) if isinstance(e, StepStarted)), len(following))
        node = events[index].node_id
        sent = [e.value for e in following[:end] if isinstance(e, GradientRegistered) and e.source == node]
        for item, value in zip(card["inputs"], sent, strict=True):
            assert np.allclose(numbers(item["sends"]), np.ravel(value)), item
            if not item["derivative_value"] or "summed" in item["product"]:
                continue
            upstream, local = numbers(card["upstream"]), numbers(item["derivative_value"])
            assert np.allclose(np.ravel(upstream * local), np.ravel(value), rtol=1e-6, atol=1e-7), (card, item)
            checked += 1
    assert checked >= 2  # every program has elementwise steps


def test_the_seed_card_for_h_and_the_sum_for_x():
    run = record_program("seed")
    cards = step_cards(run.before, run.recorder, run.names)
    h_step = next(k for k, e in enumerate(run.recorder.events) if isinstance(e, StepStarted) and e.op == "mul")
    card = cards[h_step]
    assert card["title"] == "h = x·x" and card["upstream"] == "[1.0, 1.0]"
    assert [i["input"] for i in card["inputs"]] == ["x", "x"]  # once per operand
    for item in card["inputs"]:
        assert item["derivative"] == "∂h/∂x = x" and item["derivative_value"] == "[1.0, 2.0]"
        assert item["product"] == "[1.0, 1.0] × [1.0, 2.0] = [1.0, 2.0]" and item["rule"] == "grad × x"
    x = int(run.tensors["x"].node_id)
    total = gradient_sums(run.before, run.recorder, run.names)[x]
    assert total["text"] == "[1.0, 2.0] + [1.0, 2.0] + [3.0, 3.0] = [5.0, 7.0]"
    assert [t["path"] for t in total["terms"]] == [
        "from h = x·x (first operand)",
        "from h = x·x (second operand)",
        "from x·3",
    ]


def finite_difference(program, name: str, values: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d loss / d `name` by central differences in float64, the program run on a plain device."""

    def loss(array: np.ndarray) -> float:
        ad = Device.numpy().autodiff()
        tensors = program(ad, {name: array})
        return float(tensors["loss"].numpy().sum())

    grad = np.zeros_like(values)
    for i in np.ndindex(values.shape):
        up, down = values.copy(), values.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (loss(up) - loss(down)) / (2 * eps)
    return grad


def seed_with(ad, replaced: dict[str, np.ndarray]) -> dict[str, Tensor]:
    x = Tensor.from_floats(replaced.get("x", np.array([1.0, 2.0])), ad, dtype="float64").require_grad()
    h = x * x
    return {"x": x, "h": h, "loss": (h + x * 3.0).sum()}


def test_the_terms_add_up_to_the_gradient_finite_differences_give():
    run = record_program("seed")
    x = int(run.tensors["x"].node_id)
    total = gradient_sums(run.before, run.recorder, run.names)[x]
    terms = np.sum([numbers(t["value"]) for t in total["terms"]], axis=0)
    expected = finite_difference(seed_with, "x", np.array([1.0, 2.0]))
    assert np.allclose(terms, expected, atol=1e-5) and np.allclose(numbers(total["total"]), expected, atol=1e-5)


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_cards_speak_the_programs_names_not_the_engines_letters(key):
    run = record_program(key)
    letters = "".join(sorted({"a", "b"} - set(run.names.values())))  # the engine's operand letters, unless named
    for card in step_cards(run.before, run.recorder, run.names).values():
        for item in card["inputs"]:
            for text in (item["rule"], item["derivative"]):
                assert not letters or not re.search(rf"\b[{letters}]\b", text), (key, text)
            assert "NodeId" not in item["input"] and "#" not in item["input"]


def test_a_large_program_gets_short_honest_cards():
    run = record_program("chain")  # 256 × 256 tensors
    cards = step_cards(run.before, run.recorder, run.names)
    assert cards
    for card in cards.values():
        for item in card["inputs"]:
            assert item["derivative_value"] == ""  # no per-element claim about 65,536 values
            assert len(item["product"]) < 200


def test_indexing_cards_place_the_gradient_where_the_part_was():
    """CS231n's neuron written with Python's indexing: each `w[0]` step's card says where its gradient goes, its
    numbers are the ones the engine sent, and the products name the parts (`∂(w[0]·x[0])/∂w[0] = x[0]`)."""
    ad = Device.numpy().autodiff(keep_values=True)
    w = Tensor.from_floats([2.0, -3.0, -3.0], ad).require_grad()
    x = Tensor.from_floats([-1.0, -2.0], ad).require_grad()
    out = (w[0] * x[0] + w[1] * x[1] + w[2]).sigmoid()
    before = ad.snapshot()
    recorder = BackwardRecorder()
    out.backward(recorder=recorder)
    names = node_names({"w": w, "x": x, "out": out})
    items = [(card, item) for card in step_cards(before, recorder, names).values() for item in card["inputs"]]
    placed = {card["title"]: item for card, item in items if card["title"] in ("w[0]", "w[2]", "x[1]")}
    assert placed["w[0]"]["rule"] == "grad placed at w[0], zeros elsewhere"
    local = 1 / (1 + np.exp(-1.0)) * (1 - 1 / (1 + np.exp(-1.0)))  # σ'(w·x + b), and w·x + b = 1
    assert "placed in zeros of shape [3] =" in placed["w[2]"]["product"]
    assert numbers(placed["w[2]"]["product"]) == pytest.approx([local, 3, 0.0, 0.0, local], abs=1e-6)
    assert numbers(placed["x[1]"]["sends"]) == pytest.approx([0.0, -3.0 * local], abs=1e-6)  # w[1]·σ'
    product = next(item for card, item in items if card["title"] == "w[0]·x[0]" and item["input"] == "w[0]")
    assert product["derivative"] == "∂(w[0]·x[0])/∂w[0] = x[0]" and product["rule"] == "grad × x[0]"
    called = short_names(before.nodes, names)
    assert "The step of w[0] runs (index[0], order 1)." in [describe(e, called) for e in recorder.events]
