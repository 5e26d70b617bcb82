import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playground.share import MAX_LINK_CHARS, ShareError, decode, encode


@given(st.text(max_size=2000))
def test_round_trip(text):
    assert decode(encode(text)) == text


def test_limits_and_garbage():
    with pytest.raises(ShareError):
        decode("x" * (MAX_LINK_CHARS + 1))
    with pytest.raises(ShareError):
        decode("%%%")
    bomb = __import__("base64").urlsafe_b64encode(zlib.compress(b"a" * 10_000_000)).decode()
    with pytest.raises(ShareError):
        decode(bomb)
    with pytest.raises(ShareError):
        encode("".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(8000)))  # incompressible
