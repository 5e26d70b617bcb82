"""Class mode under load (issues 27 and 43; a benchmark, not a test): how soon the room follows the teacher, how soon
the teacher sees the answers, and what that costs the server, now that no class event reruns a student's page.

A simulated student does what a student's browser does on the class page:
- opens the join link (page "class" with ?room=…) and presses Join, through Streamlit's agent API
  (`--server.enableAgentApi true`, on these bench servers only): the server holds a real Streamlit session per
  student, as in a class. Its seat is read from the stage the join's run drew (a browser keeps it in its storage).
  Those are the page's only runs, before the measured window; the agent API is not used again;
- follows: a loop of GET /class/api/follow?room=…&since=… with its seat in X-Class-Seat (the stage's joinRoom),
  sending the page's cookies (behind nginx they keep it on its page's replica);
- when a follow answer carries an open vote (`question.vote`) it has not answered (nor in `mine`), its stage draws the
  form at once; the student answers after a think time spread over --answer-window: POST /class/api/answer?room=… with
  {"question": id, "answer": text} and the same header, as the stage sends it (graded on the server, a receipt back,
  checked against what was sent). The script checks that every answer is in the store.
The teacher makes the room and opens the question through the Classroom API (its page's reruns are not measured),
presses → with POST /class/api/step (the stage's sendStep), and its stage's GET /class/api/watch loop sees the answers.

The run: --presses presses 1.5 s apart, then x's gradient asked (vote 1), the vote closed, vote 2 opened. Figures:
(a) press → every student's stage: from just before a step's POST to each student's long poll that returned it
    (every student and press; under it, press → the last of the room's stages, every press);
(b) answer → the teacher's histogram: from just before a student's POST to the first watch answer whose count
    (votes[n].answered) includes it (answers ranked by the time the store recorded them); under it, POST → stored and
    POST → receipt (the answer route's own share); and vote opened → a student's form drawn: from just before the
    teacher's call that opened the vote to the student's follow answer carrying it (the stage draws the form from it);
(c) server CPU (utime + stime of the Streamlit processes, /proc/<pid>/stat) from the first press to the end of vote 2,
    per second of wall time and per student; nginx and PostgreSQL apart. Beside it, the floor, "sessions held, no
    calls": as many Streamlit processes serving a trivial page (a title and a line) as the configuration has, each
    student's session opened on one of them before the window (one agent call, as the class page's), then nothing
    for the same window: what holding the sessions and the processes costs, measured right after in the same run.
    A student's page makes no Streamlit call in the window any more, so the difference is class mode's own (the
    routes, their watcher, the store's reads).
The load generator (this process: asyncio and httpx) shares the machine; its CPU is printed too, and the machine's load
average before each configuration (other work on it shows there).

Configurations: 30 students on one `streamlit run app.py` with an SQLite file; 60 and 120 students on two replicas
behind nginx (deploy/replicas.py) with a PostgreSQL cluster the script starts (tests/postgres.py). Each takes one to
two minutes. Run: python bench/class_mode.py [--configs sqlite postgresql postgresql120] [--students N] [--presses 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import select, text  # noqa: E402

from bench.classroom import agent_api, new_student, p95, served, write_trivial_page  # noqa: E402
from classroom.live import DATABASE_ENV  # noqa: E402
from classroom.rooms import Classroom, secret_hash  # noqa: E402
from classroom.store import answers, open_store, students  # noqa: E402
from course.class_numbers import class_run  # noqa: E402
from course.grading import Question, questions, right_answer  # noqa: E402
from course.programs import record_program  # noqa: E402
from tests.browser.harness import AgentSession, cpu_seconds, streamlit_server, texts  # noqa: E402
from tests.postgres import postgres_bin_dir, postgres_cluster  # noqa: E402

SERVER = agent_api(600)  # a student's session lives through the whole run
PORTS = range(8800, 8900)  # the PostgreSQL cluster's, nginx's and the replicas
PROGRAM = "seed"
PRESS_GAP_S = 1.5
DISCUSS_S = 2.0  # between the votes
GOAL_S = 1.0
GOAL_CPU_MS = 3.0  # server CPU a second a following student (issue 43)
OPENING = 4  # pages opened at once before the window (the warm-up is not measured)
LONG_POLL_TIMEOUT = httpx.Timeout(30.0)  # the route answers within 20 s
LOOP, ANSWER = "loop", "answer"  # a stage's long-poll loop; a student's answer (think, then POST)


@dataclass(frozen=True)
class Config:
    name: str
    students: int
    replicas: int  # 0: one `streamlit run app.py`, no nginx
    database: str  # "sqlite" or "postgresql"


CONFIGS = {
    "sqlite": Config("one process, SQLite", 30, 0, "sqlite"),
    "postgresql": Config("2 replicas + nginx, PostgreSQL", 60, 2, "postgresql"),
    "postgresql120": Config("2 replicas + nginx, PostgreSQL", 120, 2, "postgresql"),
}


@dataclass
class Student:
    number: int
    seat: str
    agent: AgentSession
    http: httpx.AsyncClient | None = None
    arrivals: list[tuple[float, int]] = field(default_factory=list)  # (when, step) of each follow answer
    open_vote: tuple[int, int] | None = None  # (question id, vote) open in the last follow answer
    answering: set[int] = field(default_factory=set)  # votes whose form was drawn
    sent: dict[int, tuple[float, str]] = field(default_factory=dict)  # vote -> (when posted, the answer)
    receipts: dict[int, float] = field(default_factory=dict)  # vote -> when its receipt came back


def pick_answer(q: Question, number: int, vote: int) -> str:
    """Most right, the rest the graph's own mistakes (vote 1: 60% right, vote 2: 90%)."""
    rng = random.Random(number * 10 + vote)
    if q.values is None or rng.random() < (0.6 if vote == 1 else 0.9):
        return right_answer(q)
    return ", ".join(f"{v:g}" for v in rng.choice(q.wrong)[1])


