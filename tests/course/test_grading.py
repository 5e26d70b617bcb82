"""Class mode's grading (course/grading.py): the right answers agree with finite differences of independent numpy
losses, and each mistake the graph explains is recognized from a wrong answer worked out by hand."""

from __future__ import annotations

import re

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, Tensor
from course.grading import MISTAKES, Question, grade, parse_numbers, questions, right_answer
from course.programs import PROGRAMS as LESSONS
from course.programs import record_program

pytestmark = pytest.mark.course

X = [1.0, 2.0]


def _record(build):
    """`build(x)` -> {name: tensor} with a `loss`; the questions of its recorded backward."""
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats(X, ad).require_grad()
    tensors = {"x": x, **build(x)}
    before = ad.snapshot()
    recorder = BackwardRecorder()
    tensors["loss"].backward(recorder=recorder)
    names = {int(t.node_id): name for name, t in tensors.items()}
    return {q.key: q for q in questions(before, recorder, names)}


def _fd(loss, at=X, eps=1e-6) -> np.ndarray:
    x = np.array(at, dtype=np.float64)
    out = []
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        out.append((loss(up) - loss(down)) / (2 * eps))
    return np.array(out)


def _fan_out(x):
    h = x * x
    return {"h": h, "loss": (h + x * 3.0).sum()}


def _sub_neg(x):
    d = (x * 2.0) - (-x)
    return {"d": d, "loss": d.sum()}


def _div_exp(x):
    e = x.exp()
    return {"e": e, "loss": (e / x).sum()}


