"""Messages a script sends on the app's own WebSocket that the page never would (issue 31, findings 5 and 7): a
choice widget's value outside its options, Streamlit's developer-menu messages. Shared by
tests/browser/test_visitor_messages.py and bench/bounds.py."""

from __future__ import annotations

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
    """The server's WebSocket frames (unmasked, no extension negotiated), each binary one a ForwardMsg."""
    messages = []
    while (frame := _frame(answer)) is not None:
        opcode, payload, used = frame
        if opcode == 0x2:  # a binary frame (not a ping or a close)
            messages.append(ForwardMsg.FromString(payload))
        answer = answer[used:]
    return messages


def _frame(data: bytes) -> tuple[int, bytes, int] | None:
    """The first whole frame of `data` from the server: its opcode, its payload and the bytes it took."""
    if len(data) < 2:
        return None
    opcode, length, at = data[0] & 0x0F, data[1] & 0x7F, 2
    if length == 126:
        length, at = int.from_bytes(data[2:4], "big"), 4
    elif length == 127:
        length, at = int.from_bytes(data[2:10], "big"), 10
    if len(data) < at + length:
        return None
    return opcode, data[at : at + length], at + length


def rerun(page: str, widgets: dict[str, str] | None = None, trigger: str | None = None) -> BackMsg:
    """A rerun of `page` with text `widgets` set (by id) and the button `trigger` pressed."""
    message = BackMsg()
    message.rerun_script.page_name = page
    for widget_id, value in (widgets or {}).items():
        widget = message.rerun_script.widget_states.widgets.add()
        widget.id, widget.string_value = widget_id, value
    if trigger is not None:
        widget = message.rerun_script.widget_states.widgets.add()
        widget.id, widget.trigger_value = trigger, True
    return message


def clear_cache() -> BackMsg:
    message = BackMsg()
    message.clear_cache = True
    return message


class Socket:
    """One session's WebSocket, driven message by message as a script drives it."""

    def __init__(self, url: str, source: str = "127.0.0.1") -> None:
        self.connection, head = websocket(int(url.rsplit(":", 1)[1]), source)
        assert head.startswith("HTTP/1.1 101"), head[:200]
        self._pending = b""  # bytes of a frame not yet whole

    def send(self, message: BackMsg) -> None:
        data = message.SerializeToString()
        # one binary frame; a client must mask, and a zero mask leaves the bytes as they are
        self.connection.sendall(bytes([0x82, 0xFF]) + len(data).to_bytes(8, "big") + bytes(4) + data)

    def read(self, seconds: float, until_run_ends: bool = False) -> bytes:
        """Every byte the server sends within `seconds` (less if it closes, or, `until_run_ends`, once it says a run
        of the page finished). Its pings are answered, as a browser answers them, so a session read for a while stays
        open."""
        answer = b""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.connection.settimeout(left)
            try:
                chunk = self.connection.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            answer += chunk
            self._pending += chunk
            self._answer_pings()
            if until_run_ends and any(m.WhichOneof("type") == "script_finished" for m in forward_messages(answer)):
                break
        return answer

    def _answer_pings(self) -> None:
        while (frame := _frame(self._pending)) is not None:
            opcode, payload, used = frame
            self._pending = self._pending[used:]
            if opcode == 0x9:  # a ping: the same payload back in a (masked, zero-mask) pong
                self.connection.sendall(bytes([0x8A, 0x80 | len(payload)]) + bytes(4) + payload)

    def close(self) -> None:
        self.connection.close()


RUN_MOST_S = 60.0  # a rerun's answer is read until the server says the run finished, on a busy machine too
SETTLE_S = 1.0  # what the server sends after a message that starts no run (it starts none, it shows nothing)


def send(url: str, messages: list[BackMsg]) -> bytes:
    """Send each message on one WebSocket, the next once the last one's run finished (a rerun) or after SETTLE_S
    (anything else); returns every byte the server sent back (its ForwardMsgs: the page's text is in there, as
    protobuf strings)."""
    socket_ = Socket(url)
    answer = b""
    try:
        for message in messages:
            socket_.send(message)
            runs = message.WhichOneof("type") == "rerun_script"
            answer += socket_.read(RUN_MOST_S if runs else SETTLE_S, until_run_ends=runs)
    finally:
        socket_.close()
    return answer


def download_id(answer: bytes, label: str) -> str:
    """The deferred file id of the download button labelled `label` in a page's answer."""
    for message in forward_messages(answer):
        if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            if element.WhichOneof("type") == "download_button" and element.download_button.label == label:
                return element.download_button.deferred_file_id
    raise KeyError(f"no download button labelled {label!r}")


def session_id(answer: bytes) -> str:
    """The session's id, from the first answer of its WebSocket (a backend request must name it)."""
    for message in forward_messages(answer):
        if message.WhichOneof("type") == "new_session":
            return message.new_session.initialize.session_id
    raise KeyError("no new_session message")


def download_request(file_id: str, request_id: str, session: str) -> BackMsg:
    message = BackMsg()
    message.backend_operation_request.request_id = request_id
    message.backend_operation_request.session_id = session
    message.backend_operation_request.deferred_file.file_id = file_id
    return message
