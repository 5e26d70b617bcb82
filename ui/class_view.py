"""Class mode on the page (issue 27): the teacher's view (room code, join link and QR, the stage the room follows, the
questions and their votes, the report) and a student's (the stage following the teacher, the question, their own
result). The room lives in the class store (`classroom/`); the stages talk to the push route beside the app.

Secrets: the teacher key lives in the teacher's session (and in the private teacher link, never shown unasked);
a student's seat is in their own address bar (`?room=…&seat=…`), so a reload or a replica that stopped finds the seat
again; the join link carries the room code only.
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

import segno
import streamlit as st

from autodiff import BackwardRecorder, GraphSnapshot
from autodiff.stage import ClassroomLink, StagePayload, in_classroom, replay_payload
from autodiff.trace import BackwardFinished, StepStarted, SweepFreed
from classroom.errors import ClassroomError, InvalidInput, RoomNotFound
from classroom.live import classroom
from classroom.report import answers_csv, question_reports
from classroom.rooms import normalize_code
from classroom.views import DISCUSS, REVEALED, VOTE1, VOTE2, StudentView, TeacherView
from course.grading import MISTAKES, Question, grade, questions, right_answer
from course.programs import PROGRAMS, record_program
from playground import Limits as PlayLimits
from playground.interpreter import BackwardRun
from playground.workers import shared_pool

from .literal import code_span
from .navigation import lesson_intro
from .stage import stage
from .state import client_address, presenter_mode, shared_result

CLASS_PAGE = "pages/teach/class_mode.py"
PLAY_LIMITS = PlayLimits()
API = "class/api/"  # the push route, relative to the page (a prefix in front of the app keeps working)
TEACHER = "class_teacher"  # (room code, teacher key) in the teacher's session
ENDED = "class_ended"  # the code of the class this session just ended, or that ended under this student
SEAT_CHARS = 64


@dataclass(frozen=True)
class ClassReplay:
    """A recorded backward a class follows and its questions: plain data, built once per server."""

    key: str  # a lesson program's key, or "play:<sha256 of the program>"
    title: str
    before: GraphSnapshot
    recorder: BackwardRecorder
    names: dict[int, str]
    source: str
    lines: dict[int, tuple[int, int]] | None  # None: worked out from the source (a Playground program)
    questions: dict[str, Question]
    payloads: dict[bool, StagePayload] = field(default_factory=dict, compare=False)  # by presenter mode

    @property
    def events(self) -> int:
        return len(self.recorder.events)

    def position(self, index: int) -> str:
        """Where event `index` is, in the stage's words: "step 3 of 7 (event 11 of 25)"; the first event is step 0."""
        events = self.recorder.events
        finish = (SweepFreed, BackwardFinished)
        starts = [
            k == 0 or isinstance(e, StepStarted) or (isinstance(e, finish) and not isinstance(events[k - 1], finish))
            for k, e in enumerate(events)
        ]
        step = sum(starts[: index + 1]) if index else 0
        return f"step {step} of {sum(starts)} (event {index + 1} of {len(events)})"

    def payload(self, presenter: bool) -> StagePayload:
        if presenter not in self.payloads:  # the same for every visitor: built once per server and view
            self.payloads[presenter] = replay_payload(
                self.before, self.recorder, self.names, presenter, self.source, self.lines
            )
        return self.payloads[presenter]


def _recorded(
    key: str, title: str, run: BackwardRun, source: str, lines: dict[int, tuple[int, int]] | None
) -> ClassReplay:
    asked = {q.key: q for q in questions(run.before, run.recorder, run.names)}
    return ClassReplay(key, title, run.before, run.recorder, run.names, source, lines, asked)


def _lesson_replay(key: str) -> ClassReplay:
    run = record_program(key)
    backward = BackwardRun(run.before, run.recorder, run.names)
    return _recorded(key, PROGRAMS[key].title, backward, PROGRAMS[key].source, run.lines)


_PLAYED: OrderedDict[str, ClassReplay] = OrderedDict()  # Playground programs' replays, by the program's hash
_PLAYED_LOCK = threading.Lock()
PLAYED_KEPT = 16