def tree_cpu(root: int) -> float:
    """CPU seconds of a process and all its descendants, ended ones included (their cutime, cstime)."""

    def stat(pid: int | str) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(stat(entry.name)[1]), []).append(int(entry.name))
            except OSError:
                continue  # it ended meanwhile
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += sum(int(v) for v in stat(pid)[11:15])  # utime, stime, cutime, cstime
        except OSError:
            continue
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


@contextmanager
def class_database(kind: str, tmp: Path) -> Iterator[tuple[str, int | None]]:
    """The store's URL, set in $CLASSROOM_DATABASE so that servers started inside use it; yields it and PostgreSQL's
    postmaster pid (None for SQLite)."""
    with ExitStack() as stack:
        postmaster = None
        if kind == "sqlite":
            url = f"sqlite:///{tmp / 'class.sqlite3'}"
        else:
            bin_dir = postgres_bin_dir()
            if bin_dir is None:
                raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
            url = stack.enter_context(postgres_cluster(bin_dir, PORTS))
            store = open_store(url)
            with store.read() as conn:  # a backend's parent is the postmaster
                backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
            store.close()
        before = os.environ.get(DATABASE_ENV)
        os.environ[DATABASE_ENV] = url
        try:
            yield url, postmaster
        finally:
            os.environ.pop(DATABASE_ENV)
            if before is not None:
                os.environ[DATABASE_ENV] = before


@dataclass
class AnswerDelays:
    shown: list[float]  # POST → the teacher's count
    stored: list[float]  # POST → the store's record, on the machine's clock
    receipts: list[float]  # POST → its receipt
    missing: int  # sent, never in the store or never counted
    differing: int  # in the store, not what was sent


def open_page(s: Student, code: str) -> str | None:
    """A student's page: the join link opened and Join pressed (two agent calls), its seat taken from the stage the
    join's run drew; None, or what went wrong."""
    try:
        s.agent.interact(page="class", query_params={"room": [code]})
        snapshot = s.agent.interact(trigger={"key": "class_link_join"})
    except (OSError, http.client.HTTPException, ValueError) as error:
        return f"opening a page: {error!r}"[:160]
    shown, seat = texts(snapshot), student_seat(snapshot)
    if seat is None or code[:4] not in shown or code[4:] not in shown:
        return "a page opened without its class"
    s.seat = seat
    return None


def student_seat(tree: Any) -> str | None:
    """The seat in a snapshot: the student stage's classroom link (`secret`), wherever the tree holds its data."""
    if isinstance(tree, str) and '"secret"' in tree:
        with contextlib.suppress(ValueError):
            return student_seat(json.loads(tree))
    if isinstance(tree, dict):
        if tree.get("role") == "student" and isinstance(tree.get("secret"), str):
            return tree["secret"]
        tree = list(tree.values())
    if isinstance(tree, list):
        return next((seat for seat in map(student_seat, tree) if seat is not None), None)
    return None


