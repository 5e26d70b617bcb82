"""The Memory section through AppTest: memory growth, memory policies, checkpointing."""

from __future__ import annotations

import gc

import pytest
from apptest import app, button, chart, memory_run, node_states, stage_data, stages, table

from autodiff.stage.format import format_bytes


def test_memory_rises_with_autodiff_and_backward_frees_it():
    at = memory_run("autodiff")
    lab = at.session_state["memory_lab"]
    assert lab.finished and at.session_state["memory_running"] is False
    in_use = [p.usage.bytes_in_use for p in lab.history]
    tensor = 128 * 128 * 4
    assert in_use == [tensor * (1 + 2 * i) for i in range(6)]
    assert at.metric[1].value == f"{in_use[-1] / 2**10:.1f} KiB"  # 704 KiB: the unit that suits it
    assert len(at.get("vega_lite_chart")) == 2
    spec, data = chart(at, "Memory in use")  # charted in KiB too, from zero to above the last value
    assert spec["encoding"]["y"]["axis"]["title"] == "Memory (KiB)"
    assert data["Memory (KiB)"].tolist() == [b / 2**10 for b in in_use]
    assert "abandoned" in node_states(stage_data(at, "static")).values()  # abandoned steps are drawn
    button(at, "Run one backward now").click().run()
    assert lab.history[-1].usage.bytes_in_use == tensor  # only x: the gradients were dropped at once
    assert lab.history[-1].label == "one backward"


@pytest.mark.parametrize("presenter", [False, True])
def test_memory_growth_charts_the_seed_experiment_from_1_to_41_mib(presenter):
    at = app()
    at.toggle(key="presenter").set_value(presenter).run()
    at = memory_run("autodiff", passes=20, size=512, at=at)
    spec, data = chart(at, "Memory in use")
    assert data["Memory (MiB)"].tolist() == [1.0 + 2 * k for k in range(21)]  # the seed: 1 -> 41 MiB
    y = spec["encoding"]["y"]
    assert y["axis"]["title"] == "Memory (MiB)" and y["scale"]["domain"][0] == 0 and y["scale"]["domain"][1] > 41
    assert spec["encoding"]["x"]["scale"]["domain"] == [0, 20]
    assert spec["config"]["axis"]["labelFontSize"] == (18 if presenter else 12)
    assert len(spec["title"]["text"]) < 20 and spec["title"]["limit"] == 0  # short, and never clipped
    spec, data = chart(at, "Live buffers")
    assert data["Buffers"].tolist() == [1 + 2 * k for k in range(21)]


def test_memory_growth_draws_its_graph_once_the_run_stops():
    at = memory_run("autodiff", passes=5, size=128, ticks=2)
    assert at.session_state["memory_running"] and not [s for s in stages(at) if s["mode"] == "static"]  # charts only
    assert "drawn when the run stops" in " ".join(c.value for c in at.caption)
    for _ in range(6):
        at.run()
    assert at.session_state["memory_lab"].done == 5
    assert not at.session_state["memory_running"] and stage_data(at, "static")["nodes"]


def test_memory_stays_flat_without_autodiff():
    lab = memory_run("without_autodiff()").session_state["memory_lab"]
    assert {p.usage.bytes_in_use for p in lab.history} == {128 * 128 * 4}


def test_abandoned_graphs_experiment_table():
    at = app("pages/memory/memory_growth.py")
    at.selectbox(key="memory_size").set_value(128).run()
    button(at, "Run the abandoned-graphs experiment").click().run()
    frame = table(at, "Moment")
    mib = 128 * 128 * 4 * 15 / 2**20
    assert frame["In use"].tolist() == [f"{mib * 1024:.1f} KiB"] * 3 + ["8 B"]  # the two-element loss's x


def test_what_holds_memory_is_grouped_by_pass_never_a_wall_of_boxes():
    at = memory_run("autodiff", passes=40)
    holders = table(at, "Forward passes")
    assert holders["Forward passes"].tolist() == ["1–40 (40 graphs)"]  # 40 identical abandoned graphs: one row
    assert holders["Each graph's steps"].tolist() == ["exp, mul, matmul, sum"]
    held = sum(n.held_bytes for n in at.session_state["memory_lab"].ad.snapshot().nodes)
    assert "abandoned" in holders["State"][0]
    assert holders["Holds"][0] == f"{format_bytes(held)} ({format_bytes(held // 40)} each)"  # the graph's cost
    data = stage_data(at, "static")  # the newest pass drawn, with x: five boxes
    assert sorted(node["detail"].split(" · ")[1] for node in data["nodes"]) == ["exp", "matmul", "mul", "random", "sum"]


def test_memory_page_shows_mlx_counter_beside_the_engine():
    at = app()
    if at.selectbox(key="backend").disabled:
        pytest.skip("MLX is not available here")
    at.selectbox(key="backend").set_value("mlx").run()
    at.query_params.clear()
    at.switch_page("pages/memory/memory_growth.py").run()
    at.selectbox(key="memory_size").set_value(128).run()
    at.slider(key="memory_iterations").set_value(5).run()
    button(at, "Start").click().run()
    for _ in range(7):
        at.run()
    labels = [m.label for m in at.metric]
    assert "MLX active memory" in labels
    lab = at.session_state["memory_lab"]
    assert lab.backend == "mlx" and all(p.backend_bytes is not None for p in lab.history)
    grew = lab.history[-1].backend_bytes - lab.history[0].backend_bytes
    assert abs(grew - 10 * 128 * 128 * 4) < 4096


