import inspect

import streamlit as st

from course.training import (
    DATASETS,
    UPDATE_RULES,
    UPDATES,
    Training,
    forward,
    replay_iteration,
)
from ui.code import code_block
from ui.navigation import lesson_intro
from ui.replay_view import replay_view
from ui.state import current_backend
from ui.training_view import iteration_sentence, training_charts

lesson_intro(
    "Training",
    "A small network learns to tell two classes of points apart. Each **iteration** runs the forward on the "
    "autodiff device (a **fresh graph**, from the parameters to the loss), a backward that consumes it, and a step "
    "of gradient descent: `w ← w − learning rate × ∂loss/∂w`. The update runs on the **inner device**, as Burn's "
    "optimizers do: it is arithmetic on numbers, not part of any graph, so each iteration's graph starts again at "
    "the parameters and memory stays flat.",
)
UPDATE_LABELS = {
    "inner": "on the inner device (without_autodiff)",
    "detach": "on the autodiff device, then detach()",
    "autodiff": "on the autodiff device (the mistake)",
}
TICK_S = 0.4
PER_TICK = 10  # iterations per tick while playing: about 5 ms of work each on the numpy backend
PLAYING = "training_playing"

controls = st.columns([1, 1, 1.6])
dataset = controls[0].selectbox("Data", DATASETS, key="training_dataset")
learning_rate = controls[1].select_slider("Learning rate", [0.05, 0.1, 0.3, 0.5, 1.0], 0.5, key="training_lr")
update = controls[2].radio(
    "The update runs", UPDATES, format_func=UPDATE_LABELS.__getitem__, key="training_update", horizontal=True
)
settings = (dataset, learning_rate, update, current_backend())
training: Training | None = st.session_state.get("training")
if training is None or st.session_state.get("training_settings") != settings:
    training = st.session_state.training = Training(
        dataset, learning_rate=learning_rate, update=update, backend=current_backend()
    )
    st.session_state.training_settings = settings
    st.session_state[PLAYING] = False
    st.session_state.pop("training_replayed", None)

buttons = st.columns(3)
if buttons[0].button("One iteration", key="training_step", width="stretch"):
    training.step()
playing = st.session_state.get(PLAYING, False)
if buttons[1].button("Pause" if playing else "Play", key="training_play", type="primary", width="stretch"):
    st.session_state[PLAYING] = not playing
    st.rerun()
if buttons[2].button("Start over", key="training_reset", width="stretch"):
    del st.session_state["training"]
    st.rerun()


@st.fragment(run_every=TICK_S if st.session_state.get(PLAYING) else None)
def live_training(training: Training) -> None:
    if st.session_state.get(PLAYING):
        for _ in range(PER_TICK):
            if training.step() is None:
                break
        if training.stopped:
            st.session_state[PLAYING] = False
            st.rerun()
    if training.stopped:
        st.warning(training.stopped)
    last = training.history[-1] if training.history else None
    metrics = st.columns(4)
    metrics[0].metric("Iteration", f"{training.iterations}")
    metrics[1].metric("Loss", f"{last.loss:.3f}" if last else "not yet")
    metrics[2].metric("Accuracy", f"{last.accuracy:.0%}" if last else "not yet")
    metrics[3].metric("Operations on the tape", f"{last.tape}" if last else "not yet")
    st.markdown(iteration_sentence(training))
    training_charts(training)


live_training(training)

st.markdown("**The code of one iteration**: the forward, then the update of each parameter with its gradient.")
code_block(inspect.getsource(forward) + "\n\n" + inspect.getsource(UPDATE_RULES[update]))

st.subheader("Replay one iteration's backward")
st.markdown(
    "Any iteration can be run again from the parameters it started with: the same graph, the same loss, "
    "and its backward step by step."
)
if training.iterations:
    pick = st.columns([1, 2], vertical_alignment="bottom")
    # no key: a new iteration makes it a new widget, set to the newest again
    number = pick[0].number_input("Iteration to replay", 1, training.iterations, training.iterations)
    if pick[1].button(f"Replay iteration {number}'s backward", key="training_replay"):
        st.session_state.training_replayed = replay_iteration(training, int(number))
    replayed = st.session_state.get("training_replayed")
    if replayed is not None:
        st.caption(f"Iteration {replayed.number}: loss {replayed.loss:.4f}, recomputed from its parameters.")
        replay_view(
            replayed.before,
            replayed.recorder,
            replayed.names,
            "training_replay_stage",
            file_stem=f"training-iteration-{replayed.number}",
            source=replayed.source,
            lines=replayed.lines,
        )
else:
    st.caption("Run an iteration first: its backward can then be replayed here.")