class ClassRun:
    """One class on running servers: the room, its students, the teacher, and what they measured."""

    def __init__(self, url: str, room: Classroom, count: int, answer_window_s: float) -> None:
        self.url, self.room, self.answer_window_s = url, room, answer_window_s
        self.events = len(record_program(PROGRAM).recorder.events)
        made = room.create_room(PROGRAM, self.events - 1)  # as the page does
        self.code, self.key = made.code, made.teacher_key
        seed = room.seed(self.code)
        run = record_program(PROGRAM) if seed is None else class_run(PROGRAM, seed)  # the room's own numbers
        self.question = next(q for q in questions(run.before, run.recorder, run.names) if q.kind == "leaf_grad")
        self.students: list[Student] = []
        for number in range(count):
            agent = new_student(url, number)
            self.students.append(Student(number, "", agent))  # its seat: from its page's join
        self.presses: list[float] = []
        self.tallies: list[tuple[float, int, dict[int, int]]] = []  # (when, question id, answered per vote)
        self.errors: Counter[str] = Counter()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.wall_minus_perf = time.time() - time.perf_counter()  # the store's times are the wall clock's
        self.opened: dict[int, float] = {}  # vote -> when the teacher opened it
        self.forms: dict[int, list[float]] = {1: [], 2: []}  # vote -> when each stage got its open vote

    def spawn(self, work: Coroutine[Any, Any, None], name: str = LOOP) -> None:
        task = asyncio.create_task(work, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.ended)

    def ended(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.errors[f"a student's task failed: {task.exception()!r}"[:160]] += 1

    async def open_pages(self) -> None:
        """Every student's page, as the join's rerun draws it (before the measured window); then its follow loop."""
        with ThreadPoolExecutor(max_workers=OPENING) as pool:
            loop = asyncio.get_running_loop()
            opened = await asyncio.gather(*(loop.run_in_executor(pool, open_page, s, self.code) for s in self.students))
        self.errors.update(error for error in opened if error is not None)
        for s in self.students:
            transport = httpx.AsyncHTTPTransport(local_address=s.agent.source)
            s.http = httpx.AsyncClient(transport=transport, cookies=s.agent.cookies, timeout=LONG_POLL_TIMEOUT)
            self.spawn(self.follow(s))

    async def long_poll(self, client: httpx.AsyncClient, route: str, header: dict[str, str], since: str) -> Any:
        """One request of a stage's loop: (when it answered, its body), or None for a 204 or a refusal."""
        params = {"room": self.code} | ({"since": since} if since else {})
        try:
            response = await client.get(f"{self.url}/class/api/{route}", params=params, headers=header)
        except httpx.HTTPError as error:
            self.errors[f"{route}: {type(error).__name__}"] += 1
            await asyncio.sleep(1.0)
            return None
        when = time.perf_counter()
        if response.status_code == 204:
            return None
        if response.status_code != 200:
            self.errors[f"{route}: HTTP {response.status_code}"] += 1
            await asyncio.sleep(2.0)  # as the stage does
            return None
        return when, response.json()

    async def follow(self, s: Student) -> None:
        """A stage's loop: the step, and the form drawn as soon as an answer carries an open vote."""
        assert s.http is not None
        since = ""
        while True:
            answered = await self.long_poll(s.http, "follow", {"X-Class-Seat": s.seat}, since)
            if answered is None:
                continue
            when, body = answered
            since = body["since"]
            s.arrivals.append((when, body["step"]))
            q = body["question"]
            vote = q["vote"] if q else None
            s.open_vote = (q["id"], vote) if q and vote else None
            done = {mine["vote"] for mine in body["mine"]}
            if q and vote and vote not in done and vote not in s.answering:
                s.answering.add(vote)
                self.forms[vote].append(when)
                self.spawn(self.answer(s, q["id"], vote), ANSWER)

    async def answer(self, s: Student, question: int, vote: int) -> None:
        """The student thinks, then sends their answer as the stage does (unless the vote closed meanwhile)."""
        assert s.http is not None
        await asyncio.sleep(random.Random(s.number * 10 + vote).uniform(0.5, self.answer_window_s))
        if s.open_vote != (question, vote):
            return  # the vote closed meanwhile: the stage took its form away
        answer = pick_answer(self.question, s.number, vote)
        sent = time.perf_counter()
        s.sent[vote] = (sent, answer)
        try:
            response = await s.http.post(
                f"{self.url}/class/api/answer",
                params={"room": self.code},
                headers={"X-Class-Seat": s.seat},
                json={"question": question, "answer": answer},
            )
        except httpx.HTTPError as error:
            self.errors[f"answer: {type(error).__name__}"] += 1
            return
        s.receipts[vote] = time.perf_counter()
        if response.status_code != 200:
            refused = response.json().get("error", "") if response.content else ""
            self.errors[f"answer: HTTP {response.status_code} {refused}"[:160]] += 1
        elif response.json() != {"stored": answer.strip(), "vote": vote}:
            self.errors[f"answer: a receipt not for what was sent: {response.text}"[:160]] += 1

    async def watch(self, teacher: httpx.AsyncClient) -> None:
        since = ""
        while True:
            answered = await self.long_poll(teacher, "watch", {"X-Class-Teacher": self.key}, since)
            if answered is None:
                continue
            when, body = answered
            since = body["since"]
            if (q := body["question"]) is not None:
                self.tallies.append((when, q["id"], {int(v): t["answered"] for v, t in q["votes"].items()}))

    def counted(self, question: int, vote: int) -> int:
        return max((t[2].get(vote, 0) for t in self.tallies if t[1] == question), default=0)

    async def until(self, done: Callable[[], bool], seconds: float, what: str) -> None:
        deadline = time.perf_counter() + seconds
        while not done():
            if time.perf_counter() > deadline:
                self.errors[f"timed out waiting for {what}"] += 1
                return
            await asyncio.sleep(0.1)

    async def teach(self, teacher: httpx.AsyncClient, presses: int) -> int:
        """The presses, then a question's two votes; returns the question's id."""
        start = time.perf_counter()
        for n in range(1, presses + 1):
            await asyncio.sleep(max(0.0, start + (n - 1) * PRESS_GAP_S - time.perf_counter()))
            self.presses.append(time.perf_counter())
            response = await teacher.post(
                f"{self.url}/class/api/step",
                params={"room": self.code},
                headers={"X-Class-Teacher": self.key},
                json={"step": n},
            )
            if response.status_code != 200:
                self.errors[f"step: HTTP {response.status_code}"] += 1
        everyone = lambda: all(s.arrivals and s.arrivals[-1][1] >= presses for s in self.students)  # noqa: E731
        await self.until(everyone, 10, "the last step on every stage")
        self.opened[1] = time.perf_counter()
        asked = await asyncio.to_thread(
            self.room.open_question, self.code, self.key, presses, self.question.kind, self.question.key
        )
        n = len(self.students)
        await self.until(lambda: self.counted(asked.id, 1) >= n, self.answer_window_s + 30, "vote 1's answers")
        await asyncio.to_thread(self.room.close_vote, self.code, self.key, asked.id)
        await asyncio.sleep(DISCUSS_S)
        self.opened[2] = time.perf_counter()
        await asyncio.to_thread(self.room.open_second_vote, self.code, self.key, asked.id)
        await self.until(lambda: self.counted(asked.id, 2) >= n, self.answer_window_s + 30, "vote 2's answers")
        return asked.id

    def press_delays(self) -> tuple[list[float], list[float], int]:
        """Press → each stage, every student and press; press → the last stage, every press; and how many stages
        never showed a press."""
        delays, last, missing = [], [], 0
        for n, pressed in enumerate(self.presses, start=1):
            these = []
            for s in self.students:
                arrived = next((when for when, step in s.arrivals if step >= n and when >= pressed), None)
                if arrived is None:
                    missing += 1
                else:
                    these.append(arrived - pressed)
            delays += these
            last += [max(these)] if these else []
        return delays, last, missing

    def answer_delays(self, question: int) -> AnswerDelays:
        """Answer → the teacher's count, every answer sent, checked against the store."""
        query = select(answers.c.student, answers.c.vote, answers.c.answer, answers.c.answered_at)
        with self.room.store.read() as conn:
            rows = list(conn.execute(query.where(answers.c.question == question)))
            joined = conn.execute(select(students.c.id, students.c.token_hash).where(students.c.room == self.code))
            by_seat = {secret_hash(s.seat): s for s in self.students}
            by_id = {row.id: by_seat[row.token_hash] for row in joined}
        found = AnswerDelays([], [], [], 0, 0)
        for vote in (1, 2):
            ranked = sorted((row for row in rows if row.vote == vote), key=lambda row: row.answered_at)
            for rank, row in enumerate(ranked, start=1):
                s = by_id[row.student]
                if vote not in s.sent or s.sent[vote][1] != row.answer:
                    found.differing += 1
                    continue
                sent = s.sent[vote][0]
                shown = next(
                    (when for when, q, seen in self.tallies if q == question and seen.get(vote, 0) >= rank), None
                )
                if shown is None:
                    found.missing += 1
                else:
                    found.shown.append(shown - sent)
                found.stored.append(row.answered_at - (sent + self.wall_minus_perf))
                if vote in s.receipts:
                    found.receipts.append(s.receipts[vote] - sent)
        posted = sum(len(s.sent) for s in self.students)
        found.missing += max(0, posted - len(rows))
        return found

    async def close(self) -> None:
        """Let the answers in flight finish (one counted may still await its receipt), then stop the loops."""
        sending = [task for task in self.tasks if task.get_name() == ANSWER]
        if sending:
            await asyncio.wait(sending, timeout=30)
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for s in self.students:
            if s.http is not None:
                await s.http.aclose()


@dataclass
class Measured:
    config: Config
    students: int
    presses: list[float]
    all_moved: list[float]  # press → the last student's stage
    press_missing: int
    answers: AnswerDelays
    forms: list[float]  # a vote opened → a student's follow answer carrying it (its form drawn)
    forms_missing: int  # (student, vote) pairs whose form never came
    answers_sent: int
    window_s: float
    server_cpu: float
    other_cpu: dict[str, float]  # nginx, PostgreSQL
    load_cpu: float
    floor_cpu: float
    load_average: str  # the machine's, before the run: other work on it shows here
    errors: Counter[str]


async def run_class(
    url: str,
    database: str,
    count: int,
    presses: int,
    answer_window_s: float,
    server_pids: list[int],
    others: dict[str, int],
) -> tuple[ClassRun, dict[str, float], AnswerDelays]:
    room = Classroom(open_store(database))
    run = ClassRun(url, room, count, answer_window_s)
    async with httpx.AsyncClient(timeout=LONG_POLL_TIMEOUT) as teacher:
        await run.open_pages()
        run.spawn(run.watch(teacher))
        await run.until(lambda: all(s.arrivals for s in run.students), 30, "every stage's first answer")
        await asyncio.sleep(1.0)
        before = {
            "server": sum(cpu_seconds(pid) for pid in server_pids),
            "load": time.process_time(),
            **{name: tree_cpu(pid) for name, pid in others.items()},
        }
        start = time.perf_counter()
        asked = await run.teach(teacher, presses)
        window = time.perf_counter() - start
        spent = {
            "server": sum(cpu_seconds(pid) for pid in server_pids) - before["server"],
            "load": time.process_time() - before["load"],
            "window": window,
            **{name: tree_cpu(pid) - before[name] for name, pid in others.items()},
        }
        await run.close()
    shown = run.answer_delays(asked)
    room.store.close()
    return run, spent, shown


def sessions_held(processes: int, count: int, window_s: float, tmp: Path) -> float:
    """The floor: `processes` Streamlit servers of a trivial page, `count` sessions opened on them in turn (one agent
    call each, before the window), then idle for `window_s`; returns the servers' CPU seconds over the window."""
    trivial = write_trivial_page(str(tmp))
    with ExitStack() as stack:
        servers = [
            stack.enter_context(streamlit_server(tmp / f"trivial-{k}.log", SERVER, with_pid=True, script=trivial))
            for k in range(processes)
        ]
        sessions = [new_student(servers[number % processes][0], number) for number in range(count)]
        with ThreadPoolExecutor(max_workers=OPENING) as pool:
            list(pool.map(lambda session: session.interact(), sessions))
        time.sleep(1.0)
        before = sum(cpu_seconds(pid) for _, pid in servers)
        time.sleep(window_s)
        return sum(cpu_seconds(pid) for _, pid in servers) - before


def measure(config: Config, count: int, presses: int, answer_window_s: float) -> Measured:
    load_average = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        with class_database(config.database, tmp) as (database, postmaster):
            others = {} if postmaster is None else {"PostgreSQL": postmaster}
            with served(config.replicas, tmp, SERVER, PORTS) as (url, pids, nginx):
                if nginx is not None:
                    others["nginx"] = nginx
                run, spent, shown = asyncio.run(run_class(url, database, count, presses, answer_window_s, pids, others))
        delays, all_moved, missing = run.press_delays()
        floor = sessions_held(max(config.replicas, 1), count, spent["window"], tmp)
    forms = [t - run.opened[vote] for vote, drawn in run.forms.items() for t in drawn if vote in run.opened]
    return Measured(
        config,
        count,
        delays,
        all_moved,
        missing,
        shown,
        forms,
        2 * count - len(forms),
        sum(len(s.sent) for s in run.students),
        spent["window"],
        spent["server"],
        {name: spent[name] for name in others},
        spent["load"],
        floor,
        load_average,
        run.errors,
    )


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.machine(),
    )
    return f"{os.cpu_count()} CPUs ({model})"


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return f"{statistics.median(values):.2f} / {p95(values):.2f} / {max(values):.2f}"


