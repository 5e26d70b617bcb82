import numpy as np

from ui.exercise import matches, parse_numbers


def test_parse_numbers():
    assert parse_numbers("1, 2.5") == [1.0, 2.5]
    assert parse_numbers("[[1, 2], [3, 4]]") == [1.0, 2.0, 3.0, 4.0]
    assert parse_numbers("one") is None and parse_numbers("") is None


def test_matches_with_tolerance_and_shape():
    assert matches(np.array([5.4365635, 14.778112]), "5.4366, 14.778")
    assert matches(np.array([5.0, 7.0]), "5, 8") is False
    assert matches(np.array([5.0, 7.0]), "5") is False  # too few values
    assert matches(np.array([5.0]), "five") is None
