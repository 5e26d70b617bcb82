"""Class mode on the page (issue 27): the teacher's view (room code, join link and QR, the stage the room follows, the
questions and their votes, the report) and a student's (the stage following the teacher, the question, their own
result). The room lives in the class store (`classroom/`); the stages talk to the push route beside the app.

Secrets (ui/class_secret.py): the teacher key lives in the teacher's session and in the private teacher link's
fragment, never shown unasked; a student's seat in their session and their browser's storage, so a reload or a replica
that stopped finds the seat again. Addresses carry the room code only.
"""

from __future__ import annotations

import html
import os
import secrets
from collections.abc import Callable
from typing import Literal
from urllib.parse import urlencode, urlsplit

import segno
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from autodiff.stage import ClassroomLink, ClassWords, in_classroom, redacted
from classroom.errors import ClassroomError, RoomNotFound
from classroom.live import classroom
from classroom.report import answers_csv, question_reports
from classroom.rooms import normalize_code
from classroom.views import DISCUSS, REVEALED, VOTE1, VOTE2, TeacherView
from classroom.words import OPEN_QUESTION_HOLDS, ROOM_PHASES, STUDENT_PHASES, TEACHER_PHASES, TRANSFER_OPEN
from course.grading import MISTAKES, Question, right_answer
from course.programs import PROGRAMS
from course.transfer import transfer_for, transfer_key
from playground.results import BackwardRun

from . import press
from .class_replays import ClassReplay, asked_question, class_replay, keep_played, room_seed
from .class_secret import SEAT, TEACHER, class_secret, forget_seat, keep_seat
from .code import code_block
from .downloads import NO_RERUN
from .join_address import UNREACHABLE, join_address
from .literal import code_span
from .navigation import lesson_intro
from .stage import stage
from .state import client_address, presenter_mode

CLASS_PAGE = "pages/teach/class_mode.py"
API = "class/api/"  # the push route, relative to the page (a prefix in front of the app keeps working)
ENDED = "class_ended"  # the code of the class this session just ended, or that ended under this student
# what both stages say in class mode's words, sent in their link: the stage's code holds no copy (classroom/words.py)
STAGE_WORDS: ClassWords = {"holds": OPEN_QUESTION_HOLDS, "room_phases": ROOM_PHASES, "student_phases": STUDENT_PHASES}


def teach_playground(source: str, backward: BackwardRun, lines: dict[int, tuple[int, int]]) -> None:
    """The Playground's program, as the teacher just ran it, becomes a class: its replay is kept on this server, its
    source in the store for the other replicas; the Class page opens on it."""
    replay = keep_played(source, backward, lines)
    try:
        room = classroom().create_room("playground", replay.events - 1, program=source, **_starter())
    except ClassroomError as refused:  # the server's classes, or this network's, at their limit
        st.error(str(refused))
        return
    st.session_state[TEACHER] = (room.code, room.teacher_key)
    st.switch_page(CLASS_PAGE)


def _starter() -> dict[str, str]:
    """Who starts a class, as the store limits it: the browser's address, and this session (a random id of its own)."""
    session = st.session_state.setdefault("class_starter", secrets.token_urlsafe(16))
    return {"client": client_address(), "session": session}


def page_url(**params: str) -> str:
    """This page's address with `params` as its query: the one phones in the room can open when it is known
    (ui/join_address.py), else this page's own (the teacher link then reopens the class on this computer only)."""
    own = st.context.url or "http://localhost:8501/class"
    url = urlsplit(own)
    base = join_address(own, os.environ) or f"{url.scheme}://{url.netloc}{url.path}"
    return f"{base}?{urlencode(params)}"


def join_link(code: str) -> str | None:
    """The students' link to room `code` (its code only, never the teacher key), or None when no address a phone can
    open is known: then the page says so instead of a link and a QR code naming this computer itself."""
    return page_url(room=code) if join_address(st.context.url, os.environ) else None


def spaced(code: str, keep_whole: bool = False) -> str:
    """ABCD-EFGH, as a person reads it; `keep_whole` joins the halves with a non-breaking hyphen (a title on a phone
    never splits the code; typed back, the hyphen is dropped like any other)."""
    return f"{code[:4]}{'‑' if keep_whole else '-'}{code[4:]}"