def _keep_played(replay: ClassReplay) -> ClassReplay:
    with _PLAYED_LOCK:
        _PLAYED[replay.key] = replay
        _PLAYED.move_to_end(replay.key)
        while len(_PLAYED) > PLAYED_KEPT:
            _PLAYED.popitem(last=False)
    return replay


def _play_key(source: str) -> str:
    return "play:" + hashlib.sha256(source.encode()).hexdigest()[:24]


def _played_replay(source: str) -> ClassReplay:
    """A Playground program's replay on this server: run once in the Playground's worker pool (never in the
    server), then kept for every student of every class that follows it."""
    key = _play_key(source)
    with _PLAYED_LOCK:
        if key in _PLAYED:
            return _PLAYED[key]
    job = shared_pool().submit(key, source, PLAY_LIMITS, "numpy", client_address())
    if not job.wait(PLAY_LIMITS.seconds * 4 + 10) or job.result is None or job.result.backward is None:
        job.cancel()
        raise InvalidInput("This class's program did not replay on this server; ask your teacher to start it again.")
    return _keep_played(_recorded(key, "a Playground program", job.result.backward, source, None))


def teach_playground(source: str, backward: BackwardRun) -> None:
    """The Playground's program, as the teacher just ran it, becomes a class: its replay is kept on this server, its
    source in the store for the other replicas; the Class page opens on it."""
    replay = _keep_played(_recorded(_play_key(source), "a Playground program", backward, source, None))
    room = classroom().create_room("playground", replay.events - 1, program=source)
    st.session_state[TEACHER] = (room.code, room.teacher_key)
    st.switch_page(CLASS_PAGE)


def class_replay(replay: str, code: str) -> ClassReplay:
    """The replay room `code` follows: a lesson program (named in `replay`), or its stored Playground program."""
    if replay in PROGRAMS:
        return shared_result(_lesson_replay, replay)
    source = classroom().program(code)
    if source is None:
        raise InvalidInput("This class follows a replay this server does not know; ask your teacher.")
    return _played_replay(source)


def page_url(**params: str) -> str:
    """This page's address with `params` as its query: what the join link and the teacher link are."""
    url = urlsplit(st.context.url or "http://localhost:8501/class")
    return f"{url.scheme}://{url.netloc}{url.path}?{urlencode(params)}"


def spaced(code: str, keep_whole: bool = False) -> str:
    """ABCD-EFGH, as a person reads it; `keep_whole` joins the halves with a non-breaking hyphen (a title on a phone
    never splits the code; typed back, the hyphen is dropped like any other)."""
    return f"{code[:4]}{'‑' if keep_whole else '-'}{code[4:]}"


def qr_image(text: str) -> str:
    """A QR code as an image of its SVG, dark on white whatever the theme (phones read it best so). An `<img>`
    with a data URI, not inline SVG: `st.html`'s sanitizer keeps HTML only and drops an inline `<svg>` whole."""
    uri = segno.make(text, error="m").svg_data_uri(scale=5, dark="#000000", light="#ffffff", border=4)
    return f'<img src="{html.escape(uri)}" alt="QR code of the join link">'


def _seen(question_id: int | None, phase: str | None, answered: int) -> str:
    """The room as a page drew it, in the stage's own terms (stage.js `roomSeen`)."""
    return "none" if question_id is None else f"{question_id}:{phase}:{answered}"


def _stage(replay: ClassReplay, link: ClassroomLink, step: int, key: str) -> None:
    payload = in_classroom(replay.payload(presenter_mode()), link)  # a new dict
    payload["index"] = step
    stage(payload, key=f"{key}_{payload['signature']}")


def _asked_nodes(replay: ClassReplay) -> dict[str, int]:
    return {key: q.node for key, q in replay.questions.items() if q.node is not None}


# --- choosing: start a class, or join one ---


