import streamlit as st

from course.labs import MemoryPoint
from playground import served_limits
from playground.examples import EXAMPLES
from playground.share import ShareError, decode, encode
from playground.workers import shared_pool
from ui import press
from ui.charts import memory_charts
from ui.class_view import teach_playground
from ui.code import code_block
from ui.graph_view import snapshot_graph
from ui.navigation import lesson_intro
from ui.playground_help import limits_table, what_a_program_may_use
from ui.replay_view import replay_view
from ui.run_view import hold_result, run_error, session_owner, stopped_away_notice, wait_for_run
from ui.state import client_address, current_backend, publish

LIMITS, MISCONFIGURED = served_limits()
CODE = "playground_code"
EDITOR = "playground_editor"

lesson_intro(
    "Playground",
    "Write your own program in Python with the engine's `Tensor`, then press **Run**: classes, functions, "
    "loops, comprehensions and f-strings work as they do anywhere (micrograd's MLP and CS231n's neuron are in the "
    "examples). You get what it prints, its graph folded into the program's own parts, the replay of its last "
    "`backward()`, and a memory chart when it loops. It runs in a sandbox on the server: files, the network and "
    "other modules are out of its reach. The program travels in the page address, so you can share it.",
)
st.html(f"<style>.st-key-{EDITOR} textarea {{font-family: ui-monospace, Menlo, Consolas, monospace;}}</style>")
if MISCONFIGURED:
    st.warning(MISCONFIGURED)

if CODE not in st.session_state:  # first visit: a shared link may carry a program
    st.session_state[CODE] = next(iter(EXAMPLES.values()))
    packed = st.query_params.get("code")
    if packed:
        try:
            st.session_state[CODE] = decode(packed)
        except ShareError as error:
            st.error(f"{error} The first example is loaded instead.")


def load_example() -> None:
    st.session_state[CODE] = EXAMPLES[st.session_state.playground_example]
    st.session_state.pop("playground_result", None)


def keep_text() -> None:
    st.session_state[CODE] = st.session_state[EDITOR]


st.selectbox(
    "Examples",
    list(EXAMPLES),
    index=None,
    placeholder="Load an example…",
    key="playground_example",
    on_change=load_example,
)
# The program goes into the editor only when it differs (an example, a link, a return to this page): in the
# browser, a value the script sets replaces text the student has typed and not yet sent.
if st.session_state.get(EDITOR) != st.session_state[CODE]:
    st.session_state[EDITOR] = st.session_state[CODE]
st.text_area("Program", key=EDITOR, height=260, on_change=keep_text, max_chars=LIMITS.program_chars)
if "playground_exercise" not in st.session_state:  # a teacher's link can open the Playground as an exercise
    st.session_state.playground_exercise = st.query_params.get("exercise") == "1"
left, right = st.columns([1, 3])
run_clicked = press.button("Run", "playground_run", where=left, type="primary")
exercise = right.toggle(
    "Exercise: predict each step of the last backward (the link then opens as an exercise)",
    key="playground_exercise",
)
try:
    publish(code=encode(st.session_state[CODE]), exercise=int(exercise))
except ShareError as error:
    st.warning(f"{error} It still runs; it just cannot travel in the address.")

limits_table(LIMITS)
what_a_program_may_use()

if run_clicked:  # the program runs in a worker process, never in this server
    job = shared_pool().submit(session_owner(), st.session_state[CODE], LIMITS, current_backend(), client_address())
    st.session_state.playground_job = job
    st.session_state.playground_source = st.session_state[CODE]  # what the replay shows beside its graph
job = st.session_state.get("playground_job")
if job is not None:
    wait_for_run(job)
    if job.state == "done" and hold_result(job.result):
        st.session_state.pop("playground_replay_index", None)
    del st.session_state["playground_job"]
stopped = stopped_away_notice()
result = st.session_state.get("playground_result")
if result is None:
    if not stopped:  # the notice already says to press Run
        st.info("Press **Run** to run the program.")
    st.stop()

if result.output:
    st.markdown("**Output**")
    code_block("\n".join(result.output), python=False)
if result.error is not None:
    run_error(result.error, st.session_state[CODE])
if result.memory:
    memory_charts(
        [MemoryPoint(i, "after loop iteration", u) for i, u in result.memory],
        len(result.memory),
        x_title="Loop iteration",
    )
if result.backward is None and result.snapshot is not None and result.snapshot.nodes:
    snapshot_graph(result.snapshot, result.names, "The device's graph when the program ended.", key="playground_graph")
if result.backward is not None:  # its graph, once: the replay's last event is the graph after that backward
    st.subheader("The graph, and a replay of the last backward")
    run = result.backward
    replay_view(
        run.before,
        run.recorder,
        run.names,
        "playground_replay",
        file_stem="playground",
        exercise=exercise,
        source=st.session_state.get("playground_source"),
        lines=result.lines,
    )
    if press.button(
        "Teach this replay as a class",
        "playground_teach",
        help="Start a class on this program: the room follows your steps and predicts each one.",
    ):
        teach_playground(st.session_state.get("playground_source") or st.session_state[CODE], run, result.lines)