def test_memory_policies_page():
    at = app("pages/memory/memory_policies.py")
    frame = table(at, "Moment")
    mib = lambda values: [f"{v:.1f} MiB" for v in values]
    assert frame["Burn (lazy sweep)"].tolist() == mib([1, 11, 21, 31, 41, 2, 1, 1, 1])
    assert frame["PyTorch (eager)"].tolist() == mib([1, 1, 1, 1, 1, 2, 1, 1, 1])
    comparison = table(at, "Program")
    assert comparison["Burn (lazy sweep)"].str.startswith("second backward refused").all()
    assert comparison["PyTorch"].str.startswith("second backward refused").all()
    assert comparison["PyTorch, retain_graph=True"].tolist() == [
        "runs; x.grad accumulates to [10.0, 14.0]",
        "runs; x.grad accumulates to [13.591409, 36.945282]",
    ]
    at.select_slider(key="policies_size").set_value(64).run()
    assert table(at, "Moment")["PyTorch (eager)"].tolist()[0] == "16.0 KiB"
    spec, data = chart(at, "Memory in use at each moment")  # 16 KiB to 656 KiB: charted in KiB, not a flat zero
    assert spec["encoding"]["y"]["axis"]["title"] == "Memory (KiB)"
    assert data["Memory (KiB)"].max() == 41 * 16


def parse_bytes(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"B": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20}[unit]


def test_checkpointing_page_compares_the_two_strategies():
    at = app("pages/memory/checkpointing.py")
    assert "identical" in at.success[0].value
    frame = table(at, "Strategy")
    assert frame["Ops recomputed"].tolist()[0] == 0 and frame["Ops recomputed"].tolist()[1] > 0
    held = dict(zip(frame["Strategy"], frame["Held only by the graph"], strict=True))
    assert parse_bytes(held["Balanced checkpointing"]) < parse_bytes(held["No checkpointing (default)"])
    recomputations = [e for e in stage_data(at)["events"] if e["kind"] == "Recomputed"]  # each its own event
    assert len(recomputations) == frame["Ops recomputed"].tolist()[1]
    assert all("recomputed now" in e["text"] for e in recomputations)
    spec, data = chart(at, "Device memory after each backward step")
    dashes = spec["encoding"]["strokeDash"]["scale"]
    first, second = dashes["domain"]  # drawn in this order: the dashed one on top, so coinciding curves both show
    assert dashes["range"] == [[1, 0], [6, 4]] and set(data["Strategy"]) == {first, second}
    colour = spec["encoding"]["color"]
    assert colour["legend"] == spec["encoding"]["strokeDash"]["legend"]  # one legend: each entry solid or dashed
    assert colour["legend"]["symbolType"] == "stroke"  # a line, as drawn, not a dot that shows only the colour
    at.selectbox(key="checkpointing_program").set_value("mlp").run()
    assert "identical" in at.success[0].value


def test_a_session_past_its_memory_budget_is_stopped_with_a_sentence(monkeypatch):
    import ui.state

    # x holds 1 MiB; a pass keeps 2 MiB and needs 1 MiB more while it runs: the third pass would pass 7 MiB
    monkeypatch.setattr(ui.state, "SESSION_MEMORY_LIMIT", 7 * 2**20)
    at = app("pages/memory/memory_growth.py")
    at.selectbox(key="memory_size").set_value(512).run()
    at.button(key="memory_start").click().run()
    for _ in range(4):
        at.run()  # each run draws the live fragment once: one forward pass
    assert not at.exception
    message = next(e.value for e in at.error if "stopped after" in e.value)
    assert "stopped after 2 forward passes" in message and "past 7 MiB" in message
    assert at.session_state["memory_lab"].done == 2


def test_past_the_servers_memory_budget_a_new_experiment_gets_a_sentence_and_other_work_goes_on(monkeypatch):
    """Issue 31, finding 1: every session within its own 256 MiB, 20 of them had taken a replica past 1.8 GB."""
    import ui.state

    gc.collect()  # sessions of earlier tests in this process give their engines back
    other_sessions = ui.state.SERVER_BUDGET.used + 10 * 2**20  # what the server's other sessions hold right now
    monkeypatch.setattr(ui.state.SERVER_BUDGET, "limit", other_sessions + 7 * 2**20)
    monkeypatch.setattr(ui.state.SERVER_BUDGET, "used", other_sessions)
    at = app("pages/memory/memory_growth.py")
    at.selectbox(key="memory_size").set_value(512).run()
    at.button(key="memory_start").click().run()
    for _ in range(4):
        at.run()
    assert not at.exception
    message = next(e.value for e in at.error if "stopped after" in e.value)
    assert "stopped after 2 forward passes" in message
    assert "The server's memory for experiments is in use by other sessions right now" in message
    assert "Your work is kept" in message
    at.switch_page("pages/backward/gradient_consumption.py").run()  # lessons that hold little still work
    assert not at.exception and not at.error
