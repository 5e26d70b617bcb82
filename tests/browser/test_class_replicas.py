"""Class mode on two replicas behind deploy/'s nginx, one real PostgreSQL class store (issue 27): a teacher and four
students in one room, the students on both replicas, each following the teacher's steps within 1 s; then a replica
killed mid-vote (SIGKILL): no recorded answer is lost, its students reconnect, find their seat and answer again, and
the teacher, when it was theirs, reopens the room with the private teacher link.

Who is on which replica: nginx hashes the `st_route` cookie (deploy/nginx.conf.template), not the client address, so
every client gets an `st_route` chosen ahead for the replica it should be on (`routes_to`: nginx names the replica
that answered each key in its `st_replica` cookie), and each browser's own `st_replica` cookie, set when its
WebSocket connected, confirms it. Two students are browsers that join through the page; two follow through the push
route's HTTP API (`Follower`) and answer through the class store, as a page would.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import numpy as np
import pytest

from classroom.rooms import Classroom
from classroom.serve import PUBLIC_URL_ENV
from classroom.store import open_store
from course.grading import grade
from deploy.replicas import FAIL_TIMEOUT_S, Deployment, deployment
from tests.postgres import postgres_bin_dir, postgres_cluster
from ui.class_replays import class_replay

from .class_answers import typed
from .class_student import send_answer
from .conftest import _missing, choose
from .test_deploy import replica_of

pytestmark = pytest.mark.browser
DEPLOY_PORTS = range(8700, 8760)  # nginx and the replicas
DATABASE_PORTS = range(8760, 8800)  # a slice per pytest-xdist worker (tests/postgres.py)
FOLLOW_S = 1.0  # the goal from a teacher's press to every student's stage (issue 27): bench/class_mode.py measures it
FOLLOW_BOUND_S = 5 * FOLLOW_S  # what a test allows, on a machine busy with other work too
PROGRAM = "seed"  # x's gradient is 2x + 3 ([5.0, 7.0] in the lesson; each room has its own x)
QUESTION = "What is x's gradient after the backward?"
NEXT = ".stage-controls button:has-text('Next')"
PREV = ".stage-controls button:has-text('Prev')"
SCRUB = ".stage-scrub"
STATUS = ".stage-class .class-status"
TALLY = ".class-tally"
OWN = ".class-own"  # the teacher's own screen: who is right, folded until the reveal (read here unopened)


def _free_ports(count: int) -> int:
    """The first of `count` consecutive free loopback ports in DEPLOY_PORTS."""
    for first in DEPLOY_PORTS[: len(DEPLOY_PORTS) - count + 1]:
        probes = [socket.socket() for _ in range(count)]
        try:
            for k, probe in enumerate(probes):
                probe.bind(("127.0.0.1", first + k))
            return first
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise RuntimeError(f"no {count} free loopback ports in {DEPLOY_PORTS.start}-{DEPLOY_PORTS.stop - 1}")


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        _missing("PostgreSQL's binaries are not installed (apt-get install postgresql)")
    with postgres_cluster(bin_dir, DATABASE_PORTS) as url:
        yield url


@pytest.fixture(scope="module")
def replicas(database: str) -> Iterator[Deployment]:
    if not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        _missing("nginx is not installed (apt-get install nginx)")
    port = _free_ports(3)
    before = os.environ.get(PUBLIC_URL_ENV)
    os.environ[PUBLIC_URL_ENV] = f"http://127.0.0.1:{port}"  # the replicas' join link names nginx (this machine's)
    try:
        with deployment(replicas=2, port=port, first_replica_port=port + 1, database=database) as running:
            yield running
    finally:
        if before is None:
            os.environ.pop(PUBLIC_URL_ENV)
        else:
            os.environ[PUBLIC_URL_ENV] = before


@pytest.fixture(scope="module")
def store(database: str) -> Iterator[Classroom]:
    """The class store as every replica sees it: where the answers are counted, and the HTTP students answer."""
    opened = open_store(database)
    yield Classroom(opened)
    opened.close()


def replica_answering(url: str, route: str) -> str:
    """The replica nginx sends a client with this `st_route` to: a WebSocket request without the upgrade is refused
    by the replica, and nginx's answer names it in the `st_replica` cookie."""
    request = urllib.request.Request(f"{url}/_stcore/stream", headers={"Cookie": f"st_route={route}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            cookies = response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as refused:
        cookies = refused.headers.get_all("Set-Cookie") or []
    found = next(c for c in cookies if c.startswith("st_replica="))
    return found.split(";")[0].split("=", 1)[1].split(",")[-1].strip()


def routes_to(url: str, replica: str, count: int) -> list[str]:
    """`count` distinct `st_route` keys that nginx hashes onto `replica`."""
    keys = (f"class-{replica}-{k}" for k in range(100))  # each a request: well inside nginx's per-client burst
    found = list(itertools.islice((key for key in keys if replica_answering(url, key) == replica), count))
    assert len(found) == count, f"nginx sent only {len(found)} of 100 route keys to {replica}"
    return found


def browser_on(browser, url: str, route: str):
    context = browser.new_context(viewport={"width": 1200, "height": 1600})
    context.add_cookies([{"name": "st_route", "value": route, "url": url}])
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


class Follower(threading.Thread):
    """A student following through the push route alone: long polls through nginx, as the stage sends them."""

    def __init__(self, url: str, code: str, seat: str, route: str) -> None:
        super().__init__(daemon=True)
        self.url, self.code, self.seat, self.route = url, code, seat, route
        self.seen: list[tuple[float, int]] = []  # (when, the room's step) for every answer
        self.bodies: list[dict] = []
        self.failures: list[str] = []  # what reached this client instead of an answer
        self.stopped = threading.Event()

    def run(self) -> None:
        since = ""
        while not self.stopped.is_set():
            query = urlencode({"room": self.code, "since": since})
            headers = {"X-Class-Seat": self.seat, "Cookie": f"st_route={self.route}"}
            request = urllib.request.Request(f"{self.url}/class/api/follow?{query}", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    if response.status == 204:
                        continue
                    body = json.loads(response.read())
            except (OSError, ValueError) as error:  # as the stage does: try again a moment later
                self.failures.append(repr(error))
                time.sleep(0.5)
                continue
            since = body["since"]
            self.seen.append((time.time(), body["step"]))
            self.bodies.append(body)

    def moved(self, before: int, after: float, seconds: float = 10.0) -> float:
        """Seconds from `after` until this student was told of another step than `before` (only the teacher moves
        it)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            times = [when for when, step in self.seen if step != before and when >= after]
            if times:
                return times[0] - after
            time.sleep(0.05)
        raise AssertionError(f"the room's step never moved on for this student: saw {self.seen[-3:]}")

    def told(self, check: Callable[[dict], bool], seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not any(check(body) for body in self.bodies):
            assert time.monotonic() < deadline, f"this student was never told that: {self.bodies[-2:]}"
            time.sleep(0.05)


WATCH_SCRUB = """(el) => {
  window.classSeen = {};
  const note = () => {
    const text = el.getAttribute("aria-valuetext");
    if (!(text in window.classSeen)) window.classSeen[text] = Date.now();
  };
  new MutationObserver(note).observe(el, { attributes: true, attributeFilter: ["aria-valuetext"] });
}"""


def step_everyone(teacher, pages: list, followers: list[Follower], button: str = "") -> list[float]:
    """The teacher presses Next once (or `button`: Prev while a vote is open, since running the asked step waits
    for the reveal); returns each student's delay (browsers by their own clock, as the stage showed it; the HTTP
    students when their long poll answered)."""
    for page in pages:
        page.locator(SCRUB).evaluate(WATCH_SCRUB)
    click = """(b) => {
      const t = Date.now();
      b.click();
      return [t, b.getRootNode().querySelector(".stage-scrub").getAttribute("aria-valuetext")];
    }"""
    befores = [follower.seen[-1][1] for follower in followers]
    pressed_ms, shown = teacher.locator(button or NEXT).evaluate(click)
    pressed = pressed_ms / 1000
    delays = []
    for page in pages:
        seen = page.wait_for_function(f"() => window.classSeen[{json.dumps(shown)}]", timeout=10_000).json_value()
        delays.append(seen / 1000 - pressed)
    delays += [follower.moved(before, pressed) for follower, before in zip(followers, befores, strict=True)]
    return delays


def join_by_page(page, join_url: str, nickname: str) -> str:
    page.goto(join_url)
    page.get_by_label("Nickname (optional; only your teacher sees it)").fill(nickname)
    page.get_by_role("button", name="Join").click()
    page.locator(STATUS).filter(has_text="Following the teacher").wait_for()
    return page.url


def answer_by_page(page, text: str) -> None:
    send_answer(page, text)


def room_x(store: Classroom, code: str) -> np.ndarray:
    """x in room `code`: the room's own numbers (issue 54), as its stages show them."""
    replay = class_replay(PROGRAM, code, rooms=lambda: store)
    assert replay.names[0] == "x"
    return np.asarray(next(n.value for n in replay.before.nodes if int(n.id) == 0), dtype=np.float64)


def answer_by_store(store: Classroom, code: str, seat: str, text: str) -> None:
    asked = class_replay(PROGRAM, code, rooms=lambda: store).questions["grad:0"]
    question = store.student_view(code, seat).question
    graded = grade(asked, text)
    store.answer(code, seat, question.id, text, graded.right, graded.mistake)


def failed_class_call(log_line: str) -> bool:
    """An nginx access log line of a class API request that got a server error (502: no replica answered)."""
    found = re.search(r'"[A-Z]+ /class/api/\S* HTTP/[\d.]+" (\d{3})', log_line)
    return found is not None and found.group(1).startswith("5")


def kill(running: Deployment, name: str) -> None:
    replica = next(r for r in running.replicas if r.name == name)
    os.kill(replica.process.pid, signal.SIGKILL)
    replica.process.wait(10)


def restart(running: Deployment, name: str, route: str) -> None:
    """Starts the replica again and waits until nginx sends its visitors (`route`) to it: nginx learns that it is
    back from a request FAIL_TIMEOUT_S after the last one that failed."""
    replica = next(r for r in running.replicas if r.name == name)
    replica.start(running.extra_args)
    deadline = time.monotonic() + 120
    while not replica.healthy():
        assert time.monotonic() < deadline, f"{name} did not start again (log: {replica.log})"
        time.sleep(0.5)
    time.sleep(FAIL_TIMEOUT_S + 1)
    assert replica_answering(running.url, route) == name


def open_page(page, url: str, seconds: float = 30) -> None:
    """Opens `url`, again while nginx answers 502: after replica-1 came back and replica-0 stopped, an nginx worker
    that has not seen replica-1 answer since it failed counts it down for a while (FAIL_TIMEOUT_S after each trial;
    deploy/'s page rule, not the class API's)."""
    deadline = time.monotonic() + seconds
    while not (response := page.goto(url)) or response.status == 502:
        assert time.monotonic() < deadline, f"{url} answered 502 for {seconds:g} s"
        page.wait_for_timeout(1000)


def moved_off(page, name: str, seconds: float = 60) -> None:
    """Waits until the page's WebSocket reconnected through nginx to another replica than `name`."""
    deadline = time.monotonic() + seconds
    while replica_of(page.context) == name:
        assert time.monotonic() < deadline, f"the page never left {name}"
        page.wait_for_timeout(250)


def test_a_class_on_two_replicas_follows_the_teacher_and_survives_a_killed_replica(browser, replicas, store):
    url = replicas.url
    teacher_route, a_route, c_route = routes_to(url, "replica-0", 3)
    b_route, d_route = routes_to(url, "replica-1", 2)
    contexts = []
    followers: list[Follower] = []
    try:
        # the teacher (replica-0) starts a class
        context, teacher = browser_on(browser, url, teacher_route)
        contexts.append(context)
        teacher.goto(f"{url}/class")
        teacher.get_by_role("button", name="Start a class").click()
        joined_at = teacher.get_by_text(re.compile(r"^Join at ")).first.inner_text()
        join_url = re.match(r"Join at (\S+)", joined_at).group(1)
        code = re.search(r"room=([A-Z0-9]+)", join_url).group(1)
        teacher.locator(STATUS).filter(has_text="joined").wait_for()
        assert replica_of(context) == "replica-0"

        # two students join through the page, one on each replica; two follow through the HTTP API, one on each
        students = {}
        for name, route, replica in (("Ann", a_route, "replica-0"), ("Ben", b_route, "replica-1")):
            context, page = browser_on(browser, url, route)
            contexts.append(context)
            assert "seat=" not in join_by_page(page, join_url, name)  # the seat: in the browser's storage
            assert replica_of(context) == replica
            students[name] = page
        ann, ben = students["Ann"], students["Ben"]
        seats = {name: store.join(code, f"127.0.0.{k}", name).token for k, name in ((3, "Cleo"), (4, "Dan"))}
        for name, route in (("Cleo", c_route), ("Dan", d_route)):
            assert replica_answering(url, route) == ("replica-0" if name == "Cleo" else "replica-1")
            followers.append(Follower(url, code, seats[name], route))
        dan = followers[1]  # on replica-1
        for follower in followers:
            follower.start()
        teacher.locator(STATUS).filter(has_text="4 students joined").wait_for()
        for follower in followers:  # its first answer, the room as it is: what each step is measured from
            follower.told(lambda body: True, seconds=30)

        # the teacher steps three times: every student, on both replicas, follows (within five times the goal)
        for _ in range(3):
            delays = step_everyone(teacher, [ann, ben], followers)
            print("press to each student's stage, s:", [f"{d:.2f}" for d in delays])
            assert max(delays) <= FOLLOW_BOUND_S, delays

        # a question: everyone answers vote 1, on the room's own numbers (issue 54)
        x = room_x(store, code)
        right, one_path, forward, sign = (typed(v) for v in (2 * x + 3, 2 * x, x, -(2 * x + 3)))
        written_out = ", ".join(repr(float(v)) for v in 2 * x + 3)  # `5.0, 7.0`: the same numbers, written otherwise
        choose(teacher, "Ask the room", QUESTION)
        teacher.get_by_role("button", name="Ask").click()
        teacher.get_by_role("button", name="Close vote 1").wait_for()
        ann.get_by_text(QUESTION, exact=True).wait_for()  # each student's stage draws the question
        ben.get_by_text(QUESTION, exact=True).wait_for()
        answer_by_page(ann, right)
        answer_by_page(ben, one_path)
        answer_by_store(store, code, seats["Cleo"], written_out)
        answer_by_store(store, code, seats["Dan"], forward)
        teacher.locator(TALLY).filter(has_text="In vote 1, 4 of 4 answered.").wait_for()
        teacher.locator(OWN).filter(has_text="In vote 1, 2 of 4 right.").wait_for(state="attached")
        teacher.get_by_text("Your teacher link").click()
        teacher_link = teacher.get_by_text(re.compile(r"teacher=")).inner_text().strip()
        key = re.search(r"teacher=([^&\s]+)", teacher_link).group(1)

        # replica-1 (Ben's and Dan's) is killed mid-vote
        recorded = store.answer_records(code, key)
        assert len(recorded) == 4
        kill(replicas, "replica-1")
        assert store.answer_records(code, key) == recorded  # every answer is in PostgreSQL, none lost
        moved_off(ben, "replica-1")  # Ben's page reconnected through nginx to replica-0, a new session there ...
        answer_by_page(ben, right)  # ... which found his seat in his browser's storage: his changed answer, read back
        answer_by_store(store, code, seats["Dan"], right)
        teacher.locator(TALLY).filter(has_text="In vote 1, 4 of 4 answered.").wait_for()
        teacher.locator(OWN).filter(has_text="In vote 1, 4 of 4 right.").wait_for(state="attached")
        teacher.locator(f"{OWN} .class-bar").filter(has_text=f"{right}: 3 (right)").wait_for(state="attached")
        delays = step_everyone(teacher, [ann, ben], followers, PREV)
        print("after replica-1 stopped, press to each student's stage, s:", [f"{d:.2f}" for d in delays])
        assert max(delays) <= FOLLOW_BOUND_S, delays
        assert not dan.failures, dan.failures  # his long poll in flight was sent on to replica-0 by nginx ...
        log = (replicas.prefix / "access.log").read_text().splitlines()
        assert not [line for line in log if failed_class_call(line)]  # ... and so was everyone's

        # replica-1 is back; then replica-0 (the teacher's, Ann's, Cleo's) is killed mid-vote. A long poll that
        # went to replica-0 while replica-1 was down has tried both: it gets a 502, and the stage asks again
        restart(replicas, "replica-1", b_route)
        kill(replicas, "replica-0")
        assert len(store.answer_records(code, key)) == 4
        moved_off(teacher, "replica-0")
        open_page(teacher, teacher_link)  # the teacher reopens the room with the private link, on replica-1
        teacher.get_by_role("heading", name=re.compile(r"^Class [0-9A-Z]{4}")).wait_for()
        assert "teacher=" not in teacher.url  # the key left the address bar
        teacher.locator(TALLY).filter(has_text="In vote 1, 4 of 4 answered.").wait_for()
        teacher.locator(OWN).filter(has_text="In vote 1, 4 of 4 right.").wait_for(state="attached")
        moved_off(ann, "replica-0")
        answer_by_page(ann, sign)  # Ann changes her answer on replica-1
        teacher.locator(TALLY).filter(has_text="In vote 1, 4 of 4 answered.").wait_for()
        teacher.locator(OWN).filter(has_text="In vote 1, 3 of 4 right.").wait_for(state="attached")
        delays = step_everyone(teacher, [ann, ben], followers, PREV)
        print("after replica-0 stopped, press to each student's stage, s:", [f"{d:.2f}" for d in delays])
        assert max(delays) <= FOLLOW_BOUND_S, delays
        assert {r.answer for r in store.answer_records(code, key)} == {sign, right, written_out}

        # the teacher closes the vote: every student's stage, moved or not, draws the discussion
        teacher.get_by_role("button", name="Close vote 1").click()
        for page in (ann, ben):
            page.get_by_text("Vote 1 is closed.").wait_for()
        for follower in followers:
            follower.told(lambda body: body["question"] is not None and body["question"]["phase"] == "discuss")
    finally:
        for follower in followers:
            follower.stopped.set()
        for context in contexts:
            context.close()
        for replica in replicas.replicas:
            if replica.process is not None and replica.process.poll() is not None:
                replica.start(replicas.extra_args)


def class_calls(port: int, source: str, count: int) -> list[tuple[int, str]]:
    """`count` class API requests from `source` on one kept-alive connection, as fast as they are answered: each
    answer's status and Cache-Control. (No room named: the replica refuses it at once, 400.)"""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    answers = []
    try:
        for _ in range(count):
            connection.request("GET", "/class/api/follow")
            response = connection.getresponse()
            response.read()
            answers.append((response.status, response.getheader("Cache-Control", "")))
    finally:
        connection.close()
    return answers


def test_the_class_api_has_its_own_rate_zone_roomier_than_the_pages_and_no_answer_is_cached(replicas):
    port = int(replicas.url.rsplit(":", 1)[1])
    first = class_calls(port, "127.0.0.5", 400)  # past the pages' burst (200): a class behind one address
    assert [status for status, _ in first] == [400] * 400
    assert {cache for _, cache in first} == {"no-store"}
    with ThreadPoolExecutor(max_workers=6) as pool:  # a loop from that address, faster than 240 a second
        flood = [a for answers in pool.map(lambda _: class_calls(port, "127.0.0.5", 400), range(6)) for a in answers]
    refused = [cache for status, cache in flood if status == 429]
    assert refused and set(refused) == {"no-store"}  # nginx's own refusal is not cached either
    assert class_calls(port, "127.0.0.6", 1) == [(400, "no-store")]  # another address is untouched
