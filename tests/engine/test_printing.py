"""Numbers as the seed prints them (`autodiff/printing.py`): each value numpy's shortest round-trip form of its dtype,
checked against numpy's own scalar text on random values of every magnitude."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autodiff.printing import format_array

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def numpys_text(array: np.ndarray) -> str:
    scalar = array.dtype.type if array.dtype.kind == "f" else np.float32
    if array.ndim == 0:
        return str(scalar(array))
    if array.ndim == 1:
        return "[" + ", ".join(str(scalar(v)) for v in array.tolist()) + "]"
    return "[" + ", ".join(numpys_text(row) for row in array) + "]"


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float32, np.float64, np.float16, np.int64]), shapes))
def test_every_value_reads_as_numpys_shortest_form_of_its_dtype(array):
    assert format_array(array) == numpys_text(array)


def test_the_seeds_numbers():
    assert format_array(np.array([5.4365635, 14.778112], dtype=np.float32)) == "[5.4365635, 14.778112]"
    assert format_array(np.array([[1, 2], [3, 4]])) == "[[1.0, 2.0], [3.0, 4.0]]"
