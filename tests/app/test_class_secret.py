"""Where a class's secrets live (ui/class_secret.py and .js): Python and the browser name the same types and keys,
and what a browser reports is taken into the session only when it is a secret for this page's class."""

from __future__ import annotations

import typing

import pytest
from test_stage_contract import js_fields, js_typedefs

from ui import class_secret
from ui.class_secret import SEAT, SECRET_JS, TEACHER, take

WIRE = {name: cls for name, cls in vars(class_secret).items() if typing.is_typeddict(cls)}


def test_python_and_the_browser_name_the_same_types_and_keys():
    js = js_typedefs(SECRET_JS)
    assert set(WIRE) == set(js) == {"KeptSeat", "SecretOrders", "FoundSecret"}
    for name, cls in WIRE.items():
        assert set(cls.__annotations__) == set(js_fields(js[name])), name


def test_a_teacher_key_and_a_seat_for_this_class_are_taken():
    session: dict = {}
    take({"role": "teacher", "room": "abcd-efgh", "secret": "K3y_-x"}, "", session)
    assert session == {TEACHER: ("ABCDEFGH", "K3y_-x")}
    session = {}
    take({"role": "student", "room": "ABCDEFGH", "secret": "s3at"}, "abcd-efgh", session)
    assert session == {SEAT: ("ABCDEFGH", "s3at")}


@pytest.mark.parametrize(
    "found",
    [
        None,
        "ABCDEFGH",
        {"role": "student", "room": "ABCDEFGH", "secret": "s3at", "extra": 1} | {"room": "IJKLMNOP"},  # another class
        {"role": "student", "room": "ABCDEFGH", "secret": "<b>seat</b>"},  # not a secret's characters
        {"role": "student", "room": "ABCDEFGH", "secret": "x" * 65},  # longer than any secret
        {"role": "teacher", "room": "", "secret": "key"},  # no room in the link
        {"role": "admin", "room": "ABCDEFGH", "secret": "key"},
        {"role": "student", "room": 7, "secret": "seat"},
    ],
)
def test_anything_else_a_browser_reports_is_ignored(found):
    session: dict = {}
    take(found, "ABCDEFGH", session)
    assert session == {}