PROGRAMS = {  # (what the engine builds, the same loss in numpy)
    "fan-out": (_fan_out, lambda x: np.sum(x * x + 3 * x)),
    "sub-neg": (_sub_neg, lambda x: np.sum(3 * x)),
    "div-exp": (_div_exp, lambda x: np.sum(np.exp(x) / x)),
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_leafs_gradient_is_the_finite_difference(program):
    build, numpy_loss = PROGRAMS[program]
    asked = _record(build)
    question = asked["grad:0"]
    assert np.allclose(question.values, _fd(numpy_loss), rtol=1e-5)
    assert grade(question, ", ".join(str(v) for v in _fd(numpy_loss))).right is True


def test_each_mistake_is_recognized_from_a_wrong_answer_worked_out_by_hand():
    asked = _record(PROGRAMS["fan-out"][0])
    x_grad = asked["grad:0"]  # 2x + 3 at [1, 2] = [5, 7], by two paths: x·x sends x twice ([1, 2] each), x·3 sends 3
    assert grade(x_grad, "3, 3") == grade(x_grad, "[3.0, 3.0]")
    assert grade(x_grad, "3, 3").mistake == "one_path"  # only x·3's path
    assert grade(x_grad, "2, 4").mistake == "one_path"  # x·3's path forgotten: both of x·x's
    assert grade(x_grad, "4, 5").mistake == "one_path"  # one operand of x·x forgotten
    assert grade(x_grad, "-5, -7").mistake == "sign"
    assert grade(x_grad, "−5, −7").mistake == "sign"  # the minus the app's cards print
    # x's forward value [1, 2] is also what one path of x·x sends: fewest slips first, the forward value wins
    assert grade(x_grad, "1, 2").mistake == "forward_value"
    sends_to_x = [q for q in asked.values() if q.kind == "sends" and q.node == 0]
    times_three = next(q for q in sends_to_x if np.allclose(q.values, [3.0, 3.0]))
    assert "x·3" in times_three.prompt
    assert grade(times_three, "1, 1").mistake == "no_local_derivative"  # the upstream [1, 1] passed on
    assert grade(times_three, "1, 2").mistake == "forward_value"  # x itself
    assert grade(times_three, "-3, -3").mistake == "sign"
    remaining = asked["remaining"]
    assert remaining.names == {"x"} and grade(remaining, "x").right is True
    assert grade(remaining, "x, loss").mistake == "kept_intermediate"
    assert grade(remaining, "x h").mistake == "kept_intermediate"
    assert grade(remaining, "none") == grade(remaining, "NONE")
    assert grade(remaining, "none").right is False and grade(remaining, "none").mistake is None


def test_the_words_name_the_mistake_with_its_value():
    asked = _record(PROGRAMS["fan-out"][0])
    graded = grade(asked["grad:0"], "-5, -7")
    assert graded.words == f"{MISTAKES['sign'].capitalize()}: [-5.0, -7.0]."
    assert grade(asked["grad:0"], "9, 9").words.startswith("Not [5.0, 7.0]")


def test_a_mean_forgotten_is_the_upstream_spread_over_the_input():
    def mean(x):
        return {"loss": (x * 3.0).mean()}

    sends = [q for q in _record(mean).values() if q.kind == "sends"]
    first = sends[0]  # mean sends 1/n of its gradient to each element: [0.5, 0.5]
    assert np.allclose(first.values, [0.5, 0.5])
    assert grade(first, "1, 1").mistake == "no_local_derivative"


def test_not_an_answer_and_too_long_are_refused_before_parsing():
    question: Question = _record(PROGRAMS["div-exp"][0])["grad:0"]
    assert grade(question, "five").right is None
    assert all(grade(question, text).right is None for text in ("nan, 1", "inf inf", "1_0, 2"))
    too_long = grade(question, "1," * 150)
    assert too_long.right is None and "longer than 200 characters" in too_long.words


def test_every_lesson_program_has_its_questions_and_each_right_answer_grades_right():
    for key in ("seed", "shared", "neuron", "mlp"):
        run = record_program(key)
        asked = questions(run.before, run.recorder, run.names)
        assert any(q.kind == "sends" for q in asked) and asked[-1].key == "remaining", key
        assert len({q.key for q in asked}) == len(asked), key  # keys are unique
        for q in asked:
            if q.values is not None:
                assert grade(q, " ".join(str(v) for v in np.ravel(q.values)), limit=10_000).right is True, q.key
            for _, value in q.wrong:  # a mistake never matches the right answer
                assert not np.allclose(np.ravel(value), np.ravel(q.values)), q.key


def test_a_leaf_no_path_reaches_is_asked_and_its_answer_is_none():
    run = record_program("seed")
    (unused,) = [node_id for node_id, name in run.names.items() if name == "unused"]
    asked = {q.key: q for q in questions(run.before, run.recorder, run.names)}[f"grad:{unused}"]
    assert run.tensors["unused"].grad(run.grads) is None  # as in Burn and PyTorch: no gradient, not zeros
    assert asked.node == unused and asked.values is None
    assert grade(asked, " none ").right is True
    assert grade(asked, "0, 0").right is False  # zeros are a gradient; this leaf has none
    assert grade(asked, "5, 5").right is False
    assert grade(asked, "nothing").right is None


def test_none_is_read_everywhere_and_wrong_where_a_gradient_arrives():
    asked = _record(_fan_out)
    for question in (asked["grad:0"], next(q for q in asked.values() if q.kind == "sends")):
        graded = grade(question, "None")
        assert graded.right is False and graded.words.startswith("Not None")


# -- prompts without ambiguity, and the answer worked out in numbers (issue 43) -------------------------------------


def _lesson(key):
    run = record_program(key)
    return run, questions(run.before, run.recorder, run.names)


def test_every_prompt_of_every_lesson_program_is_distinct():
    for key in LESSONS:
        prompts = [q.prompt for q in _lesson(key)[1]]
        assert len(set(prompts)) == len(prompts), key


def test_a_step_that_sends_to_one_node_through_two_operands_names_the_operand():
    asked = {q.key: q for q in _lesson("seed")[1]}
    through = sorted(q.prompt for q in asked.values() if q.kind == "sends" and q.node == 0 and "x·x" in q.prompt)
    assert through == [
        "What does the step of h send to x, through the first operand of x·x?",
        "What does the step of h send to x, through the second operand of x·x?",
    ]
    assert asked["sends:11:0"].prompt == "What does the step of x·3 send to x?"  # not ambiguous: as it was
    assert asked["grad:0"].prompt == "What is x's gradient after the backward?"


def test_two_nodes_of_one_name_are_told_apart_by_their_ids():
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats(X, ad).require_grad()
    first, second = x * 2.0, x * 2.0
    loss = (first + second).sum()
    before, recorder = ad.snapshot(), BackwardRecorder()
    loss.backward(recorder=recorder)
    names = {int(x.node_id): "x", int(first.node_id): "y", int(second.node_id): "y", int(loss.node_id): "loss"}
    prompts = [q.prompt for q in questions(before, recorder, names)]
    assert len(set(prompts)) == len(prompts)
    assert any(p.startswith("What does the step of y send to x? (from NodeId(") for p in prompts)


def _sum_of_terms(worked: str) -> tuple[list[np.ndarray], np.ndarray]:
    """`…: [3.0, 3.0] + [1.0, 2.0] + [1.0, 2.0] = [5.0, 7.0].` -> the terms and the total (one path: one term)."""
    numbers = worked.rsplit(": ", 1)[1].removesuffix(".")
    left, _, total = numbers.rpartition(" = ")
    terms = left.split(" + ") if left else [total]
    return [np.array(parse_numbers(t)) for t in terms], np.array(parse_numbers(total))


def test_the_seeds_leaf_gradient_is_worked_out_path_by_path_in_the_order_they_arrived():
    asked = {q.key: q for q in _lesson("seed")[1]}
    assert asked["grad:0"].worked == (
        "x's gradient is the sum of what each of its 3 paths sends, in the order they arrived (from x·3, from h's "
        "first operand, from h's second operand): [3.0, 3.0] + [1.0, 2.0] + [1.0, 2.0] = [5.0, 7.0]."
    )
    unused = asked["grad:1"]
    assert unused.values is None and unused.worked.startswith("unused's gradient is None: no path from the loss")


# each lesson program's loss again, in float64 numpy, written independently of the engine
NUMPY_LOSSES = {
    "seed": lambda v: np.sum(v["x"] * v["x"] + 3 * v["x"]),
    "shared": lambda v: np.sum(2 * np.exp(v["x"])) + np.sum(3 * np.exp(v["x"])),
    "neuron": lambda v: np.sum(np.tanh(v["w"] @ v["x"] + v["b"])),
    "mlp": lambda v: np.mean((np.maximum(v["batch"] @ v["w1"] + v["b1"], 0) @ v["w2"] - v["target"]) ** 2),
    "mlp3": lambda v: np.mean(
        (np.tanh(np.tanh(v["batch"] @ v["w1"] + v["b1"]) @ v["w2"] + v["b2"]) @ v["w3"] + v["b3"] - v["target"]) ** 2
    ),
}


def _central_differences(loss, values: dict[str, np.ndarray], name: str, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(values[name])
    for i in np.ndindex(out.shape):
        up = {**values, name: values[name].copy()}
        down = {**values, name: values[name].copy()}
        up[name][i] += eps
        down[name][i] -= eps
        out[i] = (loss(up) - loss(down)) / (2 * eps)
    return out


@pytest.mark.parametrize("key", list(LESSONS))
def test_each_leafs_worked_sum_adds_up_to_its_gradient_and_that_is_the_finite_difference(key):
    assert set(NUMPY_LOSSES) == set(LESSONS)  # a new lesson program gets its numpy loss here
    run, asked = _lesson(key)
    values = {name: np.asarray(run.before.node(t.node_id).value, dtype=np.float64) for name, t in run.tensors.items()}
    loss = NUMPY_LOSSES[key]
    assert np.isclose(loss(values), values["loss"].item(), rtol=1e-5)  # the same program
    checked = 0
    for q in asked:
        if q.kind != "leaf_grad" or q.values is None:
            continue
        terms, total = _sum_of_terms(q.worked)
        assert np.allclose(sum(terms), np.ravel(q.values), rtol=1e-5, atol=1e-6), q.key
        assert np.allclose(total, np.ravel(q.values), rtol=1e-5, atol=1e-6), q.key
        assert len(terms) == 1 or "paths sends" in q.worked
        name = run.names[q.node]
        expected = _central_differences(loss, values, name)
        assert np.allclose(q.values, expected, rtol=1e-4, atol=1e-6), (key, name)
        checked += 1
    assert checked, key


def test_a_steps_send_is_worked_out_as_upstream_times_local_derivative():
    asked = {q.key: q for q in _lesson("seed")[1]}
    assert asked["sends:11:0"].worked == (
        "The step of x·3 sends x its upstream gradient times the local derivative ∂(x·3)/∂x = 3: "
        "[1.0, 1.0] × 3 = [3.0, 3.0]."
    )
    assert "∂(h + x·3)/∂(x·3) = 1: [1.0, 1.0] × 1 = [1.0, 1.0]" in asked["sends:6:1"].worked
    assert asked["sends:2:0"].worked.startswith("The step of loss = sum(h + x·3) sends h + x·3 by its rule")
    for key in LESSONS:
        for q in _lesson(key)[1]:
            if q.kind == "sends":  # the card's product ends in what the step sent
                sent = parse_numbers(q.worked.rsplit(" = ", 1)[1].removesuffix("."), limit=10_000)
                assert sent is not None and np.allclose(sent, np.ravel(q.values), rtol=1e-5, atol=1e-6), q.key


def test_remaining_is_worked_out_as_who_keeps_a_gradient_and_why():
    asked = {q.key: q for q in _lesson("seed")[1]}
    worked = asked["remaining"].worked
    assert worked.startswith("x keeps its gradient: a leaf that asked for one (Grad)")
    assert "h and loss hold none" in worked and "GradInBackward" in worked and "consumed" in worked
    assert "unused asked for one, but no path from the loss reaches it" in worked
    mlp = {q.key: q for q in _lesson("mlp")[1]}["remaining"].worked
    assert "b1, w1 and w2 keep their gradients" in mlp and "batch and target never asked" in mlp


# -- one wording, the question's own names, and the answer in its worked line's shape (issue 54) -------------------


def test_every_leaf_question_has_one_wording_whether_or_not_a_path_reaches_the_leaf():
    for key in LESSONS:
        leaves = [q for q in _lesson(key)[1] if q.kind == "leaf_grad"]
        for q in leaves:  # the prompt never says which answers to expect: "(numbers, or None)" told the unreached
            assert re.fullmatch(r"What is .+'s gradient after the backward\?( \(NodeId\(\d+\)\))?", q.prompt), q.prompt
    seed = {q.key: q for q in _lesson("seed")[1]}
    unreached = next(q for q in seed.values() if q.kind == "leaf_grad" and q.values is None)
    assert unreached.prompt == "What is unused's gradient after the backward?"
    assert seed["grad:0"].prompt == "What is x's gradient after the backward?"


def test_a_which_tensors_answer_is_read_only_among_the_questions_names():
    run, asked = _lesson("seed")
    remaining = asked[-1]
    assert remaining.choices == frozenset(run.names.values())
    assert grade(remaining, "x").right is True and grade(remaining, "x, unused").right is False
    assert grade(remaining, "none").right is False
    for stranger in ("x, <b>banana</b>", "X", "x none", "=cmd|' /C calc'!A0"):
        refused = grade(remaining, stranger)
        assert refused.right is None, stranger  # not an answer: the route stores none of it
        assert refused.words == "Only this question's tensors are read: h, loss, unused, x, or none.", stranger


def test_the_right_answer_is_written_in_the_shape_its_worked_line_ends_with():
    for key in LESSONS:
        for q in _lesson(key)[1]:
            if q.values is None:
                continue
            answer, ends = right_answer(q), re.split(r" = |: ", q.worked)[-1]  # what the worked line ends with
            depth = len(answer) - len(answer.lstrip("["))
            assert depth == q.values.ndim and depth == len(ends) - len(ends.lstrip("[")), (key, q.key, answer, ends)
            assert grade(q, answer, limit=10_000).right is True, (key, q.key)
    neuron = {q.key: q for q in _lesson("neuron")[1]}["sends:2:0"]  # the transfer of the seed's first step
    assert right_answer(neuron) == "[[1.0]]" and neuron.worked.endswith("= [[1.0]].")
