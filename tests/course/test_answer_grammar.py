"""One answer grammar: course/grading.py's parse_numbers reads every case of tests/fixtures/answer_grammar.json as the
stage's parseNumbers does (autodiff/stage/js/model/answers.mjs, checked by tests/js/answers.test.mjs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course.grading import ANSWER_CHARS, parse_numbers

GRAMMAR = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "answer_grammar.json").read_text())


@pytest.mark.parametrize("case", GRAMMAR["cases"], ids=lambda case: repr(case["typed"]))
def test_the_server_reads_each_answer_as_the_grammar_says(case):
    assert parse_numbers(case["typed"]) == case["numbers"]


def test_the_grammar_holds_the_issues_cases_and_the_limit_is_the_stages():
    typed = {case["typed"] for case in GRAMMAR["cases"]}
    assert {"−1", "-1", "1e-3", "[5, 7]", "5;7", "5, 7", "inf", "-inf", "nan", "", "abc", "1,,2"} <= typed
    stage = (Path(__file__).resolve().parents[2] / "autodiff" / "stage" / "js" / "model" / "answers.mjs").read_text()
    box = re.search(r"^const ANSWER_CHARS = ([\d_]+);", stage, re.M)
    assert box and int(box.group(1)) == ANSWER_CHARS  # the same box size on both sides
    assert parse_numbers("1 " * 1001) is None and parse_numbers("1 " * 1000) == [1.0] * 1000