def start_or_join() -> None:
    left, right = st.columns(2, gap="large")
    with left, st.form("class_start"):
        st.subheader("Teach: start a class")
        st.markdown("The room joins from their phones; you step the replay and ask; they predict, you see it.")
        program = st.selectbox(
            "The replay", list(PROGRAMS), format_func=lambda k: PROGRAMS[k].title, key="class_program"
        )
        if st.form_submit_button("Start a class", type="primary", key="class_start_send") and program is not None:
            replay = class_replay(program, "")
            try:
                room = classroom().create_room(program, replay.events - 1)
            except ClassroomError as refused:
                st.error(str(refused))
            else:
                st.session_state[TEACHER] = (room.code, room.teacher_key)
                st.rerun()
    with right, st.form("class_join"):
        st.subheader("Learn: join a class")
        code = st.text_input("Room code (on the projector)", max_chars=20, placeholder="ABCD-EFGH", key="class_code")
        nickname = st.text_input("Nickname (optional; only your teacher sees it)", max_chars=40, key="class_nickname")
        if st.form_submit_button("Join", key="class_join_send"):
            join(code, nickname)


def join(code: str, nickname: str) -> None:
    try:
        joined = classroom().join(code, client_address(), nickname)
    except ClassroomError as refused:
        st.error(str(refused))
        return
    st.query_params.from_dict({"room": joined.code, "seat": joined.token})
    st.rerun()


def join_link_form(code: str) -> None:
    """A join link was opened: the code is filled in, a nickname may be given."""
    st.markdown(f"You are joining the class {code_span(spaced(normalize_code(code))[:9])}.")
    with st.form("class_join_link"):
        nickname = st.text_input(
            "Nickname (optional; only your teacher sees it)", max_chars=40, key="class_link_nickname"
        )
        if st.form_submit_button("Join", type="primary", key="class_link_join"):
            join(code, nickname)


# --- the teacher ---


def teacher_page(code: str, key: str) -> None:
    room = classroom()
    try:
        view = room.teacher_view(code, key)
    except ClassroomError as refused:
        st.session_state.pop(TEACHER, None)
        st.title("Class")
        st.error(f"{refused} Start a new class below.")
        start_or_join()
        return
    replay = class_replay(view.replay, view.code)
    join_url = page_url(room=view.code)
    left, right = st.columns([4, 1], vertical_alignment="top")  # the QR code whole, its quiet zone too
    with left:
        st.title(f"Class {spaced(view.code, keep_whole=True)}")
        st.markdown(f"Join at {code_span(join_url)} (room code {code_span(spaced(view.code))})")
        st.caption(f"{view.students} joined so far (the stage below counts them live). The replay: {replay.title}.")
    right.html(qr_image(join_url))
    link: ClassroomLink = {
        "role": "teacher",
        "room": view.code,
        "secret": key,
        "api": API,
        "seen": "",
        "join": f"Join at {join_url} · room code {spaced(view.code)}",
        "asked": _asked_nodes(replay),
        "mistakes": MISTAKES,
        "prompts": {},
    }
    index = _followed_index(view.step, replay)
    question_controls(view, replay, key, index)  # above the stage: in view while the teacher acts
    _stage(replay, link, index, "class_teacher_stage")
    after_class(view, key, replay)
    teacher_link(view.code, key)


def _followed_index(room_step: int, replay: ClassReplay) -> int:
    return max(0, min(room_step, replay.events - 1))


def _next_step_start(replay: ClassReplay, index: int) -> int | None:
    starts = sorted({q.event for q in replay.questions.values() if q.kind == "sends"})
    return next((start for start in starts if start >= index), None)


