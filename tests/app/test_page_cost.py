"""What a page open costs the server: lesson results computed once per server, the heap frozen after imports."""

from __future__ import annotations

import gc

import streamlit as st
from apptest import app, table

import course.labs
from course.labs import checkpointing_lesson


def shared_key(*args: object) -> str:
    return f"_shared_course.labs.checkpointing_lesson{args!r}"


def test_a_lesson_result_is_computed_once_for_every_session_and_each_gets_its_own_copy(monkeypatch):
    st.cache_data.clear()
    computed: list[str] = []
    original = course.labs.CheckpointingComparison.__post_init__

    def counting(self: course.labs.CheckpointingComparison) -> None:
        computed.append(self.key)
        original(self)

    monkeypatch.setattr(course.labs.CheckpointingComparison, "__post_init__", counting)
    first, second = app("pages/memory/checkpointing.py"), app("pages/memory/checkpointing.py")
    assert computed == ["chain"]  # the second student's open computed nothing
    assert table(first, "Strategy").equals(table(second, "Strategy"))
    mine, theirs = first.session_state[shared_key("chain", "numpy")], second.session_state[shared_key("chain", "numpy")]
    assert mine is not theirs and mine.recorder is not theirs.recorder  # no object shared between sessions
    assert mine.summary == theirs.summary == checkpointing_lesson("chain").summary  # and the same as computed live
    first.run()
    assert first.session_state[shared_key("chain", "numpy")] is mine  # a rerun keeps the session's copy
    first.selectbox(key="checkpointing_program").set_value("mlp").run()
    assert computed == ["chain", "chain", "mlp"]  # "chain" once more for the live comparison above, then mlp


def test_the_heap_is_frozen_once_the_pages_modules_are_loaded():
    app()
    assert gc.get_freeze_count() > 50_000  # the libraries' objects: Streamlit's collection after a run skips them