def qr_image(text: str, scale: int = 5) -> str:
    """A QR code as an image of its SVG, dark on white whatever the theme (phones read it best so). An `<img>`
    with a data URI, not inline SVG: `st.html`'s sanitizer keeps HTML only and drops an inline `<svg>` whole."""
    uri = segno.make(text, error="m").svg_data_uri(scale=scale, dark="#000000", light="#ffffff", border=4)
    return f'<img src="{html.escape(uri)}" alt="QR code of the join link">'


def _stage(replay: ClassReplay, link: ClassroomLink, step: int, key: str) -> None:
    payload = in_classroom(replay.payload(presenter_mode()), link)  # a new dict
    if link["role"] == "student":  # what the room has not reached yet is not in the student's browser
        payload = redacted(payload, step)
    payload["index"] = step
    stage(payload, key=f"{key}_{payload['signature']}")


def _followed(replay: str, code: str) -> ClassReplay:
    return class_replay(replay, code, client_address())


def _asked_nodes(replay: ClassReplay, code: str) -> dict[str, int]:
    """The node each question is about, by the opaque id the route sends the room's stages (never the stored key)."""
    room = classroom()
    return {room.question_token(code, key): q.node for key, q in replay.questions.items() if q.node is not None}


# --- choosing: start a class, or join one ---


def start_or_join() -> None:
    left, right = st.columns(2, gap="large")
    with left, st.form("class_start"):
        st.subheader("Teach: start a class")
        st.markdown("The room joins from their phones; you step the replay and ask; they predict, you see it.")
        program = st.selectbox(
            "The replay", list(PROGRAMS), format_func=lambda k: PROGRAMS[k].title, key="class_program"
        )
        if press.submit_button("Start a class", "class_start_send", type="primary") and program is not None:
            replay = _followed(program, "")
            try:
                room = classroom().create_room(program, replay.events - 1, **_starter())
            except ClassroomError as refused:
                st.error(str(refused))
            else:
                st.session_state[TEACHER] = (room.code, room.teacher_key)
                st.session_state.pop(ENDED, None)
                st.rerun()
    with right, st.form("class_join"):
        st.subheader("Learn: join a class")
        code = st.text_input("Room code (on the projector)", max_chars=20, placeholder="ABCD-EFGH", key="class_code")
        nickname = st.text_input("Nickname (optional; only your teacher sees it)", max_chars=40, key="class_nickname")
        if press.submit_button("Join", "class_join_send"):
            join(code, nickname)


def join(code: str, nickname: str) -> None:
    try:
        joined = classroom().join(code, client_address(), nickname)
    except ClassroomError as refused:
        st.error(str(refused))
        return
    keep_seat(joined.code, joined.token)
    st.query_params.from_dict({"room": joined.code})
    st.rerun()


def join_link_form(code: str) -> None:
    """A join link was opened: the code is filled in, a nickname may be given."""
    st.markdown(f"You are joining the class {code_span(spaced(normalize_code(code))[:9])}.")
    with st.form("class_join_link"):
        nickname = st.text_input(
            "Nickname (optional; only your teacher sees it)", max_chars=40, key="class_link_nickname"
        )
        if press.submit_button("Join", "class_link_join", type="primary"):
            join(code, nickname)


# --- the teacher ---


def teacher_page(code: str, key: str) -> None:
    room = classroom()
    try:
        view = room.teacher_view(code, key)
    except RoomNotFound:  # this session's class ended (in another tab, at the end of its lifetime): its data is gone
        st.session_state.pop(TEACHER, None)
        st.session_state[ENDED] = code
        st.rerun()  # the start, saying which class ended, as after the End button
    except ClassroomError as refused:
        st.session_state.pop(TEACHER, None)
        st.title("Class")
        st.error(f"{refused} Start a new class below.")
        start_or_join()
        return
    replay = _followed(view.replay, view.code)
    join_url = join_link(view.code)
    newest = view.questions[-1].question if view.questions else None
    # a projector: the room code, the QR code and the question's controls in a bar that stays above the stage, so the
    # whole graph and its answer badges are in view with them on one screen (the stage fits the rest below it)
    compact = presenter_mode()
    bar = st.container(key="stage_bar") if compact else st.container()
    with bar:
        class_header(view, replay, join_url, compact)
    room_lock(view, key, st.sidebar if compact else bar)  # a projector's bar keeps its row for the graph
    link: ClassroomLink = {
        "role": "teacher",
        "room": view.code,
        "secret": key,
        "api": API,
        # in view whenever the stage is: on a projector the bar above the stage already says it
        "join": "" if compact else f"Join at {join_url} · room code {spaced(view.code)}" if join_url else "",
        "asked": _asked_nodes(replay, view.code),
        "mistakes": MISTAKES,
        "phase": f"{newest.id}:{newest.phase}" if newest else "none",  # the controls below are this phase's
        "histogram": bool(newest and st.session_state.get(_histogram_key(newest.id))),
        "said": STAGE_WORDS,
    }
    index = _followed_index(view.step, replay)
    with bar:
        question_controls(view, replay, key, index)  # above the stage: in view while the teacher acts
    _stage(replay, link, index, "class_teacher_stage")
    after_class(view, key, replay)
    teacher_link(view.code, key)


