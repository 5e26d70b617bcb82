"""Class mode end to end in Chromium (issues 27 and 43) on an SQLite class store (the steps: class_end_to_end.py;
on PostgreSQL: test_class_mode_postgresql.py), and a forged teacher link and a wrong room code."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from .class_end_to_end import a_class_end_to_end, new_page, no_teacher_controls
from .harness import streamlit_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def class_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a fresh class store: a new SQLite file (never data/)."""
    folder = tmp_path_factory.mktemp("class-sqlite")
    with streamlit_server(
        folder / "server.log", env={"CLASSROOM_DATABASE": f"sqlite:///{folder / 'class.sqlite3'}"}
    ) as url:
        yield url


def test_a_class_end_to_end(browser, class_url):
    a_class_end_to_end(browser, class_url, "sqlite")


def test_a_forged_teacher_link_and_a_wrong_room_code_get_a_sentence(browser, class_url):
    """On SQLite only (it also ran on PostgreSQL): what the page says does not depend on the store, whose refusals on
    both are tests/classroom/test_class_rooms.py's test_teacher_actions_refuse_a_missing_or_forged_key and
    test_wrong_codes_are_counted_and_then_refused_but_for_a_room_the_client_is_in."""
    teacher = new_page(browser, {"width": 1280, "height": 900})
    teacher.goto(f"{class_url}/class")
    teacher.get_by_role("button", name="Start a class").click()
    join = teacher.get_by_text(re.compile("^Join at ")).first.inner_text()
    code = re.search(r"room=(\w+)", join).group(1)

    forger = new_page(browser, {"width": 1280, "height": 900})
    forger.goto(f"{class_url}/class?room={code}#teacher=WRONG")
    refusal = forger.locator("[data-testid=stAlertContentError]")
    refusal.get_by_text("Only the teacher's link can do this: it carries the class's teacher key.").wait_for()
    assert forger.get_by_role("heading", name=re.compile("^Class [0-9A-Z]{4}")).count() == 0
    assert forger.locator(".stage").count() == 0
    no_teacher_controls(forger)
    assert "teacher=" not in forger.url  # the key left the address bar

    forger.goto(f"{class_url}/class")
    wrong = "ZZZZ-ZZZZ" if code != "ZZZZZZZZ" else "YYYY-YYYY"
    forger.get_by_label("Room code (on the projector)").fill(wrong)
    forger.get_by_role("button", name="Join", exact=True).click()
    forger.locator("[data-testid=stAlertContentError]").get_by_text("No class has this code").wait_for()
    assert "seat=" not in forger.url
    forger.context.close()
    teacher.context.close()
