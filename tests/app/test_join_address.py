"""The join link's address (ui/join_address.py): never a host that only the teacher's computer reaches. The address a
public URL or the page's own network address gives, and on a page opened at localhost the sentence instead of a link
and a QR code (the Class page through AppTest, whose page has no address of its own, as a loopback one)."""

from __future__ import annotations

import pytest
from apptest import open_link, stage_data

from classroom.serve import PUBLIC_URL_ENV, is_local_host
from ui.join_address import UNREACHABLE, join_address, public_base

PAGE = "pages/teach/class_mode.py"
LOCAL = [
    "http://localhost:8501/class",
    "http://LOCALHOST:8501/class",
    "http://app.localhost:8501/class",
    "http://127.0.0.1:8501/class",
    "http://127.8.9.10:8501/class",
    "http://[::1]:8501/class",
    "http://[::ffff:127.0.0.1]:8501/class",
    "http://0.0.0.0:8501/class",
    "https://localhost/class",
]


@pytest.mark.parametrize("url", LOCAL)
def test_a_page_on_a_loopback_or_localhost_address_has_no_join_address(url):
    assert join_address(url, {}) is None


def test_no_page_address_and_no_public_url_is_no_join_address():
    assert join_address(None, {}) is None
    assert join_address("", {PUBLIC_URL_ENV: ""}) is None
    assert join_address("http://localhost:8501/class", {PUBLIC_URL_ENV: "not an address"}) is None
    assert join_address("http://localhost:8501/class", {PUBLIC_URL_ENV: "ftp://192.0.2.2/"}) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://192.0.2.2:8501/class",
        "http://[fd00::2]:8501/class",
        "https://class.example.org/class",
        "http://laptop/class",
    ],
)
def test_a_page_opened_at_an_address_others_reach_keeps_it(url):
    assert join_address(url, {}) == url


def test_the_public_url_wins_and_the_page_name_goes_after_it():
    env = {PUBLIC_URL_ENV: "http://192.0.2.2:8501"}
    assert join_address("http://localhost:8501/class", env) == "http://192.0.2.2:8501/class"
    assert join_address("http://10.1.2.3:8501/class", env) == "http://192.0.2.2:8501/class"
    assert join_address(None, env) == "http://192.0.2.2:8501/class"
    behind_a_proxy = {PUBLIC_URL_ENV: "https://school.example.org/autodiff/"}
    assert join_address("http://127.0.0.1:8501/class", behind_a_proxy) == "https://school.example.org/autodiff/class"
    assert public_base(behind_a_proxy) == "https://school.example.org/autodiff"


def test_local_hosts():
    for host in ("localhost", "127.0.0.1", "127.255.0.1", "::1", "[::1]", "0.0.0.0", "::", "localhost."):
        assert is_local_host(host), host
    for host in ("192.0.2.2", "10.0.0.1", "fd00::2", "example.org", "mylocalhost"):
        assert not is_local_host(host), host


def test_a_class_on_a_page_with_no_address_for_phones_shows_the_sentence_and_no_link_or_qr_code(monkeypatch):
    monkeypatch.delenv(PUBLIC_URL_ENV, raising=False)
    teacher = open_link(PAGE)
    teacher.selectbox(key="class_program").set_value("seed")
    teacher.button(key="class_start_send").click().run()
    assert not teacher.exception
    code, key = teacher.session_state["class_teacher"]
    assert [w.value for w in teacher.warning] == [UNREACHABLE]
    shown = "\n".join(str(m.value) for m in teacher.markdown)
    assert f"{code[:4]}-{code[4:]}" in shown  # the room code stays
    assert "Join at" not in shown and "localhost" not in shown and "127.0.0.1" not in shown
    assert not any("QR code" in h.proto.body for h in teacher.get("html"))
    join = stage_data(teacher)["classroom"]["join"]  # the stage's own panel
    assert "Join at" not in join and "localhost" not in join and "127.0.0.1" not in join
