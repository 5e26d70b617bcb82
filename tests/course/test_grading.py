"""Class mode's grading (course/grading.py): the right answers agree with finite differences of independent numpy
losses, and each mistake the graph explains is recognized from a wrong answer worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff import BackwardRecorder, Device, Tensor
from course.grading import MISTAKES, Question, grade, questions
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
