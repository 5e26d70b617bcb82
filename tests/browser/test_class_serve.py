"""A class on `python -m classroom.serve`, in Chromium, as in a classroom: the teacher opens the app at localhost on
their laptop and starts a class; the join link and the QR code (decoded from the image the page shows) name the
machine's network address, never localhost; a student in another browser context opens the decoded address, joins
and follows the teacher's step through the push route; the teacher closes the room, and a late student is told so in
a sentence. The app's own config applies under Hypercorn (its theme, its XSRF cookie). One server and one browser for
the module."""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from PIL import Image

from classroom.serve import PUBLIC_URL_ENV, is_local_host

from .harness import _free_port, serving

pytestmark = pytest.mark.browser
PRIMARY = "rgb(194, 65, 12)"  # .streamlit/config.toml's [theme.light] primaryColor, #c2410c


@dataclass
class Served:
    port: int
    students: str  # the address it printed


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("class-serve")
    log, port = folder / "serve.log", _free_port()
    database = f"sqlite:///{folder / 'class.sqlite3'}"
    env = {k: v for k, v in os.environ.items() if k != PUBLIC_URL_ENV}  # the address is its own to find
    with serving(["classroom.serve", "--port", str(port), "--database", database], port, log, env):
        printed = re.search(r"Students open (\S+) \(", log.read_text())
        assert printed, log.read_text()
        yield Served(port, printed.group(1))


def decode_qr(image) -> str:
    """The text of the QR code `image` (a locator) shows, read from Chromium's rendering of it."""
    import zxingcpp

    png = image.screenshot()
    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)).convert("L"))
    assert len(found) == 1, f"{len(found)} codes found"
    return found[0].text


def test_the_join_link_and_qr_code_name_the_network_address_and_a_student_joins_by_it(browser, served):
    errors: list[str] = []
    teacher_context = browser.new_context(viewport={"width": 1440, "height": 900})
    student_context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    late_context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        teacher = teacher_context.new_page()
        teacher.set_default_timeout(30_000)
        teacher.on("pageerror", lambda e: errors.append(str(e)))
        teacher.goto(f"http://localhost:{served.port}/class")  # the teacher's own laptop
        start = teacher.get_by_role("button", name="Start a class")
        assert start.evaluate("b => getComputedStyle(b).backgroundColor") == PRIMARY  # the app's config.toml
        start.click()
        join = teacher.get_by_text(re.compile("^Join at ")).first.inner_text()
        join_url = re.match(r"Join at (\S+)", join).group(1)
        code = re.search(r"room=(\w+)$", join_url).group(1)
        assert join_url == f"{served.students}?room={code}"  # the printed address, the room code only
        assert not is_local_host(urlsplit(join_url).hostname or "localhost")
        assert "_streamlit_xsrf" in {c["name"] for c in teacher_context.cookies()}  # enableXsrfProtection
        assert decode_qr(teacher.get_by_role("img", name="QR code of the join link")) == join_url
        teacher.locator(".class-status", has_text="0 students joined").wait_for()

        student = student_context.new_page()
        student.set_default_timeout(30_000)
        student.on("pageerror", lambda e: errors.append(str(e)))
        student.goto(join_url)  # a phone on the classroom's network
        student.get_by_role("button", name="Join").click()
        student.locator(".class-status", has_text="Following the teacher: ").wait_for()
        teacher.locator(".class-status", has_text="1 student joined").wait_for()

        # the push route through Hypercorn: the student's stage follows the teacher's press
        scrub = ".stage-scrub"
        before = teacher.locator(scrub).get_attribute("aria-valuetext")
        teacher.locator(".stage-controls button", has_text="Next ▶").click()
        now = teacher.locator(scrub).get_attribute("aria-valuetext")
        assert now != before
        deadline = time.monotonic() + 10
        while student.locator(scrub).get_attribute("aria-valuetext") != now:
            assert time.monotonic() < deadline, "the student's stage did not follow"
            student.wait_for_timeout(50)

        # issue 54, finding 4: once everyone is in, the room takes no new seat
        teacher.get_by_role("button", name="Close the room to new students").click()
        teacher.get_by_role("button", name="Reopen the room to new students").wait_for()
        late = late_context.new_page()
        late.set_default_timeout(30_000)
        late.goto(join_url)
        late.get_by_role("button", name="Join").click()
        late.get_by_text(
            "This class is closed to new students: your teacher closed it once everyone was in."
        ).wait_for()
        teacher.locator(".class-status", has_text="1 student joined").wait_for()
        assert not errors, errors
    finally:
        teacher_context.close()
        student_context.close()
        late_context.close()
