"""Which statement made each node, watched while a lesson's program runs: the stage lights that line, and a loop's
variable names each pass's result."""

from __future__ import annotations

import pytest

from autodiff.stage.source_lines import node_lines
from course.programs import PROGRAMS, record_program


def line_of(run, node_id: int) -> str:
    first, _ = run.lines[node_id]
    return run.program.source.splitlines()[first - 1].strip()


def test_each_node_of_the_seed_comes_from_its_statement():
    run = record_program("seed")
    ids = {name: int(t.node_id) for name, t in run.tensors.items()}
    assert line_of(run, ids["x"]).startswith("x = Tensor.from_floats")
    assert line_of(run, ids["h"]).startswith("h = x * x")
    unnamed = [int(n.id) for n in run.before.nodes if int(n.id) not in run.names]  # x·3 and h + x·3
    assert len(unnamed) == 2 and all(line_of(run, i).startswith("loss = (h + x * 3.0)") for i in unnamed)


def test_a_helper_functions_statements_are_found_in_the_shown_source():
    run = record_program("shared")  # shared_losses is shown before the program that calls it
    ids = {name: int(t.node_id) for name, t in run.tensors.items()}
    assert line_of(run, ids["shared"]) == "shared = x.exp()"
    assert line_of(run, ids["l2"]) == "l2 = (shared * 3.0).sum()"
    assert line_of(run, ids["loss"]).startswith('loss = losses["l1"] + losses["l2"]')


def test_a_loop_names_each_pass_by_its_variable():
    run = record_program("chain", checkpointing="balanced")
    named_y = [i for i, name in run.names.items() if name == "y"]
    assert len(named_y) == 5  # y = x @ w, then four passes of the loop
    assert all(line_of(run, i).startswith("y = ") for i in named_y)
    assert (
        run.before.memory.bytes_in_use == record_program("chain", checkpointing="balanced").before.memory.bytes_in_use
    )


# mlp3's layers return unnamed expressions from functions: watching finds their lines inside the layers, where
# reading the text can only point at the call (tests/course/test_program_structure.py checks its lines)
@pytest.mark.parametrize("key", sorted(k for k in PROGRAMS if k != "mlp3"))
def test_watching_agrees_with_reading_the_text_where_the_text_is_plain(key):
    run = record_program(key)  # no loops here: the lines read from the text are the same
    assert run.lines == node_lines(run.program.source, run.before.nodes, run.names)
