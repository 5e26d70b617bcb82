"""The app through Streamlit's AppTest: every page, every control, the values it shows."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from autodiff import Device
from autodiff.device import mlx_unavailable_reason
from autodiff.trace import StepStarted
from ui.graph import CURRENT, REFUSED
from ui.labs import TapeLab
from ui.programs import PROGRAMS, run_program

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = [
    "lessons/home.py",
    "lessons/backward_traversal.py",
    "lessons/gradient_consumption.py",
    "lessons/tape_consumption.py",
    "lessons/memory_growth.py",
    "lessons/memory_policies.py",
    "lessons/checkpointing.py",
    "lessons/check_mlx.py",
]


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page:
        at.query_params.clear()  # AppTest keeps query params across switch_page; a browser drops them
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r} among {[b.label for b in at.button]}"
    return matches[0]


def dot(at: AppTest, index: int = 0) -> str:
    return at.get("graphviz_chart")[index].proto.spec


def table(at: AppTest, first_column: str):
    for frame in at.table:
        if frame.value.columns[0] == first_column:
            return frame.value
    raise AssertionError(f"no table starting with column {first_column!r}")


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


def test_home_shows_the_seed_table():
    at = app()
    frame = table(at, "Expression")
    assert frame["Value"].tolist() == ["Some([5.0, 7.0])", "None", "None", "None", "Some([5.0, 7.0])", "None"]
    assert frame["Why"].str.len().min() > 20


# -- Backward traversal -----------------------------------------------------------------------


def test_player_buttons_and_current_step_highlight():
    at = app("lessons/backward_traversal.py")
    events = at.session_state["traversal_run"].recorder.events
    button(at, "Last »").click().run()
    assert at.session_state["replay_index"] == len(events) - 1
    button(at, "◀ Prev").click().run()
    assert at.session_state["replay_index"] == len(events) - 2
    button(at, "« First").click().run()
    assert at.session_state["replay_index"] == 0
    first_step = next(i for i, e in enumerate(events) if isinstance(e, StepStarted))
    at.slider[0].set_value(first_step + 1).run()
    node_id = int(events[first_step].node_id)
    spec = dot(at)
    current_line = next(line for line in spec.splitlines() if line.strip().startswith(f"n{node_id} "))
    assert f'color="{CURRENT}"' in current_line and 'penwidth="4"' in current_line
    assert spec.count('penwidth="4"') == 1  # only the current step is highlighted
    button(at, "Next ▶").click().run()
    assert at.session_state["replay_index"] == first_step + 1


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_container_table_after_every_event_matches_the_engine(key):
    at = app("lessons/backward_traversal.py")
    at.selectbox(key="traversal_program_widget").set_value(key).run()
    run = at.session_state["traversal_run"]
    assert run.program.key == key
    total = len(run.recorder.events)
    for index in range(total):
        at.slider[0].set_value(index + 1).run()
        expected = run.recorder.container_after(index)
        if not expected:
            assert any("container is empty" in i.value for i in at.info)
            continue
        frame = table(at, "Node")
        assert len(frame) == len(expected)
        for (node_id, value), (_, row) in zip(sorted(expected.items()), frame.iterrows(), strict=True):
            assert f"NodeId({int(node_id)})" in row["Node"]
            shown = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", row["Gradient"].split("(")[0])]
            np.testing.assert_allclose(shown, np.ravel(value)[: len(shown)], rtol=1e-3, atol=1e-4)
    # at the end the table holds exactly what an independent run of the engine returns
    fresh = run_program(key)
    leaves = [t for t in fresh.tensors.values() if t.is_require_grad]
    final = table(at, "Node")
    assert len(final) == len(leaves)
    spec = dot(at)
    assert "dashed" in spec and CURRENT not in spec.split("edge [")[1].split("];", 1)[1]


def test_play_advances_one_event_per_tick_and_stops_at_the_end():
    at = app("lessons/backward_traversal.py")
    total = len(at.session_state["traversal_run"].recorder.events)
    button(at, "Play ▶").click().run()  # AppTest runs the fragment once per run; a browser on a timer
    assert at.session_state["replay_playing"] is True
    start = at.session_state["replay_index"]
    at.run()
    assert at.session_state["replay_index"] == start + 1
    for _ in range(total + 2):
        at.run()
    assert at.session_state["replay_index"] == total - 1
    assert at.session_state["replay_playing"] is False
    assert button(at, "Play ▶")


def test_query_params_round_trip():
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("lessons/backward_traversal.py")
    at.query_params["program"] = "neuron"
    at.query_params["step"] = "7"
    at.run()
    assert at.selectbox(key="traversal_program_widget").value == "neuron"
    assert at.slider[0].value == 8  # event 8 of n is index 7
    button(at, "Next ▶").click().run()
    assert at.query_params["step"] == ["8"] or at.query_params["step"] == "8"
    assert at.query_params["program"] in ("neuron", ["neuron"])


def test_downloads_offer_dot_and_json():
    at = app("lessons/backward_traversal.py")
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels == ["Download the graph (DOT)", "Download the event trace (JSON)"]


# -- Gradient consumption ------------------------------------------------------------------------


def test_gradient_consumption_controls():
    at = app("lessons/gradient_consumption.py")
    lab = at.session_state["consumption_lab"]
    at.radio(key="consumption_tensor").set_value("x").run()
    button(at, "grad()").click().run()
    assert "→ `None`" in at.success[0].value  # the seed's table removed it
    at.text_input[0].set_value("2.5, -1").run()
    button(at, "grad_replace()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    assert table(at, "Node")["Gradient"].tolist() == ["[2.5, -1]"]
    button(at, "grad_remove()").click().run()
    assert "[2.5, -1.0]" in at.success[0].value
    at.radio(key="consumption_tensor").set_value("h").run()
    button(at, "grad()").click().run()
    assert "GradInBackward" in at.success[0].value
    at.text_input[0].set_value("one, two").run()
    button(at, "grad_replace()").click().run()
    assert "numbers separated by commas" in at.error[0].value
    at.text_input[0].set_value("1, 2, 3").run()
    button(at, "grad_replace()").click().run()
    assert "shape" in at.error[0].value
    assert len(lab.log) == 5 and not at.exception


# -- Tape consumption ---------------------------------------------------------------------------


def test_tape_consumption_refusals_match_the_seed():
    at = app("lessons/tape_consumption.py")
    button(at, "loss.backward()").click().run()
    assert "x.grad = Some([5.0, 7.0])" in at.success[0].value
    button(at, "loss.backward()").click().run()
    assert "NodeId(5)" in at.error[0].value and "retain_graph" in at.error[0].value
    assert f'color="{REFUSED}"' in next(line for line in dot(at).splitlines() if line.strip().startswith("n5 "))
    button(at, "l1 .backward()").click().run()
    assert "Some([5.4365635, 14.778112])" in at.success[0].value
    button(at, "l2 .backward()").click().run()
    assert "NodeId(6)" in at.error[0].value
    button(at, "l3 .backward()").click().run()
    assert "Some([4.0, 4.0])" in at.success[0].value
    button(at, "l1 + l2 .backward()").click().run()
    assert "NodeId(" in at.error[0].value  # l1's own steps are consumed too
    button(at, "(shared.detach() * x).sum().backward()").click().run()
    assert "Some([2.7182817, 7.389056])" in at.success[0].value
    assert len(at.session_state["tape_lab"].log) == 7
    button(at, "Start over").click().run()
    assert "tape_lab" in at.session_state and not at.session_state["tape_lab"].log


# -- Memory growth --------------------------------------------------------------------------------


def memory_run(mode: str, passes: int = 5, size: int = 128) -> AppTest:
    at = app("lessons/memory_growth.py")
    at.selectbox(key="memory_size").set_value(size).run()
    at.slider(key="memory_iterations").set_value(passes).run()
    at.radio(key="memory_mode").set_value(mode).run()
    button(at, "Start").click().run()
    for _ in range(passes + 2):
        at.run()  # each run is one tick of the live fragment
    assert not at.exception
    return at


def test_memory_rises_with_autodiff_and_backward_frees_it():
    at = memory_run("autodiff")
    lab = at.session_state["memory_lab"]
    assert lab.finished and at.session_state["memory_running"] is False
    in_use = [p.usage.bytes_in_use for p in lab.history]
    tensor = 128 * 128 * 4
    assert in_use == [tensor * (1 + 2 * i) for i in range(6)]
    assert at.metric[1].value == f"{in_use[-1] / 2**20:.1f} MiB"
    assert len(at.get("vega_lite_chart")) == 2
    assert "#ffd8a8" in dot(at)  # abandoned steps are drawn
    button(at, "Run one backward now").click().run()
    assert lab.history[-1].usage.bytes_in_use == tensor  # only x: the gradients were dropped at once
    assert lab.history[-1].label == "one backward"


def test_memory_stays_flat_without_autodiff():
    lab = memory_run("without_autodiff()").session_state["memory_lab"]
    assert {p.usage.bytes_in_use for p in lab.history} == {128 * 128 * 4}


def test_abandoned_graphs_experiment_table():
    at = app("lessons/memory_growth.py")
    at.selectbox(key="memory_size").set_value(128).run()
    button(at, "Run the abandoned-graphs experiment").click().run()
    frame = table(at, "Moment")
    mib = 128 * 128 * 4 * 15 / 2**20
    assert frame["In use (MiB)"].tolist() == [f"{mib:.1f}", f"{mib:.1f}", f"{mib:.1f}", "0.0"]


# -- Isolation -------------------------------------------------------------------------------------


def test_two_sessions_do_not_share_state():
    a, b = app("lessons/gradient_consumption.py"), app("lessons/gradient_consumption.py")
    lab_a, lab_b = a.session_state["consumption_lab"], b.session_state["consumption_lab"]
    assert lab_a is not lab_b and lab_a.ad is not lab_b.ad
    a.text_input[0].set_value("9, 9").run()
    button(a, "grad_replace()").click().run()
    assert lab_a.grads.node_ids() and not lab_b.grads.node_ids()
    b.run()
    assert any("empty" in i.value for i in b.info)


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
        assert results[n][0] == "x.grad = Some([5.0, 7.0])"
        assert all("NodeId(5)" in r for r in results[n][1:])  # each session's own counter


def test_engine_devices_stay_isolated_from_the_app():
    ad = Device.numpy().autodiff()
    app("lessons/memory_growth.py")
    assert ad.memory_usage().bytes_in_use == 0


def test_large_memory_graph_is_collapsed_with_a_way_to_expand():
    at = memory_run("autodiff", passes=40)
    spec = dot(at)
    assert "order1 [label=" in spec and spec.count("[label=") == 5  # one box per order bucket
    at.multiselect(key="memory_graph_expand").set_value([1]).run()
    spec = dot(at)
    assert "order1 [label=" not in spec and spec.count("exp [128, 128]") == 40


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


def test_memory_page_shows_mlx_counter_beside_the_engine():
    at = app()
    if at.selectbox(key="backend").disabled:
        pytest.skip("MLX is not available here")
    at.selectbox(key="backend").set_value("mlx").run()
    at.query_params.clear()
    at.switch_page("lessons/memory_growth.py").run()
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


def test_check_against_mlx_page_for_every_program():
    at = app("lessons/check_mlx.py")
    if mlx_unavailable_reason():
        assert "needs MLX" in at.error[0].value
        return
    for key in PROGRAMS:
        at.selectbox(key="check_program").set_value(key).run()
        assert "agree" in at.success[0].value
        frame = table(at, "Node")
        _, result = at.session_state[f"check_{key}_numpy"]
        assert len(frame) == len(result.nodes)
        assert set(frame["End to end"]) == {"✓ agrees"}
        assert 'color="#2f9e44"' in dot(at) and 'color="#e03131"' not in dot(at)


def test_check_page_flags_a_planted_bug(monkeypatch):
    if mlx_unavailable_reason():
        pytest.skip("MLX is not available here")
    from autodiff import Tensor
    from autodiff.graph import Rule
    from autodiff.tensor import _result

    def wrong_tanh(self: Tensor) -> Tensor:
        return _result("tanh", lambda x: x.tanh(), (self,), (Rule("bug", lambda g, s: g * (1.0 - s["y"]), ("y",)),))

    monkeypatch.setattr(Tensor, "tanh", wrong_tanh)
    at = app("lessons/check_mlx.py")
    at.selectbox(key="check_program").set_value("neuron").run()
    assert "out (NodeId(" in at.error[0].value
    frame = table(at, "Node")
    flagged = frame[frame["Local rule"] == "✗ differs"]["Node"].tolist()
    assert len(flagged) == 1 and flagged[0].startswith("out ")


# -- Playground -------------------------------------------------------------------------------------


def run_code(at: AppTest, code: str) -> AppTest:
    at.text_area(key="playground_editor").set_value(code).run()
    button(at, "Run").click().run()
    assert not at.exception
    return at


def test_playground_runs_typed_code_and_shows_output_graph_and_replay():
    at = app("lessons/playground.py")
    run_code(at, "x = Tensor.from_floats([1.0, 2.0], ad).require_grad()\ny = (x * x).sum()\ng = y.backward()\n"
                 "print(x.grad(g))\n")  # fmt: skip
    assert at.code[0].value == "Tensor([2.0, 4.0])"
    assert len(at.get("graphviz_chart")) == 2  # the program's graph and the replay's
    assert "Event 1 of" in " ".join(m.value for m in at.markdown)
    button(at, "Last »").click().run()
    assert (
        at.session_state["playground_replay_index"]
        == len(at.session_state["playground_result"].backward.recorder.events) - 1
    )


def test_playground_error_points_at_the_line_and_keeps_the_text():
    at = app("lessons/playground.py")
    code = "x = Tensor.ones([2], ad)\nimport os\n"
    run_code(at, code)
    assert "Line 2, column 1" in at.error[0].value and "Imports are not available" in at.error[0].value
    assert at.text_area(key="playground_editor").value == code
    from playground.share import decode

    assert (
        decode(at.query_params["code"][0] if isinstance(at.query_params["code"], list) else at.query_params["code"])
        == code
    )


def test_playground_examples_menu_and_loop_memory_chart():
    at = app("lessons/playground.py")
    at.selectbox(key="playground_example").set_value("Seed: memory growth").run()
    assert "for i in range(10)" in at.text_area(key="playground_editor").value
    button(at, "Run").click().run()
    assert not at.error and len(at.get("vega_lite_chart")) == 2


def test_playground_link_restores_the_program():
    from playground.share import encode

    code = 'print("shared", 1 + 2)\n'
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("lessons/playground.py")
    at.query_params["code"] = encode(code)
    at.run()
    assert at.text_area(key="playground_editor").value == code
    button(at, "Run").click().run()
    assert at.code[0].value == "shared 3"


def test_playground_broken_link_is_explained():
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("lessons/playground.py")
    at.query_params["code"] = "not-a-program!!"
    at.run()
    assert "does not hold a Playground program" in at.error[0].value
    assert not at.exception


def test_playground_sessions_are_isolated():
    a, b = app("lessons/playground.py"), app("lessons/playground.py")
    run_code(a, "secret = Tensor.from_floats([42.0], ad)\nprint(secret)\n")
    run_code(b, "print(secret)\n")
    assert "`secret` is not defined" in b.error[0].value
    assert a.code[0].value == "Tensor([42.0])"


def test_presenter_mode_enlarges_graphs_and_hides_extra_controls():
    at = app()
    at.toggle(key="presenter").set_value(True).run()
    at.query_params.clear()
    at.switch_page("lessons/backward_traversal.py").run()
    assert "fontsize=20" in dot(at) and "rankdir=BT" in dot(at)
    assert not at.get("download_button")  # fewer controls on a projector
    assert not [s for s in at.select_slider if s.key == "replay_speed"]
    at.toggle(key="presenter").set_value(False).run()
    assert "fontsize=13" in dot(at) and len(at.get("download_button")) == 2


def test_memory_policies_page():
    at = app("lessons/memory_policies.py")
    frame = table(at, "Moment")
    mib = lambda values: [f"{v:.1f} MiB" for v in values]  # noqa: E731
    assert frame["Burn (lazy sweep)"].tolist() == mib([1, 11, 21, 31, 41, 2, 1, 1, 1])
    assert frame["PyTorch (eager)"].tolist() == mib([1, 1, 1, 1, 1, 2, 1, 1, 1])
    comparison = table(at, "Program")
    assert comparison["Burn (lazy sweep)"].str.startswith("second backward refused").all()
    assert comparison["PyTorch"].str.startswith("second backward refused").all()
    assert comparison["PyTorch, retain_graph=True"].tolist() == [
        "runs; x.grad accumulates to Some([10.0, 14.0])",
        "runs; x.grad accumulates to Some([13.591409, 36.945282])",
    ]
    at.select_slider(key="policies_size").set_value(64).run()
    assert table(at, "Moment")["PyTorch (eager)"].tolist()[0] == "0.0 MiB"  # 16 KiB


# -- Predict-then-reveal ------------------------------------------------------------------------------


def test_traversal_exercise_checks_predictions_and_keeps_a_score():
    from ui.exercise import sent_values

    at = app("lessons/backward_traversal.py")
    at.toggle(key="traversal_exercise").set_value(True).run()
    run = at.session_state["traversal_run"]
    events = run.recorder.events
    index = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.op == "mul")  # h = x * x
    at.slider[0].set_value(index + 1).run()
    expected = sent_values(run.recorder, index)
    assert [v.tolist() for v in expected] == [[1.0, 2.0], [1.0, 2.0]]  # grad * b, grad * a with b = a = x
    question = f"replay_{index}"
    at.text_input(key=f"{question}_0").set_value("2, 4")
    at.text_input(key=f"{question}_1").set_value("1, 2")
    at.button(key=f"FormSubmitter:{question}_form-Check my prediction").click().run()
    assert "Not quite" in at.error[0].value and "grad * b" in at.error[0].value
    assert at.session_state["exercise_score"] == (0, 1)
    index2 = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.op.startswith("mul_scalar"))
    at.slider[0].set_value(index2 + 1).run()
    q2 = f"replay_{index2}"
    at.text_input(key=f"{q2}_0").set_value("[3.0, 3.0]")
    at.button(key=f"FormSubmitter:{q2}_form-Check my prediction").click().run()
    assert "Right" in at.success[0].value
    assert at.session_state["exercise_score"] == (1, 2)
    assert "1 of 2" in " ".join(c.value for c in at.caption)


def test_consumption_exercise_hides_the_table_until_checked():
    at = app("lessons/gradient_consumption.py")
    at.toggle(key="consumption_exercise").set_value(True).run()
    assert not at.table and "Check your predictions" in at.info[0].value
    answers = ["5, 7", "None", "None", "none", "[5.0, 7.0]", "3, 3"]  # the last one is wrong
    for k, answer in enumerate(answers):
        at.text_input(key=f"consumption_predict_{k}").set_value(answer)
    at.button(key="FormSubmitter:consumption_predict_form-Check and reveal").click().run()
    assert len(at.success) == 5 and len(at.error) == 1 and "removed" in at.error[0].value
    assert at.session_state["exercise_score"] == (5, 6)
    assert table(at, "Expression")["Value"].tolist()[0] == "Some([5.0, 7.0])"


def test_playground_exercise_link_opens_in_exercise_mode():
    from playground.share import encode

    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("lessons/playground.py")
    at.query_params["code"] = encode("x = Tensor.from_floats([2.0], ad).require_grad()\ng = (x * x).sum().backward()\n")
    at.query_params["exercise"] = "1"
    at.run()
    assert at.toggle(key="playground_exercise").value is True
    button(at, "Run").click().run()
    events = at.session_state["playground_result"].backward.recorder.events
    index = next(i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.op == "mul")
    at.slider[0].set_value(index + 1).run()
    assert any("Predict" in m.value for m in at.markdown)


def test_checkpointing_page_compares_the_two_strategies():
    at = app("lessons/checkpointing.py")
    assert "identical" in at.success[0].value
    frame = table(at, "Strategy")
    assert frame["Ops recomputed"].tolist()[0] == 0 and frame["Ops recomputed"].tolist()[1] > 0
    runs = at.session_state["checkpointing_chain_numpy"]
    held = {m: sum(n.held_bytes for n in r.before.nodes) for m, r in runs.items()}
    assert held["balanced"] < held["none"]
    assert not any("recomputed now" in m.value for m in at.markdown)  # the replay starts at event 1
    recomputed = next(i for i, e in enumerate(runs["balanced"].recorder.events) if type(e).__name__ == "Recomputed")
    at.slider[0].set_value(recomputed + 1).run()
    assert any("recomputed now" in m.value for m in at.markdown)
    at.selectbox(key="checkpointing_program").set_value("mlp").run()
    assert "identical" in at.success[0].value
