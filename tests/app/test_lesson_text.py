"""Sentences instead of raw values: what the lesson pages write outside code, after their buttons are pressed."""

from __future__ import annotations

import re

import pytest
from apptest import app, button, memory_run
from streamlit.testing.v1 import AppTest

RAW = {
    "an assignment written out": re.compile(r"\w ?= | =\w"),  # "x.grad = Some", "in_use= 0.0"
    "zero bytes": re.compile(r"(?<![\d.])0 B\b"),
    "a raw field": re.compile(r"\bin_use\b|\ballocs\b"),
    "a float64 repr of a float32": re.compile(r"\d\.\d{9,}"),
}
CODE = re.compile(r"`[^`]*`")


def prose(at: AppTest) -> list[str]:
    """Markdown, captions, alerts, metrics and table cells, with inline code taken out."""
    texts = [e.value for kind in ("markdown", "caption", "success", "error", "info", "warning") for e in at.get(kind)]
    texts += [m.value for m in at.metric]
    texts += [str(cell) for frame in at.table for cell in frame.value.to_numpy().ravel()]
    return [CODE.sub("", text) for text in texts]


def raw(at: AppTest) -> list[tuple[str, str]]:
    return [(why, text) for text in prose(at) for why, pattern in RAW.items() if pattern.search(text)]


def test_tape_consumption_reads_as_sentences():
    at = app("pages/backward/tape_consumption.py")
    for label in (
        "loss.backward()",
        "loss.backward()",
        "l1.backward()",
        "l2.backward()",
        "(l1 + l2).backward()",
        "(shared.detach() * x).sum().backward()",
    ):
        button(at, label).click().run()
        assert raw(at) == [], label


def test_gradient_consumption_reads_as_sentences():
    at = app("pages/backward/gradient_consumption.py")
    for name in ("x", "h", "unused"):
        at.radio(key="consumption_tensor").set_value(name).run()
        for label in ("grad()", "grad_replace()", "grad_remove()"):
            button(at, label).click().run()
            assert raw(at) == [], (name, label)


@pytest.mark.parametrize("page", ["pages/memory/memory_policies.py", "pages/memory/checkpointing.py"])
def test_memory_pages_read_as_sentences(page):
    assert raw(app(page)) == []


def test_memory_growth_reads_as_sentences():
    at = memory_run(ticks=8)
    button(at, "Run the abandoned-graphs experiment").click().run()
    assert raw(at) == []
