"""The program's parts on the stage (autodiff/stage/groups.py): a big graph folds into its loops, iterations, calls and
statements; repeated blocks fold into one box with a count; no unfolded group lists more than a dozen boxes; a folded
group's runs add up what came in and went out, and those sums are the engine's own gradients."""

import dataclasses
import re

import numpy as np
import pytest

from autodiff import Device, Distribution, Requirement, Tensor, scope
from autodiff.stage import replay_payload, static_payload
from autodiff.stage.groups import MAX_CHILDREN, group_tree
from autodiff.structure import GroupFrame
from autodiff.trace import GradientRegistered
from course.programs import PROGRAMS, record_program
from playground import Limits
from playground.examples import EXAMPLES
from playground.sandbox import run_program

LOOP = EXAMPLES["Per-sample loop (30 samples)"].replace("range(30)", "range(SAMPLES)")  # the Playground's own


def loop_payload(samples: int):
    source = LOOP.replace("SAMPLES", str(samples))
    result = run_program(source, Limits(seconds=60))  # what is tested is the folding, not a busy machine's clock
    assert result.error is None, result.error
    run = result.backward
    return run, replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)


def children(payload) -> dict[str, int]:
    """Each container ("" the top) -> how many boxes it shows when unfolded."""
    count = {"": 0, **{g["element"]: 0 for g in payload["groups"]}}
    for node in payload["nodes"]:
        count[node["group"]] += 1
    for group in payload["groups"]:
        count[group["parent"]] += 1
    return count


def numbers(text: str) -> np.ndarray:
    return np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)])


def test_the_seed_and_the_lessons_small_graphs_keep_their_picture():
    for key in ("seed", "shared", "neuron"):
        run = record_program(key)
        payload = replay_payload(run.before, run.recorder, run.names)
        assert payload["groups"] == [] and all(node["group"] == "" for node in payload["nodes"])


@pytest.mark.parametrize("samples", [30, 600])
def test_a_per_sample_loop_folds_into_the_loop_and_its_iterations(samples):
    run, payload = loop_payload(samples)
    groups = {g["element"]: g for g in payload["groups"]}
    top = [g for g in payload["groups"] if g["parent"] == ""]
    loop = next(g for g in top if g["kind"] == "loop")
    assert loop["name"] == f"for i in range({samples})"
    assert loop["summary"] == f"{samples} iterations, the same 7 ops each"
    assert loop["nodes"] == 8 * samples  # each iteration's x and its 7 ops
    assert children(payload)[""] <= 6  # w1, w2, x, the first term's statement, the loop
    assert max(children(payload).values()) <= MAX_CHILDREN  # every unfolded group is short enough to read
    iterations = [g for g in payload["groups"] if g["kind"] == "iteration"]
    assert [g["name"] for g in iterations] == [f"i = {i}" for i in range(samples)]
    for g in iterations:  # each inside the loop, through ranges of at most a dozen
        element = g["parent"]
        while element != loop["element"]:
            assert groups[element]["kind"] == "range"
            element = groups[element]["parent"]
    by_id = {node["id"]: node for node in payload["nodes"]}
    assert by_id[int(run.names and next(k for k, v in run.names.items() if v == "w1"))]["group"] == ""


def test_a_folded_groups_runs_add_up_to_the_engines_gradients():
    run, payload = loop_payload(30)
    w1 = next(k for k, v in run.names.items() if v == "w1")
    loop = next(g for g in payload["groups"] if g["kind"] == "loop")
    first = next(g for g in payload["groups"] if g["kind"] == "line")
    assert first["lines"] == (4, 4) and first["name"].startswith("line 4: loss = ")
    sent_to_w1 = [numbers(f["value"]) for g in (loop, first) for r in g["runs"] for f in r["sent"] if f["node"] == w1]
    # the gradient the engine kept for w1, from the trace: every part of it left one of the two groups
    total = next(
        e.total
        for e in reversed(run.recorder.events)
        if type(e).__name__ == "GradientRegistered" and int(e.node_id) == w1
    )
    assert np.allclose(sum(sent_to_w1), np.ravel(total), rtol=1e-6, atol=1e-6)
    # and what came into the loop is the seed: backward() starts from ones at the last loss
    came = [f for r in loop["runs"] for f in r["came_in"]]
    assert [numbers(f["value"]).tolist() for f in came] == [[1.0]]


