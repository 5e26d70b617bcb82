"""Issue 31, findings 5 and 7, through a real server: a forged select-box value reached the page's catch-all as a
`KeyError` quoting it (and the page stayed broken); `clear_cache` from any visitor emptied the cache every session
shares. Strict figures: `python bench/bounds.py`."""

from __future__ import annotations

import pytest

from .harness import streamlit_server
from .probes import CATCH_ALL, clear_cache_cost, forged_choice
from .visitor import rerun, send

pytestmark = pytest.mark.browser

FORGED = "<b>forged</b>"


@pytest.mark.parametrize(
    ("page", "label", "heading"),
    [
        ("traversal", "Program", b"Backward traversal"),
        ("play", "Examples", b"Playground"),
        ("training", "Load the points", b"Training"),
    ],
)
def test_a_forged_choice_reads_as_the_default_with_no_alert_and_no_traceback(tmp_path, page, label, heading):
    log = tmp_path / "server.log"
    with streamlit_server(log) as url:
        # first the page as a browser opens it (the widget and its callback registered), then the forged value,
        # then an ordinary rerun: the page works all along
        f = forged_choice(url, log, page, label, heading, FORGED)
    assert f.page_answered and not f.alert and not f.value_echoed and f.tracebacks == 0


def test_a_widget_state_under_an_id_streamlit_never_makes_is_dropped(tmp_path):
    """A script can name a widget by its key instead of its id: Streamlit took it for a widget and failed in the
    sidebar's first widget, with a traceback in the log on every such message."""
    log = tmp_path / "server.log"
    with streamlit_server(log) as url:
        answer = send(url, [rerun("play"), rerun("play", {"playground_example": "Neuron"}), rerun("play")])
    assert b"Playground" in answer and CATCH_ALL not in answer
    assert "Traceback" not in log.read_text()


def test_clear_cache_from_a_visitor_recomputes_nothing(tmp_path):
    with streamlit_server(tmp_path / "server.log", with_pid=True) as (url, pid):
        f = clear_cache_cost(url, pid)
    print(f)
    assert f.cold_s > f.warm_s + 0.2  # computing the curves shows: a rerun that computes, against a cached one
    assert f.cleared_s < f.warm_s + 0.2  # the visitor's clear_cache emptied nothing: its rerun was as cheap