def question_controls(view: TeacherView, replay: ClassReplay, key: str, index: int) -> None:
    room = classroom()
    current = view.questions[-1] if view.questions else None
    if current is not None and current.question.phase != REVEALED:
        q = replay.questions[current.question.key]
        st.markdown(f"**Asked:** {q.prompt}")
        phase = current.question.phase
        cols = iter(st.columns([1, 1, 2]))
        if phase == VOTE1 and next(cols).button("Close vote 1: discuss", key="class_close"):
            _teacher_act(lambda: room.close_vote(view.code, key, current.question.id))
        if phase == DISCUSS and next(cols).button("Vote again", key="class_vote2"):
            _teacher_act(lambda: room.open_second_vote(view.code, key, current.question.id))
        if next(cols).button("Reveal the answer", key="class_reveal", type="primary"):
            _teacher_act(lambda: room.reveal(view.code, key, current.question.id))
        st.caption(_phase_sentence(phase))
        return
    if current is not None:
        revealed(replay.questions[current.question.key], replay)
    start = _next_step_start(replay, index)
    choices = [q for q in replay.questions.values() if q.kind != "sends" or q.event == start]
    with st.form("class_ask"):
        chosen = st.selectbox(
            "Ask the room",
            [q.key for q in choices],
            format_func=lambda k: replay.questions[k].prompt,
            key="class_question",
        )
        if st.form_submit_button("Ask", type="primary", key="class_ask_send") and chosen is not None:
            q = replay.questions[chosen]
            _teacher_act(lambda: room.open_question(view.code, key, index, q.kind, q.key))
    st.caption("A step's question is about the next step to run: ask before you press →, reveal, then step on.")


def _phase_sentence(phase: str) -> str:
    return {
        VOTE1: "Vote 1 is open: the room answers on their own. Close it when most have answered.",
        DISCUSS: "Vote 1 is closed. Let neighbours convince each other, then open vote 2.",
        VOTE2: "Vote 2 is open: the same question after the discussion.",
    }[phase]


def _teacher_act(action: Callable[[], object]) -> None:
    """A teacher's action on the room; refused in a sentence, else the page redraws the room as it now is."""
    try:
        action()
    except ClassroomError as refused:
        st.error(str(refused))
        return
    st.rerun()


def revealed(q: Question, replay: ClassReplay) -> None:
    """The answer and, for a step's send, the chain rule that gives it."""
    st.success(f"{q.prompt} The answer: {code_span(right_answer(q))}.")
    card = replay.payload(False)["cards"].get(str(q.event))
    if q.kind == "sends" and card is not None:
        rows = [i for i in card["inputs"] if i["node"] == q.node]
        for row in rows:
            st.markdown(f"The chain rule: {code_span(row['rule'])}; in numbers, {code_span(row['product'])}.")


def after_class(view: TeacherView, key: str, replay: ClassReplay) -> None:
    if not view.questions:
        return
    room = classroom()
    with st.expander("After the class: the report, the CSV, and ending the class"):
        rows = []
        for report in question_reports(room, view.code, key):
            gain = report.gain
            rows.append(
                {
                    "Question": replay.questions[report.question.key].prompt,
                    "Asked at": replay.position(report.question.step),
                    "Right in vote 1": f"{report.right_1} of {report.answered_1}",
                    "Right in vote 2": f"{report.right_2} of {report.answered_2}",
                    "Normalized gain": "—" if gain is None else f"{gain:.2f}",
                }
            )
        st.table(rows)
        names = st.checkbox("Include nicknames in the CSV", key="class_csv_names")
        st.download_button(
            "Download the answers (CSV)",
            answers_csv(room, view.code, key, nicknames=names),
            file_name=f"class-{view.code}.csv",
            mime="text/csv",
        )
        st.markdown("Ending the class deletes every answer at once: download the CSV first.")
        sure = st.checkbox("Yes: delete this class's answers and end it", key="class_end_sure")
        if st.button("End the class", key="class_end", disabled=not sure):
            try:
                room.end_room(view.code, key)
            except ClassroomError as refused:
                st.error(str(refused))
                return
            st.session_state.pop(TEACHER, None)
            st.session_state[ENDED] = view.code
            st.rerun()


def teacher_link(code: str, key: str) -> None:
    """The private teacher link, in the sidebar: off the projector's main area, and only when asked for."""
    with st.sidebar.expander("Your teacher link (private)"):
        st.markdown("It reopens this class on another device. Anyone with it can run your class: keep it private.")
        st.code(page_url(room=code, teacher=key), language=None, wrap_lines=True)


# --- a student ---


