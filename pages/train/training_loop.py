import inspect

import streamlit as st

from course.own_data import CSV_CHARS, DataError, from_link, parse_csv, to_csv, to_link
from course.training import DATASETS, MAX_POINTS, UPDATE_RULES, UPDATES, Training, forward, make_dataset
from ui import press
from ui.code import code_block
from ui.downloads import NO_RERUN
from ui.replay_view import replay_view
from ui.state import current_backend, presenter_mode
from ui.training_stage import RATE, LiveTraining, training_stage
from ui.training_view import iteration_sentence

st.title("Training")
UPDATE_LABELS = {
    "inner": "on the inner device (without_autodiff)",
    "detach": "on the autodiff device, then detach()",
    "autodiff": "on the autodiff device (the mistake)",
}
LIVE = "live_training"


def load_dataset() -> None:
    live: LiveTraining | None = st.session_state.get(LIVE)
    if live is not None:
        live.use(*make_dataset(st.session_state.training_dataset, live.training.samples))
        live.edited = False


def settings_controls() -> tuple[float, str]:
    controls = st.columns([1, 1, 1.4, 0.6], vertical_alignment="bottom")
    controls[0].selectbox("Load the points", DATASETS, key="training_dataset", on_change=load_dataset)
    learning_rate = controls[1].select_slider("Learning rate", [0.05, 0.1, 0.3, 0.5, 1.0], 0.5, key="training_lr")
    update = controls[2].selectbox(
        "The update runs", UPDATES, format_func=UPDATE_LABELS.__getitem__, key="training_update"
    )
    if press.button("Start over", "training_reset", where=controls[3], width="stretch"):
        st.session_state.pop(LIVE, None)
    return learning_rate, update


# on a projector the settings go below the stage, so the stage has the screen
first, second = st.container(), st.container()
settings_box, stage_box = (second, first) if presenter_mode() else (first, second)
with settings_box:
    learning_rate, update = settings_controls()
settings = (learning_rate, update, current_backend())
live: LiveTraining | None = st.session_state.get(LIVE)
if live is None or st.session_state.get("training_settings") != settings:
    kept = (live.training.points, live.training.labels) if live is not None and live.edited else None
    training = Training(
        st.session_state.training_dataset, learning_rate=learning_rate, update=update, backend=current_backend()
    )
    live = st.session_state[LIVE] = LiveTraining(training, signature=f"{id(training)}")
    st.session_state.training_settings = settings
    if "data" in st.query_params:  # a link that keeps a student's points
        try:
            live.use(*from_link(st.query_params["data"]))
        except DataError as refused:
            st.error(f"{refused} The lesson's own points are used instead.")
            del st.query_params["data"]
    elif kept is not None:  # a new setting keeps a student's own points
        live.use(*kept)


def command_sent() -> None:
    state = st.session_state.get("training_stage")
    live.apply(state.get("command") if hasattr(state, "get") else None)


@st.fragment
def live_stage(live: LiveTraining) -> None:
    live.runs += 1
    training = live.training
    if live.replayed is not None:
        replayed = live.replayed
        back, caption = st.columns([1, 3], vertical_alignment="center")
        back.button("Back to training", key="training_back", type="primary", on_click=live.back_to_training)
        caption.caption(f"Iteration {replayed.number}: loss {replayed.loss:.4f}, recomputed from its parameters.")
        replay_view(
            replayed.before,
            replayed.recorder,
            replayed.names,
            "training_replay_stage",
            file_stem=f"training-iteration-{replayed.number}",
            source=replayed.source,
            lines=replayed.lines,
        )
        return
    training_stage(live.payload(presenter=presenter_mode()), key="training_stage", on_command=command_sent)
    if training.stopped:
        st.warning(training.stopped)
    st.markdown(iteration_sentence(training))
    if live.edited:
        try:
            st.query_params["data"] = to_link(training.points, training.labels)
        except DataError as too_many:
            st.query_params.pop("data", None)
            st.caption(str(too_many))
    else:
        st.query_params.pop("data", None)


with stage_box:
    live_stage(live)

st.markdown(
    "A small network learns to tell two classes of points apart. Each **iteration** runs the forward on the "
    "autodiff device (a **fresh graph**, from the parameters to the loss), a backward that consumes it, and a step "
    "of gradient descent: `w ← w − learning rate × ∂loss/∂w`. The update runs on the **inner device**, as Burn's "
    "optimizers do: it is arithmetic on numbers, not part of any graph, so each iteration's graph starts again at "
    f"the parameters and memory stays flat. The stage plays {RATE} iterations a second; the server computes them a "
    "second ahead, in chunks the stage asks for. Pause on any iteration to step its backward with the chain rule "
    "of each step."
)

st.subheader("Your own points")
st.markdown(
    f"Click on the plane to add a point, or paste up to {MAX_POINTS} rows of `x, y, class` (class 0 or 1). "
    "Training goes on from where it is, on the new points; the page's link keeps them (up to 200)."
)
pasted = st.text_area(
    "Rows of x, y, class",
    key="training_csv",
    height=120,
    placeholder="x, y, class\n0.5, -1.2, 1",
    max_chars=CSV_CHARS,
    help=f"At most {CSV_CHARS:,} characters: {MAX_POINTS} rows.",
)
use_rows, download = st.columns([1, 1])
if press.button("Train on these rows", "training_use_csv", where=use_rows):
    try:
        live.use(*parse_csv(pasted))
    except DataError as bad:
        st.error(f"{bad} Nothing was changed: correct the rows and press the button again.")
    else:
        st.rerun()  # the stage above draws the new points
download.download_button(
    "Download the points (CSV)",
    to_csv(live.training.points, live.training.labels),
    file_name="training-points.csv",
    mime="text/csv",
    on_click=NO_RERUN,
    key="training_download_csv",
)

st.markdown("**The code of one iteration**: the forward, then the update of each parameter with its gradient.")
code_block(inspect.getsource(forward) + "\n\n" + inspect.getsource(UPDATE_RULES[update]))