def room_lock(view: TeacherView, key: str, where: DeltaGenerator) -> None:
    """Close the room to new seats once everyone is in, as polling tools do (one person could otherwise take seat after
    seat), and reopen it for a late student: a join is refused in a sentence while it is closed."""
    with where:
        if view.locked:
            st.caption("The room is closed to new students: a late one is told so. Reopen it to let them join.")
        if press.button(
            "Reopen the room to new students" if view.locked else "Close the room to new students",
            "class_lock",
            help="Once everyone is in: nobody else can take a seat until you reopen it.",
        ):
            _teacher_act(lambda: classroom().lock_room(view.code, key, not view.locked))


def class_header(view: TeacherView, replay: ClassReplay, join_url: str | None, compact: bool) -> None:
    """The room code, the join link and its QR code: one line beside a small QR code on a projector (`compact`)."""
    left, right = st.columns([6, 1] if compact else [4, 1], vertical_alignment="top")  # the QR code whole
    code = spaced(view.code, keep_whole=True)
    with left:
        if compact:
            where = f"join at {code_span(join_url)}" if join_url else "no address a phone can open (see below)"
            st.markdown(f"**Class {code}** · {where}")
        else:
            st.title(f"Class {code}")
            if join_url:
                st.markdown(f"Join at {code_span(join_url)} (room code {code_span(spaced(view.code))})")
        if not join_url:
            st.warning(UNREACHABLE)
            st.markdown(f"Room code {code_span(spaced(view.code))}")
        if not compact:
            st.caption(f"The replay: {replay.title}. The stage below counts who joined, live.")
    if join_url:  # on a projector the code is large until the first question (the room joins), then makes room
        right.html(qr_image(join_url, scale=5 if not compact else 3 if not view.questions else 2))


def _followed_index(room_step: int, replay: ClassReplay) -> int:
    return max(0, min(room_step, replay.events - 1))


def _next_step_start(replay: ClassReplay, index: int) -> int | None:
    starts = sorted({q.event for q in replay.questions.values() if q.kind == "sends"})
    return next((start for start in starts if start > index), None)  # at its start its card already shows it


SECONDS = {0: "No time limit", 15: "15 seconds", 30: "30 seconds", 60: "1 minute", 90: "90 seconds", 120: "2 minutes"}
SECONDS_CHOSEN = "class_seconds"  # the select box's key
LIMIT = "class_limit"  # the countdown of the last question asked: vote 2 and the transfer keep it (not a widget's
# key, so it outlives the runs that do not draw the select box)


