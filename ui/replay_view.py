"""The replay of a recorded backward on a page: the stage (stepped in the browser; it saves the picture and its DOT
itself), the downloads of the replay and its trace, and in exercise mode the prediction for the step the stage
stopped at. Shared by every page that replays one."""

from __future__ import annotations

from collections.abc import Hashable
from contextlib import nullcontext

import streamlit as st

from autodiff import BackwardRecorder, GraphSnapshot
from autodiff.stage import StagePayload, export_html, replay_payload, with_view
from autodiff.trace import TapeBuilt

from .downloads import NO_RERUN, built_once
from .exercise import score_answers, score_caption
from .stage import stage
from .state import EMBEDDED, SHARED_RESULTS, embed_mode, presenter_mode
from .tables import tape_table


def tape_view(before: GraphSnapshot, recorder: BackwardRecorder, names: dict[int, str]) -> None:
    tape = next(e for e in recorder.events if isinstance(e, TapeBuilt))
    tape_table(tape.buckets, before, names)
    st.caption(
        "Steps not reachable from the loss (the untracked inputs) are not on the tape. "
        "Within a bucket, steps run in the order the traversal found them."
    )


@st.cache_resource(show_spinner=False, max_entries=SHARED_RESULTS)
def _shared_payload(
    identity: Hashable,
    presenter: bool,
    source: str | None,
    _lines: dict[int, tuple[int, int]] | None,
    _before: GraphSnapshot,
    _recorder: BackwardRecorder,
    _names: dict[int, str],
) -> StagePayload:
    """The payload of a replay that every student sees alike, built once per server and the same object for every
    session (a payload is never written to once built; a copy per session cost each new session 0.8 ms to unpickle
    and the collector after every run a walk over it): `identity` names the recording (Streamlit does not hash the
    arguments that start with `_`)."""
    return replay_payload(_before, _recorder, _names, presenter, source, _lines)


def replay_view(
    before: GraphSnapshot,
    recorder: BackwardRecorder,
    names: dict[int, str],
    key: str,
    file_stem: str,
    link: str | None = None,
    exercise: bool = False,
    shared: Hashable | None = None,
    source: str | None = None,
    lines: dict[int, tuple[int, int]] | None = None,
) -> None:
    """The stage over `recorder`'s events, with the program's `source` beside it. Keys: → / Page Down next,
    ← / Page Up previous, Home, End, Space play, + - 0 zoom. It opens at `{key}_index` and keeps its position in the
    browser: a press never reruns the page; with `link`, the stage writes the event it stops at into the page's address
    (`?<link>=`). In an exercise the stage asks each step's sends before it shows them, and its answers are
    scored here. `shared` names a recording that is the same for every student (a lesson's program on a
    backend): its payload is built once per server."""
    index_key = f"{key}_index"
    total = len(recorder.events)
    index = max(0, min(st.session_state.get(index_key, 0), total - 1))
    # built once per recording and view (a Playground trace has thousands of events), not on every rerun
    presenter = presenter_mode()
    cached = st.session_state.get(f"{key}_payload")
    if cached is None or cached[0] is not recorder or cached[1] != (presenter, source):
        if shared is None:
            built = replay_payload(before, recorder, names, presenter, source, lines)
        else:
            built = _shared_payload(shared, presenter, source, lines, before, recorder, names)
        cached = st.session_state[f"{key}_payload"] = (recorder, (presenter, source), built)
    payload: StagePayload = {**with_view(cached[2], exercise, embed_mode()), "index": index, "file_stem": file_stem}
    # one component per picture (a new program starts a fresh one, at `index`); a rerun keeps the stage where it is
    with st.container(key=EMBEDDED) if embed_mode() else nullcontext():  # `?embed=1` shows this container alone
        reported = stage(
            payload,
            key=f"{key}_stage_{payload['signature']}",
            shared=None if shared is None else (shared, presenter, source),
            link=link,
        )
    st.session_state[index_key] = index
    if exercise:
        score_answers(reported.answers)
        score_caption()
    if not presenter_mode() and not embed_mode():
        left, right = st.columns(2)
        # each file built once per content, whoever asks and however often (ui/downloads.py); the replay opens where
        # this page opened the stage (a link's event), not where it stepped to since: presses never reach the server
        replay = ("replay", payload["signature"], payload["index"], payload["exercise"], file_stem)
        left.download_button(
            "Download this replay (HTML)",
            built_once(replay, lambda: export_html(payload, f"Replay: {file_stem}")),
            file_name=f"{file_stem}-replay.html",
            mime="text/html",
            on_click=NO_RERUN,
            help="One file that plays offline in any browser: for slides and course pages.",
        )
        right.download_button(
            "Download the event trace (JSON)",
            built_once(("trace", payload["signature"]), recorder.export_json),  # when pressed; capped in size
            file_name=f"{file_stem}-trace.json",
            mime="application/json",
            on_click=NO_RERUN,
        )
