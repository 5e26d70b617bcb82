"""Messages a script sends on the app's own WebSocket that the page never would (issue 31, findings 5 and 7): a
choice widget's value outside its options, Streamlit's developer-menu messages. Shared by
tests/browser/test_visitor_messages.py and bench/bounds.py."""

from __future__ import annotations

import socket
import time

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from .harness import websocket


def element_id(url: str, page: str, label: str) -> str:
    """The id Streamlit gives the widget labelled `label` on `page` (the same in every session), read from the
    elements the server sends when the page runs."""
    for message in forward_messages(send(url, [rerun(page)])):
        if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            kind = element.WhichOneof("type")
            widget = getattr(element, kind) if kind else None
            if getattr(widget, "label", None) == label and getattr(widget, "id", ""):
                return widget.id
    raise KeyError(f"no widget labelled {label!r} on {page!r}")


def forward_messages(answer: bytes) -> list[ForwardMsg]:
    """The server's WebSocket frames (unmasked, no extension negotiated), each a ForwardMsg."""
    messages, at = [], 0
    while at + 2 <= len(answer):
        opcode, length, at = answer[at] & 0x0F, answer[at + 1] & 0x7F, at + 2
        if length == 126:
            length, at = int.from_bytes(answer[at : at + 2], "big"), at + 2
        elif length == 127:
            length, at = int.from_bytes(answer[at : at + 8], "big"), at + 8
        if at + length > len(answer):
            break
        if opcode == 0x2:  # a binary frame (not a ping or a close)
            messages.append(ForwardMsg.FromString(answer[at : at + length]))
        at += length
    return messages


def rerun(page: str, widgets: dict[str, str] | None = None) -> BackMsg:
    message = BackMsg()
    message.rerun_script.page_name = page
    for widget_id, value in (widgets or {}).items():
        widget = message.rerun_script.widget_states.widgets.add()
        widget.id, widget.string_value = widget_id, value
    return message


def clear_cache() -> BackMsg:
    message = BackMsg()
    message.clear_cache = True
    return message


def send(url: str, messages: list[BackMsg], settle_s: float = 4.0) -> bytes:
    """Send each message on one WebSocket, `settle_s` apart (a rerun finishes meanwhile); returns every byte the
    server sent back (its ForwardMsgs: the page's text is in there, as protobuf strings)."""
    connection, head = websocket(int(url.rsplit(":", 1)[1]))
    assert head.startswith("HTTP/1.1 101"), head[:200]
    answer = b""
    try:
        for message in messages:
            data = message.SerializeToString()
            # one binary frame; a client must mask, and a zero mask leaves the bytes as they are
            connection.sendall(bytes([0x82, 0xFF]) + len(data).to_bytes(8, "big") + bytes(4) + data)
            answer += _read_for(connection, settle_s)
    finally:
        connection.close()
    return answer


def _read_for(connection: socket.socket, seconds: float) -> bytes:
    answer = b""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        answer += chunk
    return answer
