"""Issue 31, findings 5 and 7, through a real server: a forged select-box value reached the page's catch-all as a
`KeyError` quoting it (and the page stayed broken); `clear_cache` from any visitor emptied the cache every session
shares. Strict figures: `python bench/bounds.py`."""

from __future__ import annotations

import pytest

from .harness import cpu_seconds, streamlit_server
from .visitor import clear_cache, element_id, rerun, send

pytestmark = pytest.mark.browser

FORGED = "<b>forged</b>"
CATCH_ALL = b"Something unexpected went wrong"


@pytest.mark.parametrize(
    ("page", "label", "heading"),
    [("traversal", "Program", b"Backward traversal"), ("play", "Examples", b"Playground"),
     ("training", "Data", b"Training")],
)  # fmt: skip
def test_a_forged_choice_reads_as_the_default_with_no_alert_and_no_traceback(tmp_path, page, label, heading):
    log = tmp_path / "server.log"
    with streamlit_server(log, ("--server.enableAgentApi", "true")) as url:
        key = element_id(url, page, label)
        # first the page as a browser opens it (the widget and its callback registered), then the forged value,
        # then an ordinary rerun: the page works all along
        answer = send(url, [rerun(page), rerun(page, {key: FORGED}), rerun(page)])
    assert heading in answer
    assert CATCH_ALL not in answer and b"forged" not in answer
    assert "Traceback" not in log.read_text()


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

        def cpu_of(messages: list) -> float:
            """Server CPU seconds while one WebSocket session sends `messages`."""
            before = cpu_seconds(pid)
            send(url, messages, settle_s=2.5)
            return cpu_seconds(pid) - before

        cold = cpu_of([rerun("policies")])  # the curves computed, once per server
        warm = cpu_of([rerun("policies"), rerun("policies")])
        cleared = cpu_of([rerun("policies"), clear_cache(), rerun("policies")])
    print(f"Memory policies, server CPU: cold {cold:.2f} s, two warm reruns {warm:.2f} s, "
          f"with clear_cache between {cleared:.2f} s")  # fmt: skip
    assert cold > warm / 2 + 0.2  # computing the curves shows in the measure
    assert cleared < warm + 0.2  # the visitor's clear_cache emptied nothing: the second rerun was as cheap