def question_controls(view: TeacherView, replay: ClassReplay, key: str, index: int) -> None:
    room = classroom()
    compact = presenter_mode()  # a projector: one row each, the stage's tally says the phase
    current = view.questions[-1].question if view.questions else None
    limit = st.session_state.get(LIMIT) or None
    if current is not None and current.phase != REVEALED:
        q, _, source = asked_question(replay, current.key, room_seed(view.code))
        with st.container(horizontal=True, vertical_alignment="center"):  # buttons wrap whole, never cut
            st.markdown(f"**Asked{' (transfer)' if current.is_transfer else ''}:** {q.prompt}", width="content")
            if current.phase == VOTE1 and not current.is_transfer and press.button("Close vote 1", "class_close"):
                _teacher_act(lambda: room.close_vote(view.code, key, current.id))
            if current.phase == DISCUSS and press.button("Vote again", "class_vote2"):
                _teacher_act(lambda: room.open_second_vote(view.code, key, current.id, limit))
            if press.button("Reveal the answer", "class_reveal", type="primary"):
                _teacher_act(lambda: room.reveal(view.code, key, current.id))
            if current.phase in (DISCUSS, VOTE2):  # peer instruction's choice: the histogram, never who is right
                st.toggle(HISTOGRAM, key=_histogram_key(current.id), help=HISTOGRAM_HELP, width="content")
        if source:  # a transfer: the program it is about, for the room to read (their phones show it too)
            code_block(source)
        if not compact:
            st.caption(TRANSFER_OPEN if current.is_transfer else TEACHER_PHASES[current.phase])
        return
    if current is not None:  # one row on a projector: the answer worked out, and its transfer question
        row = st.container(horizontal=True, wrap=False, vertical_alignment="center") if compact else st.container()
        with row:
            revealed(asked_question(replay, current.key, room_seed(view.code))[0], compact)
            if not current.is_transfer:
                transfer_button(view, replay, key, index, current.id, current.key, limit)
    start = _next_step_start(replay, index)
    choices = [q for q in replay.questions.values() if q.kind != "sends" or q.event == start]
    # a projector's row: the labels stay, for screen readers
    labels: Literal["collapsed", "visible"] = "collapsed" if compact else "visible"
    with st.form("class_ask", border=not compact):
        left, middle, right = st.columns([6, 2, 1] if compact else [3, 1, 0.01], vertical_alignment="bottom")
        chosen = left.selectbox(
            "Ask the room",
            [q.key for q in choices],
            format_func=lambda k: replay.questions[k].prompt,
            key="class_question",
            label_visibility=labels,
        )
        middle.selectbox(
            "Time to answer",
            list(SECONDS),
            format_func=SECONDS.__getitem__,
            key=SECONDS_CHOSEN,
            label_visibility=labels,
        )
        send = press.submit_button("Ask", "class_ask_send", where=right if compact else st, type="primary")
        if send and chosen is not None:
            q = replay.questions[chosen]
            asked_limit = st.session_state[LIMIT] = st.session_state.get(SECONDS_CHOSEN) or None
            _teacher_act(lambda: room.open_question(view.code, key, index, q.kind, q.key, asked_limit))
    if not compact:
        st.caption("A step's question is about the next step to run: ask before you press →, reveal, then step on.")


HISTOGRAM = "Show the room vote 1's answers"
HISTOGRAM_HELP = "How many gave each answer, without saying which is right: that waits for the reveal."


def _histogram_key(question: int) -> str:
    """The toggle that shows the room question `question`'s vote 1 answers: off for each new question."""
    return f"class_histogram_{question}"


def transfer_button(
    view: TeacherView, replay: ClassReplay, key: str, index: int, revealed_id: int, asked: str, limit: int | None
) -> None:
    """The revealed question's transfer: an equivalent question on another node or program, answered alone once
    (peer instruction's measure of what the discussion taught)."""
    question = replay.questions.get(asked)
    transfer = None if question is None else transfer_for(question, view.replay, room_seed(view.code))
    if transfer is None:
        if not presenter_mode():  # a projector's bar keeps its room for the graph: no button says it there
            st.caption("No lesson graph has a question equivalent to this one: it has no transfer question.")
        return
    q = transfer.question
    label = "Ask its transfer question" if presenter_mode() else f"Ask the transfer question: {q.prompt}"
    if press.button(label, "class_transfer", help=q.prompt):
        room = classroom()
        _teacher_act(
            lambda: room.open_question(view.code, key, index, q.kind, transfer_key(transfer), limit, revealed_id)
        )


def _teacher_act(action: Callable[[], object]) -> None:
    """A teacher's action on the room; refused in a sentence, else the page redraws the room as it now is."""
    try:
        action()
    except ClassroomError as refused:
        st.error(str(refused))
        return
    st.rerun()


def revealed(q: Question, compact: bool = False) -> None:
    """The answer, and how it is worked out in numbers (the sum over paths, the local derivative); in one paragraph
    on a projector (`compact`), where the bar above the stage must leave the graph its room."""
    if compact:
        st.markdown(f"**The answer:** {code_span(right_answer(q))}. {q.worked}".strip(), width="stretch")
    else:
        st.success(f"{q.prompt} The answer: {code_span(right_answer(q))}. {q.worked}".strip())


def after_class(view: TeacherView, key: str, replay: ClassReplay) -> None:
    """The report and the CSV once a question was asked; ending the class from the start (a class that only steps
    is ended, and its data deleted, like any other)."""
    room = classroom()
    with st.expander("After the class: the report, the CSV, and ending the class"):
        if view.questions:
            _report(view, key, replay)
        else:
            st.markdown("No question was asked yet: there is no report and no answer to download.")
        sure = st.checkbox("Yes: delete this class's answers and end it", key="class_end_sure")
        if press.button("End the class", "class_end", disabled=not sure):
            try:
                room.end_room(view.code, key)
            except ClassroomError as refused:
                st.error(str(refused))
                return
            st.session_state.pop(TEACHER, None)
            st.session_state[ENDED] = view.code
            st.rerun()