def test_the_loop_sends_w1_what_a_fresh_run_of_its_iterations_gives():
    """Independently of the trace: the loop's part of w1's gradient is the gradient of the loop's terms alone."""
    run, payload = loop_payload(6)
    w1_id = next(k for k, v in run.names.items() if v == "w1")
    loop = next(g for g in payload["groups"] if g["kind"] == "loop")
    sent = sum(numbers(f["value"]) for r in loop["runs"] for f in r["sent"] if f["node"] == w1_id)
    values = {int(n.id): n.value for n in run.before.nodes}
    w1 = np.asarray(values[w1_id], dtype=np.float64)
    w2 = np.asarray(values[next(k for k, v in run.names.items() if v == "w2")], dtype=np.float64)
    grad = np.zeros_like(w1)
    for i in range(6):  # d/dw1 of (tanh(x w1) w2 - 1)^2, by hand in float64
        x = np.array([[0.5 * i, 1.0 - i]])
        h = np.tanh(x @ w1)
        r = h @ w2 - 1.0
        grad += x.T @ ((2 * r @ w2.T) * (1 - h**2))
    assert np.allclose(sent, grad.ravel(), rtol=1e-5, atol=1e-6)


def test_functions_scopes_and_repeats_fold_as_written():
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats([[1.0, 2.0]], ad).require_grad()

    def layer(h, w):
        return h.matmul(w).tanh()

    weights = [Tensor.random([2, 2], Distribution.Default, ad).require_grad() for _ in range(4)]
    h = x
    for w in weights:
        h = layer(h, w)
    with scope("the loss"):
        (h * h).sum() + x.sum()  # x is used twice: it stays where it was made
    groups, _ = group_tree(ad.snapshot().nodes)
    names = [(g["kind"], g["name"]) for g in groups]
    assert ("scope", "the loss") in names
    loop = next(g for g in groups if g["kind"] == "loop")
    assert loop["summary"] == "4 calls of layer, the same 2 ops each"  # an iteration of one call is that call


def test_repeats_inside_a_group_fold_into_one_box_with_a_count():
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats([1.0], ad).require_grad()
    y = x
    for _ in range(5):
        y = y.sin()
    nodes = ad.snapshot().nodes
    block = [GroupFrame("scope", "block", "b")]
    paths = [()] + [(*block, GroupFrame("function", "f", f"call {k}")) for k in range(5)]
    nodes = tuple(dataclasses.replace(n, group=tuple(p)) for n, p in zip(nodes, paths, strict=True))
    # five one-node calls dissolve into their nodes; five two-node calls would fold into one "repeat" box
    groups, node_group = group_tree(nodes)
    assert [g["kind"] for g in groups] == ["scope"] and all(node_group[int(n.id)] for n in nodes[1:])


def test_a_static_graph_folds_too():
    ad = Device.numpy().autodiff(keep_values=True)
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    for _ in range(40):
        x = (x * 1.0).sin()
    payload = static_payload(ad.snapshot(), {})
    assert payload["groups"] and max(children(payload).values()) <= MAX_CHILDREN


def playground_payload(source: str):
    result = run_program(source, Limits(seconds=60))
    assert result.error is None, result.error
    run = result.backward
    return run, replay_payload(run.before, run.recorder, run.names, source=source, lines=result.lines)


def lesson_payload(key: str):
    run = record_program(key)
    return run, replay_payload(run.before, run.recorder, run.names, source=PROGRAMS[key].source, lines=run.lines)


def parameters(run) -> dict[int, str]:
    """The leaves that asked for their gradients (the weights a student asks about), by NodeId."""
    return {int(n.id): run.names[int(n.id)] for n in run.before.nodes if n.requirement is Requirement.Grad}


def kept_gradient(run, node_id: int) -> np.ndarray:
    return np.ravel(
        next(
            e.total
            for e in reversed(run.recorder.events)
            if isinstance(e, GradientRegistered) and int(e.node_id) == node_id
        )
    )


