"""The Training lesson's engine work, run as a course's tests would run it: no Streamlit."""

from __future__ import annotations

import numpy as np
import pytest

import course.training as training_module
from autodiff import Device, Tensor
from course.training import DATASETS, Mlp, Training, forward, make_dataset, replay_iteration

LOSS_GOAL, GOAL_ITERATIONS = 0.1, 150  # two moons, seed 0, learning rate 0.5: docs/lessons.md and the page say so


def numpy_loss(params: dict[str, np.ndarray], points: np.ndarray, labels: np.ndarray) -> float:
    """The lesson's loss written again in float64 numpy: the mean cross-entropy of a ReLU MLP's softmax."""
    hidden = np.maximum(points @ params["w1"] + params["b1"], 0.0)
    logits = hidden @ params["w2"] + params["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


@pytest.mark.parametrize("name", DATASETS)
def test_the_datasets_are_two_balanced_classes_in_2d_and_repeatable(name):
    points, labels = make_dataset(name, 101, seed=3)
    assert points.shape == (101, 2) and points.dtype == np.float32
    assert sorted(set(labels.tolist())) == [0, 1] and abs(int(labels.sum()) - 50) <= 1
    again, _ = make_dataset(name, 101, seed=3)
    np.testing.assert_array_equal(points, again)
    assert not np.array_equal(points, make_dataset(name, 101, seed=4)[0])


def test_a_dataset_or_an_update_that_does_not_exist_is_refused_in_a_sentence():
    with pytest.raises(ValueError, match="choose one of two moons, spirals"):
        make_dataset("circles", 10)
    with pytest.raises(ValueError, match="choose one of inner, detach, autodiff"):
        Training(update="adam")


def test_the_engines_gradients_of_the_training_loss_match_finite_differences():
    points, labels = make_dataset("two moons", 40, seed=1)
    ad = Device.numpy(seed=5).autodiff()
    model = Mlp.init(6, ad)
    targets = np.eye(2, dtype=np.float32)[labels]
    grads = forward(model, Tensor.from_floats(points, ad), Tensor.from_floats(targets, ad))["loss"].backward()
    params = {name: value.astype(np.float64) for name, value in model.values().items()}
    eps = 1e-6
    for name, param in model.parameters().items():
        numeric = np.zeros_like(params[name])
        for index in np.ndindex(numeric.shape):
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            numeric[index] = (numpy_loss(plus, points, labels) - numpy_loss(minus, points, labels)) / (2 * eps)
        grad = param.grad(grads)
        assert grad is not None, name
        np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-3, atol=1e-4, err_msg=name)


def test_the_loss_falls_below_its_goal_and_the_points_are_separated():
    training = Training("two moons", learning_rate=0.5, seed=0)
    for _ in range(GOAL_ITERATIONS):
        training.step()
    losses = [i.loss for i in training.history]
    assert losses[0] > 0.5  # an untrained network guesses
    assert losses[-1] < LOSS_GOAL
    assert training.history[-1].accuracy >= 0.98
    # each iteration's loss is the loss of the parameters it started with, recomputed here independently
    for number in (1, 50, GOAL_ITERATIONS):
        values = {k: v.astype(np.float64) for k, v in training.checkpoints[number - 1].items()}
        assert training.history[number - 1].loss == pytest.approx(
            numpy_loss(values, training.points.astype(np.float64), training.labels), rel=1e-4
        )


def test_each_iteration_builds_a_fresh_graph_and_memory_stays_flat():
    training = Training(seed=0)
    for _ in range(30):
        training.step()
    history = training.history
    parameters_and_data = sum(p.numpy().nbytes for p in training.model.parameters().values()) + (
        training.points.nbytes + training.labels.size * 2 * 4  # the targets, one-hot float32
    )
    assert {i.usage.bytes_in_use for i in history} == {parameters_and_data}
    assert len({i.graph_usage.bytes_in_use for i in history}) == 1  # the same graph each time
    assert history[0].graph_usage.bytes_in_use > parameters_and_data  # its steps saved tensors for backward
    # matmul, add, relu, matmul, add, log_softmax, mul, sum_dim, mean, neg: from the parameters to the loss
    assert {i.tape for i in history} == {10}
    assert {i.abandoned for i in history} == {0}