def student_page(code: str, seat: str) -> None:
    room = classroom()
    try:
        view = room.student_view(code, seat)
    except RoomNotFound:  # the class ended under this student: said again after a reload, too
        st.query_params.from_dict({"ended": normalize_code(code)[:16]})
        st.rerun()
    except ClassroomError as refused:
        st.title("Class")
        st.error(f"{refused} Ask your teacher for the room code and join again.")
        st.query_params.clear()
        return
    try:
        replay = class_replay(view.replay, view.code)
    except ClassroomError as refused:
        st.error(str(refused))
        return
    q = view.question
    link: ClassroomLink = {
        "role": "student",
        "room": view.code,
        "secret": seat,
        "api": API,
        "join": "",
        "seen": _seen(q.id if q else None, q.phase if q else None, len(view.answers)),
        "asked": {},
        "mistakes": {},
        "prompts": {key: q.prompt for key, q in replay.questions.items()},
    }
    st.subheader(f"Class {spaced(view.code, keep_whole=True)}")
    st.caption("The stage follows your teacher's steps; questions appear here.")
    if q is not None:
        student_question(view, replay, code, seat)
    _stage(replay, link, _followed_index(view.step, replay), "class_student_stage")


def student_question(view: StudentView, replay: ClassReplay, code: str, seat: str) -> None:
    assert view.question is not None
    asked, phase = replay.questions[view.question.key], view.question.phase
    mine = {a.vote: a for a in view.answers}
    if phase == REVEALED:
        revealed(asked, replay)
        last = mine.get(2) or mine.get(1)
        if last is None:
            st.info("You did not answer this one.")
        elif last.right:
            st.success(f"Your answer {code_span(last.answer)} was right.")
        else:
            why = MISTAKES.get(last.mistake or "", "")
            st.error(f"Your answer {code_span(last.answer)} was not right{': you ' + why if why else ''}.")
        return
    st.markdown(f"**{asked.prompt}**")
    if phase == DISCUSS:
        st.info("Vote 1 is closed. Discuss with your neighbours: your teacher opens a second vote.")
        return
    vote = 1 if phase == VOTE1 else 2
    with st.form(f"class_answer_{view.question.id}_{vote}"):
        hint = "names, or none" if asked.kind == "remaining" else "numbers, such as 1.0, 2.0, or None"
        text = st.text_input(f"Your answer, vote {vote} ({hint})", max_chars=200, key="class_answer_text")
        if st.form_submit_button("Send my answer", type="primary", key="class_answer_send"):
            send_answer(asked, code, seat, view.question.id, text)
    if vote in mine:
        st.caption(f"Your answer: {code_span(mine[vote].answer)}. You can change it until the vote closes.")


def send_answer(asked: Question, code: str, seat: str, question_id: int, text: str) -> None:
    graded = grade(asked, text)
    if graded.right is None:
        st.error(f"{graded.words} Your answer was not sent.")
        return
    try:
        classroom().answer(code, seat, question_id, text, graded.right, graded.mistake)
    except ClassroomError as refused:
        st.error(str(refused))
        return
    st.rerun()


# --- the page's entry ---


SEAT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def class_page(intro: str) -> None:
    """The page: the start (with its introduction), a join link's form, the teacher's or a student's view."""
    params = st.query_params
    teacher_key = params.get("teacher")
    if teacher_key and params.get("room"):  # the private teacher link: into the session, out of the address bar
        st.session_state[TEACHER] = (normalize_code(params["room"])[:16], teacher_key[:SEAT_CHARS])
        params.clear()
    if TEACHER in st.session_state:
        teacher_page(*st.session_state[TEACHER])
    elif params.get("room") and SEAT.match(params.get("seat", "")):
        student_page(params["room"][:20], params["seat"])
    elif params.get("room"):
        lesson_intro("Class", intro)
        join_link_form(params["room"][:20])
    else:
        lesson_intro("Class", intro)
        ended = st.session_state.pop(ENDED, None) or params.get("ended", "")[:20]
        if ended:
            st.info(f"This class has ended ({spaced(normalize_code(ended))[:9]}); its answers are deleted.")
        start_or_join()
