"""Numbers on the picture, one rule on both sides: autodiff/stage/format.py's four_digits writes every case of
tests/fixtures/four_digits.json as the stage's fourDigits does (autodiff/stage/js/model/numbers.mjs, checked by
tests/js/numbers.test.mjs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodiff.printing import format_float
from autodiff.stage.format import four_digits

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "four_digits.json").read_text())
CASES = FIXTURE["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda case: repr(case["value"]))
def test_python_writes_each_number_as_the_fixture_says(case):
    assert four_digits(case["value"]) == case["text"]


def test_the_fixture_holds_the_issues_cases():
    said = {case["value"]: case["text"] for case in CASES}
    assert said[10.996227] == "11.00" and said[0.5] == "0.5"  # the issue's: never `11`, and no zeros added to 0.5
    assert {"1e-05", "1.235e+04", "10.12", "-0"} <= set(said.values())  # exponents, a tie, a sign


@pytest.mark.parametrize("case", FIXTURE["float32"], ids=lambda case: repr(case["value"]))
def test_the_engine_prints_each_float32_as_the_fixture_says(case):
    assert format_float(case["value"]) == case["text"]  # the exact form of a value of four numbers or fewer
