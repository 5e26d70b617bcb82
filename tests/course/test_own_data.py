"""A student's own points: pasted CSV rows (each refusal names its row), CSV written back, and the link."""

from __future__ import annotations

import numpy as np
import pytest

from course.own_data import LINK_POINTS, DataError, from_link, parse_csv, to_csv, to_link
from course.training import make_dataset


def test_rows_are_read_with_or_without_a_header_and_blank_lines():
    points, labels = parse_csv("x, y, class\n0.5, -1.25, 1\n\n-2, 3e-1, 0\n")
    np.testing.assert_array_equal(points, np.array([[0.5, -1.25], [-2, 0.3]], dtype=np.float32))
    assert labels.tolist() == [1, 0]
    again, _ = parse_csv(to_csv(points, labels))
    np.testing.assert_allclose(again, points, rtol=1e-3)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1, 2, 0\n3, abc, 1\n", "Row 2 ('3, abc, 1'): x and y must be numbers"),
        ("x,y,class\n1, 2, 0\n1, 2\n", "Row 3 ('1, 2') has 2 values"),
        ("1, 2, 2\n", "Row 1 ('1, 2, 2'): the class must be 0 or 1"),
        ("<b>x</b>, y, 1\n0, 0, 0\n", "Row 1 ('<b>x</b>, y, 1'): x and y must be numbers"),
        ("1, nan, 0\n", "Row 1 ('1, nan, 0'): x and y must be numbers"),
        ("1e9, 0, 0\n", "Row 1 ('1e9, 0, 0'): x and y must lie between"),
        ("x, y, class\n", "There are no rows to read"),
        ("0, 0, 1\n" * 501, "There are 501 rows: this lesson trains on at most 500"),
    ],
)
def test_a_bad_row_is_named_in_a_sentence(text, says):
    with pytest.raises(DataError, match=None) as refused:
        parse_csv(text)
    assert str(refused.value).startswith(says)


def test_a_link_keeps_the_points_to_a_thousandth_and_refuses_more_than_it_can_carry():
    points, labels = make_dataset("two moons", LINK_POINTS, seed=4)
    back, back_labels = from_link(to_link(points, labels))
    np.testing.assert_allclose(back, points, atol=5e-4)
    assert back_labels.tolist() == labels.tolist()
    many, many_labels = make_dataset("two moons", LINK_POINTS + 1)
    with pytest.raises(DataError, match="too many for a link"):
        to_link(many, many_labels)


@pytest.mark.parametrize(("text", "says"), [("abc", "cut short"), ("!!!!", "damaged"), ("A" * 2000, "longer than")])
def test_a_damaged_link_is_refused_in_a_sentence(text, says):
    with pytest.raises(DataError, match=says):
        from_link(text)
