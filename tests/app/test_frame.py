"""The app's frame through AppTest: every page runs, presenter mode, the MLX backend, sessions apart."""

from __future__ import annotations

import threading

import pytest
from apptest import PAGES, app, button, stage_data, table

from autodiff import Device
from course.labs import TapeLab


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("presenter", [False, True])
def test_every_page_runs_without_exception(page, presenter):
    at = app()
    at.toggle(key="presenter").set_value(presenter).run()
    at.query_params.clear()
    at.switch_page(page).run()
    assert not at.exception
    assert not at.error
    assert at.title[0].value


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_on_the_mlx_backend(page):
    at = app()
    if at.selectbox(key="backend").disabled:
        pytest.skip("MLX is not available here")
    at.selectbox(key="backend").set_value("mlx").run()
    at.query_params.clear()
    at.switch_page(page).run()
    assert not at.exception and not at.error
    if page.endswith("backward_traversal.py"):
        assert at.session_state["traversal_run"].backend == "mlx"
    if page.endswith("tape_consumption.py"):
        assert at.session_state["tape_lab"].ad.backend.name == "mlx"


def test_presenter_mode_enlarges_graphs_and_hides_extra_controls():
    at = app()
    at.toggle(key="presenter").set_value(True).run()
    at.query_params.clear()
    at.switch_page("pages/backward/backward_traversal.py").run()
    assert stage_data(at)["presenter"] and stage_data(at)["fonts"][0] == 24
    assert not at.get("download_button")  # fewer controls on a projector
    assert any(e.label == "What this lesson shows" for e in at.expander)  # the stage comes first
    at.toggle(key="presenter").set_value(False).run()
    # the replay (HTML) and the event trace (JSON); the graph's DOT is the stage's own button, beside SVG and PNG
    assert not stage_data(at)["presenter"] and len(at.get("download_button")) == 2


def test_two_sessions_do_not_share_state():
    a, b = app("pages/backward/gradient_consumption.py"), app("pages/backward/gradient_consumption.py")
    lab_a, lab_b = a.session_state["consumption_lab"], b.session_state["consumption_lab"]
    assert lab_a is not lab_b and lab_a.ad is not lab_b.ad
    a.text_input[0].set_value("9, 9").run()
    button(a, "grad_replace()").click().run()
    x = int(lab_a.tensors["x"].node_id)
    assert lab_a.container()[x].tolist() == [9.0, 9.0]
    b.run()
    assert {k: v.tolist() for k, v in lab_b.container().items()} == {x: [5.0, 7.0]}  # b's own x, untouched


def test_labs_in_concurrent_threads_do_not_cross_talk():
    # AppTest itself cannot run in parallel threads (it swaps a process-wide runtime), so this drives the
    # per-session labs the pages use, as concurrent sessions would.
    results: dict[int, list[str]] = {}

    def session(n: int) -> None:
        lab = TapeLab()
        for _ in range(n):
            lab.backward("loss")
        results[n] = [o.result for o in lab.log]

    threads = [threading.Thread(target=session, args=(n,)) for n in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(results[n]) for n in (1, 2, 3, 4)] == [1, 2, 3, 4]
    for n in (1, 2, 3, 4):
        assert results[n][0] == "[5.0, 7.0]"
        assert all("NodeId(5)" in r for r in results[n][1:])  # each session's own counter


def test_engine_devices_stay_isolated_from_the_app():
    ad = Device.numpy().autodiff()
    app("pages/memory/memory_growth.py")
    assert ad.memory_usage().bytes_in_use == 0


def test_home_shows_the_seed_table():
    at = app()
    frame = table(at, "Python")  # Python's calls and values; the seed's Rust `Some(…)` only in a note
    assert frame["Python"].tolist()[:2] == ["x.grad(grads)", "h.grad(grads)"]
    assert frame["Returns"].tolist() == ["[5.0, 7.0]", "None", "None", "None", "[5.0, 7.0]", "None"]
    assert "Some([5.0, 7.0])" in " ".join(c.value for c in at.caption)
    assert frame["Why"].str.len().min() > 20