def report(results: list[Measured]) -> None:
    print(
        f"# Class mode under load, {time.strftime('%Y-%m-%d %H:%M %Z')}; {machine()}; Python "
        f"{platform.python_version()}; goals: p95 <= {GOAL_S:g} s for (a), (b) and the forms; server CPU <= "
        f"{GOAL_CPU_MS:g} ms a second a student"
    )
    print(
        "| configuration | students | (a) press → every stage, p50 / p95 / max | (b) answer → histogram, "
        "p50 / p95 / max | vote opened → form drawn, p50 / p95 / max | (c) server CPU: s a second, ms a second a "
        "student | sessions held, no calls: ms a second a student | nginx, PostgreSQL: s a second | load generator: "
        "s a second |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for m in results:
        w, n = m.window_s, m.students
        others = ", ".join(f"{name} {cpu / w:.3f}" for name, cpu in m.other_cpu.items()) or "—"
        cells = [
            m.config.name,
            str(n),
            f"{spread(m.presses)} s",
            f"{spread(m.answers.shown)} s",
            f"{spread(m.forms)} s",
            f"{m.server_cpu / w:.3f}, {m.server_cpu / w / n * 1000:.1f}",
            f"{m.floor_cpu / w / n * 1000:.1f}",
            others,
            f"{m.load_cpu / w:.3f}",
        ]
        print(f"| {' | '.join(cells)} |")
    for m in results:
        timed = (("(a)", m.presses), ("(b)", m.answers.shown), ("forms", m.forms))
        goals = [f"{name} p95 {'met' if values and p95(values) <= GOAL_S else 'NOT met'}" for name, values in timed]
        per_student = m.server_cpu / m.window_s / m.students * 1000
        goals.append(f"server CPU a student {'met' if per_student <= GOAL_CPU_MS else 'NOT met'}")
        notes = [
            f"load average before {m.load_average}",
            f"{m.window_s:.0f} s window",
            f"{len(m.presses)} press arrivals ({m.press_missing} missing)",
            f"press → the last stage {spread(m.all_moved)} s",
            f"{len(m.forms)} forms drawn ({m.forms_missing} missing)",
            f"{len(m.answers.shown)} of {m.answers_sent} answers sent seen on the histogram ({m.answers.missing} "
            f"missing, {m.answers.differing} in the store differing from what was sent)",
            f"POST → stored {spread(m.answers.stored)} s, POST → receipt {spread(m.answers.receipts)} s",
            ", ".join(goals),
        ] + ([f"errors: {dict(m.errors)}"] if m.errors else [])
        print(f"- {m.config.name}, {m.students} students: " + "; ".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description="Class mode under load: following, answering, server CPU.")
    parser.add_argument("--configs", nargs="*", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--students", type=int, help="students in each configuration (default: 30, 60 and 120)")
    parser.add_argument("--presses", type=int, default=10, help=f"presses of →, {PRESS_GAP_S} s apart")
    parser.add_argument("--answer-window", type=float, default=10.0, help="the students' answers spread over it (s)")
    args = parser.parse_args()
    results = [
        measure(CONFIGS[name], args.students or CONFIGS[name].students, args.presses, args.answer_window)
        for name in args.configs
    ]
    report(results)


if __name__ == "__main__":
    main()