@pytest.mark.parametrize(
    "program", ["mlp3", "Three-layer MLP, one function per layer", "CS231n's neuron, with w[0]", "neuron"]
)
def test_a_folded_part_leaves_the_weights_it_uses_drawn_beside_it(program):
    """Folded, a layer (or CS231n's neuron's one statement) is one box: its weights are drawn beside it, at the top,
    never hidden in it, and what it sends each of them adds up to the gradient the engine keeps."""
    run, payload = lesson_payload(program) if program in PROGRAMS else playground_payload(EXAMPLES[program])
    weights = parameters(run)
    assert len(weights) >= 2, weights
    by_id = {node["id"]: node for node in payload["nodes"]}
    assert {name: by_id[node_id]["group"] for node_id, name in weights.items()} == {
        name: "" for name in weights.values()
    }
    top = [g for g in payload["groups"] if g["parent"] == ""]
    for node_id in weights:
        if any(g["nodes"] for g in top):  # the program folds: the parts' runs send each weight its whole gradient
            sent = [numbers(f["value"]) for g in top for r in g["runs"] for f in r["sent"] if f["node"] == node_id]
            assert sent and np.allclose(sum(sent), kept_gradient(run, node_id), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("program", ["mlp3", "Three-layer MLP, one function per layer"])
def test_every_press_on_a_folded_layer_says_what_it_sends(program):
    """A folded part's card reads "It sends nothing out of itself" only when it sends nothing: each run of mlp3's
    layers sends its weights their gradients (the leaves' own steps, which only keep them, run outside the layers)."""
    run, payload = lesson_payload(program) if program in PROGRAMS else playground_payload(EXAMPLES[program])
    runs = [(g["name"], r) for g in payload["groups"] for r in g["runs"]]
    assert runs and all(r["sent"] for _, r in runs), [name for name, r in runs if not r["sent"]]
    weights = parameters(run)
    for name, r in runs:
        if name.startswith("layer"):
            assert {weights.get(f["node"]) for f in r["sent"]} >= {f"w{name[-1]}", f"b{name[-1]}"}, (name, r["sent"])


# the Playground's gradient descent, a fresh leaf each step through `from_inner`, with a forward long enough to fold
TRAINING = (
    EXAMPLES["Gradient descent"]
    .replace("range(20)", "range(5)")
    .replace("loss = ((w - 3.0) ** 2).sum()", "loss = ((w - 3.0) ** 2).sum() + (w * w).exp().sum()")
)


def test_a_training_loops_iterations_are_parts_of_their_own_not_a_chain():
    """Each iteration's fresh `w` (made at the end of the one before, through `from_inner`) is drawn in the iteration
    that uses it: no edge runs from one iteration into the next, and the last one replays whole, sending its `w` the
    gradient the engine keeps."""
    run, payload = playground_payload(TRAINING)
    group_of = {node["id"]: node["group"] for node in payload["nodes"]}
    iterations = {g["element"]: g for g in payload["groups"] if g["kind"] == "iteration"}
    assert [g["name"] for g in iterations.values()] == ["step = 3", "step = 4"]  # the graph holds the last two
    for edge in payload["edges"]:
        tail, head = group_of[edge["source"]], group_of[edge["target"]]
        assert tail == head or not {tail, head} <= set(iterations), edge  # never from one iteration into another
    leaves = [n for n in run.before.nodes if n.op == "from_inner"]
    assert leaves and all(group_of[int(n.id)] in iterations for n in leaves)
    last = next(g for g in iterations.values() if g["name"] == "step = 4")
    assert [r["steps"] for r in last["runs"]] == [last["steps"] + 1]  # its ops and its w's own step, one press
    w = int(leaves[-1].id)
    (sent,) = [f for f in last["runs"][0]["sent"] if f["node"] == w]
    assert np.allclose(numbers(sent["value"]), kept_gradient(run, w), rtol=1e-6)


@pytest.mark.parametrize(
    "example", ["micrograd's README example", "micrograd's MLP, with classes", "CS231n's neuron, with w[0]"]
)
def test_every_name_a_folded_picture_draws_is_the_programs_never_an_id(example):
    """Boxes, parts, and what a part's card says came in and went out: a variable, or an expression as written."""
    _, payload = playground_payload(EXAMPLES[example])
    drawn = [n["title"] for n in payload["nodes"]] + [g["name"] for g in payload["groups"]]
    drawn += [f["name"] for g in payload["groups"] for r in g["runs"] for f in r["came_in"] + r["sent"]]
    assert payload["groups"] and not [text for text in drawn if re.search(r"#\d|NodeId", text)], drawn
