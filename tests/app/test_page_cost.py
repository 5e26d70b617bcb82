"""What a page open costs the server: lesson results computed once per server, the heap frozen after imports."""

from __future__ import annotations

import gc

import streamlit as st
from apptest import app, table

import course.labs
from course.labs import checkpointing_lesson
from ui.state import shared_result


def test_a_lesson_result_is_computed_once_and_every_session_reads_the_same_object(monkeypatch):
    """A copy per session (Streamlit's cache_data) cost 16.3 MB per Checkpointing visitor (issue 31, finding 1)."""
    st.cache_resource.clear()
    computed: list[str] = []
    original = course.labs.CheckpointingComparison.__post_init__

    def counting(self: course.labs.CheckpointingComparison) -> None:
        computed.append(self.key)
        original(self)

    monkeypatch.setattr(course.labs.CheckpointingComparison, "__post_init__", counting)
    first, second = app("pages/memory/checkpointing.py"), app("pages/memory/checkpointing.py")
    assert computed == ["chain"]  # the second student's open computed nothing
    assert table(first, "Strategy").equals(table(second, "Strategy"))
    shared = shared_result(checkpointing_lesson, "chain", "numpy")
    assert computed == ["chain"] and shared is shared_result(checkpointing_lesson, "chain", "numpy")  # one object
    first.run()
    assert computed == ["chain"]  # a rerun reads it again
    assert shared.summary == checkpointing_lesson("chain").summary  # and it is what a live computation gives
    first.selectbox(key="checkpointing_program").set_value("mlp").run()
    assert computed == ["chain", "chain", "mlp"]  # "chain" once more for the live comparison above, then mlp


def test_the_heap_is_frozen_once_the_pages_modules_are_loaded():
    app()
    assert gc.get_freeze_count() > 50_000  # the libraries' objects: Streamlit's collection after a run skips them