def _report(view: TeacherView, key: str, replay: ClassReplay) -> None:
    """Right per question and vote, the gains, and the CSV of the answers."""
    room = classroom()
    rows = []
    for report in question_reports(room, view.code, key):
        rows.append(
            {
                "Question": asked_question(replay, report.question.key, room_seed(view.code))[0].prompt,
                "Asked at": replay.position(report.question.step),
                "Right in vote 1": f"{report.right_1} of {report.answered_1}",
                "Right in vote 2": f"{report.right_2} of {report.answered_2}",
                "Gain, vote 1 to 2": _gain(report.gain),
                "Right in the transfer": "not asked"
                if report.transfer is None
                else f"{report.right_t} of {report.answered_t}",
                "Gain, vote 1 to transfer": _gain(report.transfer_gain),
            }
        )
    st.table(rows)
    names = st.checkbox("Include nicknames in the CSV", key="class_csv_names")
    st.download_button(
        "Download the answers (CSV)",
        answers_csv(room, view.code, key, nicknames=names),
        file_name=f"class-{view.code}.csv",
        mime="text/csv",
        on_click=NO_RERUN,
    )
    st.markdown("Ending the class deletes every answer at once: download the CSV first.")


def _gain(gain: float | None) -> str:
    """Hake's normalized gain, or a dash where it has no meaning (no answers, or all right at first)."""
    return "—" if gain is None else f"{gain:.2f}"


def teacher_link(code: str, key: str) -> None:
    """The private teacher link, in the sidebar: off the projector's main area, and only when asked for."""
    with st.sidebar.expander("Your teacher link (private)"):
        st.markdown("It reopens this class on another device. Anyone with it can run your class: keep it private.")
        # the key in the fragment: a browser never sends it, so no request, Referer or log carries it
        st.code(f"{page_url(room=code)}#{urlencode({'teacher': key})}", language=None, wrap_lines=True)


# --- a student ---


def student_page(code: str, seat: str) -> None:
    """A student's page: drawn once (at the join, or a reload); the stage then draws every class event itself."""
    room = classroom()
    try:
        view = room.student_view(code, seat)
    except RoomNotFound:  # the class ended under this student: said again after a reload, too
        forget_seat()
        st.query_params.from_dict({"ended": normalize_code(code)[:16]})
        st.rerun()
    except ClassroomError as refused:
        forget_seat()
        st.title("Class")
        st.error(f"{refused} Ask your teacher for the room code and join again.")
        st.query_params.clear()
        return
    st.query_params.from_dict({"room": view.code})  # a reload comes back to this class (the seat is the browser's)
    try:
        replay = _followed(view.replay, view.code)
    except ClassroomError as refused:
        st.error(str(refused))
        return
    link: ClassroomLink = {
        "role": "student",
        "room": view.code,
        "secret": seat,
        "api": API,
        "join": "",
        "asked": {},
        "mistakes": {},
        "phase": "",
        "histogram": False,
        "said": STAGE_WORDS,
    }
    st.subheader(f"Class {spaced(view.code, keep_whole=True)}")
    st.caption("The stage follows your teacher's steps; their questions appear in it, with a box for your answer.")
    _stage(replay, link, _followed_index(view.step, replay), "class_student_stage")


# --- the page's entry ---


def class_page(intro: str) -> None:
    """The page: the start (with its introduction), a join link's form, the teacher's or a student's view."""
    class_secret()
    params = st.query_params
    room = params.get("room", "")[:20]
    seat = st.session_state.get(SEAT)
    if TEACHER in st.session_state:
        teacher_page(*st.session_state[TEACHER])
    elif seat and (not room or normalize_code(room)[:16] == seat[0]):  # a join link to another class: its form
        student_page(*seat)
    elif room:  # a reload shows the form until the browser says which seat it keeps (a client without it joins)
        lesson_intro("Class", intro)
        join_link_form(room)
    else:
        lesson_intro("Class", intro)
        # kept through later reruns (a late report from the ended class's stage, say) until another class starts
        ended = st.session_state.get(ENDED) or params.get("ended", "")[:20]
        if ended:
            st.info(f"This class has ended ({spaced(normalize_code(ended))[:9]}); its answers are deleted.")
        start_or_join()