def test_an_update_detached_on_the_autodiff_device_trains_the_same_and_its_steps_are_swept():
    inner, detached = Training(update="inner"), Training(update="detach")
    for _ in range(20):
        inner.step(), detached.step()
    assert [i.loss for i in detached.history] == pytest.approx([i.loss for i in inner.history], rel=1e-6)
    # four parameters, each a scaled gradient and a subtraction left behind, swept by the next backward
    assert [i.abandoned for i in detached.history[:3]] == [0, 8, 8]
    assert {i.usage.bytes_in_use for i in detached.history} == {inner.history[0].usage.bytes_in_use}


def test_an_update_on_the_autodiff_device_reaches_into_the_next_graph_and_leaves_no_gradient():
    training = Training(update="autodiff")
    assert training.step() is not None
    second = training.step()
    assert second is not None and second.tape == training.history[0].tape + 4  # through each parameter's update
    assert training.stopped is not None
    assert training.stopped.startswith("Iteration 3 cannot run: w1 has no gradient after iteration 2's backward.")
    assert "without_autodiff()" in training.stopped
    assert training.step() is None and training.iterations == 2


def test_training_stops_at_its_bound_with_a_sentence(monkeypatch):
    monkeypatch.setattr(training_module, "MAX_ITERATIONS", 3)
    training = Training()
    while training.step() is not None:
        pass
    assert training.iterations == 3
    assert training.stopped == "Training stopped after 3 iterations: start over to train again."


def test_any_iteration_replays_with_its_loss_its_names_and_the_lines_that_made_its_nodes():
    training = Training(seed=0)
    for _ in range(12):
        training.step()
    replay = replay_iteration(training, 7)
    assert replay.loss == pytest.approx(training.history[6].loss, rel=1e-6)
    assert {"w1", "b1", "w2", "b2", "hidden", "logits", "loss"} <= set(replay.names.values())
    source_lines = replay.source.splitlines()
    by_name = {name: node for node, name in replay.names.items()}
    first, last = replay.lines[by_name["logits"]]
    assert source_lines[first - 1].strip() == "logits = hidden @ model.w2 + model.b2" and first == last
    with pytest.raises(ValueError, match="There is no iteration 13"):
        replay_iteration(training, 13)


def test_the_boundary_covers_the_data_and_is_the_models_probability():
    training = Training(seed=0)
    for _ in range(100):
        training.step()
    probability, xs, ys = training.boundary(cells=20)
    assert probability.shape == (20, 20) and ((probability >= 0) & (probability <= 1)).all()
    assert xs[0] < training.points[:, 0].min() and xs[-1] > training.points[:, 0].max()
    assert ys[0] < training.points[:, 1].min() and ys[-1] > training.points[:, 1].max()
    predicted = training.predict(training.points).argmax(axis=1)
    assert (predicted == training.labels).mean() == pytest.approx(training.history[-1].accuracy, abs=0.02)


