"""The tables the lessons share: a long tape is summarised, not listed order by order."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def draw_tape(length: int) -> None:
    from autodiff import BackwardRecorder, Device, Tensor
    from autodiff.stage.naming import node_names
    from autodiff.trace import TapeBuilt
    from ui.tables import tape_table

    ad = Device.numpy().autodiff()
    x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
    y = x
    for _ in range(length):
        y = y * 1.0
    loss = y.sum()
    before, recorder = ad.snapshot(), BackwardRecorder()
    loss.backward(recorder=recorder)
    tape = next(e for e in recorder.events if isinstance(e, TapeBuilt))
    tape_table(tape.buckets, before, node_names({"x": x, "loss": loss}))


def tape_rows(length: int):
    at = AppTest.from_function(draw_tape, args=(length,), default_timeout=60).run()
    assert not at.exception, at.exception
    return at.table[0].value


def test_a_short_tape_lists_every_order():
    frame = tape_rows(3)
    assert frame["Order"].tolist() == ["4", "3", "2", "1", "0"]  # sum, three muls, x


def test_a_long_tape_is_summarised():
    frame = tape_rows(300)
    assert len(frame) == 11  # five buckets, one summary row, five buckets
    assert frame["Order"].tolist()[:6] == ["301", "300", "299", "298", "297", "296 down to 5"]
    assert frame["Steps (in tape order)"].tolist()[5] == "292 buckets, 292 steps"
    assert frame["Order"].tolist()[-1] == "0"
