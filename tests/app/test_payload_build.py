"""A replay's payload works out each node's names and each value's numbers once per build (issue 55): what it says is
what each part of the stage says when it works everything out on its own, from scratch."""

import gc

import numpy as np

from autodiff.stage import replay_payload
from autodiff.stage.chain_rule import gradient_sums, step_cards
from autodiff.stage.events import stage_event
from autodiff.stage.format import ArrayTexts
from autodiff.stage.groups import group_runs
from autodiff.stage.naming import labels
from autodiff.stage.narration import short_names
from playground.examples import EXAMPLES
from playground.sandbox import run_program

# the Playground's loop, small: named and unnamed nodes, folded iterations, and the same gradient sent many times
SOURCE = EXAMPLES["Per-sample loop (30 samples)"].replace("range(30)", "range(6)")


def test_the_payload_says_what_each_part_works_out_alone():
    result = run_program(SOURCE)
    assert result.error is None, result.error
    run = result.backward
    payload = replay_payload(run.before, run.recorder, run.names, source=SOURCE, lines=result.lines)
    called, titles = short_names(run.before.nodes, run.names), labels(run.before.nodes, run.names)
    assert payload["groups"], "the loop folds: its runs are checked too"
    for node in payload["nodes"]:
        assert (node["name"], node["title"]) == (called[node["id"]], titles[node["id"]])
    edges = [event.get("edge") for event in payload["events"]]
    alone = [stage_event(e, called, edge) for e, edge in zip(run.recorder.events, edges, strict=True)]
    assert payload["events"] == alone
    assert payload["cards"] == {str(k): card for k, card in step_cards(run.before, run.recorder, run.names).items()}
    assert payload["sums"] == {str(k): s for k, s in gradient_sums(run.before, run.recorder, run.names).items()}
    groups = [{**group, "runs": []} for group in payload["groups"]]
    group_runs(groups, {node["id"]: node["group"] for node in payload["nodes"]}, run.recorder, called)
    assert [group["runs"] for group in groups] == [group["runs"] for group in payload["groups"]]


def test_arrays_are_told_apart_by_their_shape_and_type_not_only_their_bytes():
    exact = ArrayTexts()
    row, column = np.zeros((1, 2), np.float32), np.zeros((2, 1), np.float32)
    assert [exact(row), exact(column), exact(np.zeros(2))] == ["[[0.0, 0.0]]", "[[0.0], [0.0]]", "[0.0, 0.0]"]
    assert exact(np.array([0.5, 1.0], np.float32)) == exact(np.array([0.5, 1.0], np.float32)) == "[0.5, 1.0]"


def test_the_build_leaves_the_garbage_collector_as_it_found_it():
    result = run_program(SOURCE)
    run = result.backward
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            replay_payload(run.before, run.recorder, run.names)
            assert gc.isenabled() is enabled
    finally:
        gc.enable()
