"""The Training lesson's words: what the newest iteration did, in a sentence, under the live stage
(ui/training_stage.py draws the pictures)."""

from __future__ import annotations

from autodiff.stage.format import format_bytes
from course.training import Training


def iteration_sentence(training: Training) -> str:
    """What the newest iteration did, in a sentence, from what was measured."""
    if not training.history:
        return "No iteration yet: press **One iteration** or **Play**."
    first, last = training.history[0], training.history[-1]
    reach = (
        f" That is {last.tape - first.tape} more than iteration 1: the graph reaches back through the previous "
        "update, made on the autodiff device."
        if last.tape > first.tape
        else ""
    )
    swept = (
        f" {last.abandoned} steps the previous update left on the autodiff device were abandoned: this backward's "
        "sweep freed them."
        if last.abandoned
        else ""
    )
    flat = len({i.usage.bytes_in_use for i in training.history}) == 1
    after = (
        "the same after every iteration so far"
        if flat
        else f"it was {format_bytes(first.usage.bytes_in_use)} after iteration 1"
    )
    return (
        f"Iteration {last.number}: the forward built a fresh graph of {last.tape} operations "
        f"({format_bytes(last.graph_usage.bytes_in_use)} in use before backward, with what its steps saved).{reach} "
        f"Backward consumed it; after the update {format_bytes(last.usage.bytes_in_use)} is in use "
        f"(the parameters and the data): {after}.{swept}"
    )
