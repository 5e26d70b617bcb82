"""Issue 41's first finding: a class page's address carried its secret (`?teacher=KEY` on the private teacher link,
`?seat=...` on a student's page), and the Referer of every request carried it on. A class run in Chromium through
deploy/'s nginx (one replica, its own SQLite store): the teacher starts a class and reopens it with the private
teacher link (its key in the fragment), a student joins (the seat kept in the browser's storage), follows a step and
reloads into the same seat; no request either browser made carries the key or the seat in its address or a Referer,
and nginx's logs hold neither. Every answer, the replica's own and nginx's, says `Referrer-Policy: no-referrer`."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator

import pytest

from classroom.serve import PUBLIC_URL_ENV
from deploy.replicas import Deployment, deployment

from .class_probes import POLICY_PATHS, referrer_policy
from .harness import _free_port

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    if not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is not installed (apt-get install nginx): the deploy tests cannot run in CI")
        pytest.skip("nginx is not installed (apt-get install nginx)")
    database = f"sqlite:///{tmp_path_factory.mktemp('secrets') / 'class.sqlite3'}"
    port = _free_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PUBLIC_URL_ENV, f"http://127.0.0.1:{port}")  # the replica's join link names nginx
        with deployment(replicas=1, port=port, first_replica_port=_free_port(), database=database) as running:
            yield running


@pytest.mark.parametrize("through", ["nginx", "replica"])
def test_every_answer_says_no_referrer(single, through):
    base = single.url if through == "nginx" else single.replicas[0].url
    for path in POLICY_PATHS:
        assert referrer_policy(base + path) == ["no-referrer"], path


def test_a_class_run_sends_no_secret_as_a_referer_and_nginx_logs_none(browser, single):
    referers: list[str] = []
    urls: list[str] = []
    teacher_context, student_context = browser.new_context(), browser.new_context()

    def record(request) -> None:
        urls.append(request.url)
        referer = request.all_headers().get("referer")
        if referer:
            referers.append(referer)

    try:
        teacher = teacher_context.new_page()
        teacher.set_default_timeout(30_000)
        teacher_context.on("requestfinished", record)
        student_context.on("requestfinished", record)
        teacher.goto(f"{single.url}/class")
        teacher.get_by_role("button", name="Start a class").click()
        join_url = re.match(r"Join at (\S+)", teacher.get_by_text(re.compile("^Join at ")).first.inner_text()).group(1)
        teacher.get_by_text("Your teacher link (private)").click()
        teacher_link = teacher.locator("code", has_text="teacher=").first.inner_text().strip()
        key = re.fullmatch(r"\S+/class\?room=\w+#teacher=([\w-]+)", teacher_link).group(1)  # in the fragment

        reopened = teacher_context.new_page()  # the teacher's link on another device
        reopened.set_default_timeout(30_000)
        reopened.goto(teacher_link)
        reopened.locator(".class-status", has_text="0 students joined").wait_for()
        assert "teacher=" not in reopened.url  # out of the address bar too

        student = student_context.new_page()
        student.set_default_timeout(30_000)
        student.goto(join_url)
        student.get_by_role("button", name="Join").click()
        student.locator(".class-status", has_text="Following the teacher: ").wait_for()
        seat = student.evaluate("() => JSON.parse(localStorage.getItem('autodiff-class-seat')).seat")
        assert "seat" not in student.url

        scrub = ".stage-scrub"
        reopened.locator(".stage-controls button", has_text="Next ▶").click()
        now = reopened.locator(scrub).get_attribute("aria-valuetext")
        deadline = time.monotonic() + 10
        while student.locator(scrub).get_attribute("aria-valuetext") != now:
            assert time.monotonic() < deadline, "the student's stage did not follow"
            student.wait_for_timeout(50)
        student.reload()  # the seat's page loaded again: its files and its long poll once more
        student.locator(".class-status", has_text="Following the teacher: ").wait_for()  # no join form: its seat
        assert student.locator(scrub).get_attribute("aria-valuetext") == now  # in the class, where the room is
        assert student.evaluate("() => JSON.parse(localStorage.getItem('autodiff-class-seat')).seat") == seat
    finally:
        teacher_context.close()
        student_context.close()

    assert any("/class/api/follow" in url for url in urls) and len(urls) > 50  # the run made its requests
    assert referers == [], referers[:5]
    assert not [url for url in urls if key in url or seat in url]
    log = (single.prefix / "access.log").read_text()
    assert "/class/api/follow" in log and "GET /class " in log
    errors = (single.prefix / "error.log").read_text()
    assert key not in log + errors and seat not in log + errors