def numpy_gradients(params: dict[str, np.ndarray], points: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """∂loss/∂w of the lesson's loss, derived by hand and computed in float64 numpy (no autodiff)."""
    pre = points @ params["w1"] + params["b1"]
    hidden = np.maximum(pre, 0.0)
    logits = hidden @ params["w2"] + params["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    d_logits = (probs - np.eye(2)[labels]) / len(labels)
    d_hidden = d_logits @ params["w2"].T * (pre > 0)
    return {
        "w1": points.T @ d_hidden,
        "b1": d_hidden.sum(axis=0, keepdims=True),
        "w2": hidden.T @ d_logits,
        "b2": d_logits.sum(axis=0, keepdims=True),
    }


def test_500_iterations_match_float64_numpy_gradient_for_gradient_and_update_for_update():
    # each iteration: the engine's loss and gradients against numpy's from the same parameters, and the next
    # parameters exactly its update, w - 0.5 * grad, in the engine's float32
    training = Training("spirals", learning_rate=0.5, seed=3)
    points = training.points.astype(np.float64)
    for _ in range(500):
        iteration = training.step()
        assert iteration is not None
        frame = training.frames[-1]
        start = {k: v.astype(np.float64) for k, v in frame.parameters.items()}
        assert iteration.loss == pytest.approx(numpy_loss(start, points, training.labels), rel=1e-5)
        expected = numpy_gradients(start, points, training.labels)
        for name, grad in frame.gradients.items():
            np.testing.assert_allclose(grad, expected[name], rtol=1e-5, atol=1e-7, err_msg=f"{name}, {iteration}")
            updated = (frame.parameters[name] - np.float32(0.5) * grad.astype(np.float32)).astype(np.float32)
            np.testing.assert_array_equal(frame.updated[name], updated, err_msg=name)
    assert training.history[-1].loss < training.history[0].loss / 2


def test_each_frame_is_the_graph_the_loss_was_computed_from_with_its_values_and_gradients():
    training = Training(seed=0)
    training.step()
    frame = training.frames[-1]
    by_name = {n.name: n for n in frame.nodes if n.name}
    assert set(by_name) == {"points", "targets", "w1", "b1", "w2", "b2", "hidden", "logits", "loss"}
    ops = [n.op for n in frame.nodes if n.kind == "op"]
    assert ops == ["matmul", "add", "relu", "matmul", "add", "neg"]  # the loss function's five ops fold into the loss
    assert by_name["loss"].ops == ("log_softmax(dim=1)", "mul", "sum_dim(1)", "mean", "neg")
    assert sum(len(n.ops) for n in frame.nodes) == training.history[0].tape  # every operation on the tape, once
    assert [frame.nodes[k].name for k in by_name["loss"].inputs] == ["logits", "targets"]
    # per-sample values are cut to evenly spaced samples; the rows are the training points themselves
    np.testing.assert_array_equal(by_name["points"].value, training.points[list(frame.rows)])
    hidden = np.maximum(training.points @ frame.parameters["w1"] + frame.parameters["b1"], 0)[list(frame.rows)]
    np.testing.assert_allclose(by_name["hidden"].value, hidden, rtol=1e-5, atol=1e-6)
    assert by_name["loss"].grad == pytest.approx([1.0]) and by_name["points"].grad is None


def test_rewinding_forgets_later_iterations_and_trains_again_the_same_way():
    training, reference = Training(seed=1), Training(seed=1)
    for _ in range(12):
        training.step()
    training.rewind(5)
    assert training.iterations == 5 and [f.number for f in training.frames][-1] == 5
    for _ in range(7):
        training.step()
        reference.step()
    for _ in range(5):
        reference.step()
    assert [i.loss for i in training.history] == [i.loss for i in reference.history]
    with pytest.raises(ValueError, match="no iteration 13"):
        training.rewind(13)


def test_training_continues_on_new_points_and_a_replay_uses_the_points_its_iteration_had():
    training = Training(seed=0)
    training.step()
    points, labels = make_dataset("spirals", 40, seed=2)
    training.use_points(points, labels)
    training.step()
    assert [i.samples for i in training.history] == [200, 40]
    values = {k: v.astype(np.float64) for k, v in training.checkpoints[1].items()}
    assert training.history[1].loss == pytest.approx(numpy_loss(values, points.astype(np.float64), labels), rel=1e-5)
    assert replay_iteration(training, 1).loss == pytest.approx(training.history[0].loss, rel=1e-6)
    with pytest.raises(ValueError, match="at most 500"):
        training.use_points(np.zeros((501, 2)), np.zeros(501, dtype=int))
