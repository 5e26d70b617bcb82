"""What a hostile visitor costs everyone else (issue 20), measured side by side in one run.

1. A flooded lesson input (finding 4): 23 MB of `1,` sent to the grad_replace box on Gradient consumption through
   the agent API, as a script sends it past the browser's max_chars, then 0.9 MB (just under the 1 MB a client may
   send): the server's RSS before, at its peak and once settled, and the slowest `/_stcore/health` while the request
   was in the server. The same floods against Streamlit's default limit (25 MB) show what the shipped 1 MB saves.
   Then the same values in one rerun message on the page's own WebSocket (every server has it; the agent API is
   for test servers only), 23 MB, 2 MB and 0.9 MB.
2. A frozen program (exponential work in one statement) until its worker is stopped at 5 s: the slowest health.
3. Issue 31's findings, each as the red team ran it, with what the server does now (tests/browser/probes.py):
   150 Checkpointing sessions opened and left (server memory); 100 requests for one download on one WebSocket;
   63 Playground sessions from one address against one from another; 1,100 half-sent requests through the
   classroom recipe (nginx in front of one replica); a visitor's clear_cache; a loop over the Graphviz module on
   64 connections through nginx; forged select-box values.
4. Issue 41's findings on class mode (tests/browser/class_probes.py), with the shipped limits: 300 students behind one
   address joining while it sends 100 wrong codes; 1,000 joins into one room; a room flood from one client; a class
   ended on one replica of two sharing an SQLite file (its traces left in the file and its log); through
   `python -m classroom.serve`, 1,100 follows on one seat and malformed steps; the CSV of `x;=1+1;`; the
   Referrer-Policy of each kind of answer.

Goal for health: 200 ms (the tests allow five times that). Run: python bench/bounds.py (a few minutes; starts
three servers with the agent API on, one after another). `python bench/bounds.py class` runs part 4 alone.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from classroom.report import answers_csv  # noqa: E402
from classroom.rooms import Classroom  # noqa: E402
from classroom.store import open_store  # noqa: E402
from deploy.replicas import PER_CLIENT, deployment  # noqa: E402
from tests.browser import class_probes, probes  # noqa: E402
from tests.browser.flood import flood_gradient_values, flood_over_websocket, watched  # noqa: E402
from tests.browser.harness import HEALTH_GOAL_S, AgentSession, _free_port, rss_mib, streamlit_server  # noqa: E402
from tests.playground.test_workers import EXPONENTIAL_COMPARE  # noqa: E402

FLOODS = {"23 MB": "1," * 11_500_000, "0.9 MB": "1," * 450_000}
LIMITS = {"shipped (1 MB)": (), "Streamlit's default (25 MB)": ("--server.maxWidgetStateSize", "25")}


@contextmanager
def server(*args: str) -> Iterator[tuple[str, int]]:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with streamlit_server(log, ("--server.enableAgentApi", "true", *args), with_pid=True) as running:
            yield running


def floods() -> None:
    print(
        f"{'client limit':28} {'sent':>7} {'status':>6} {'answer s':>8} {'RSS before':>10} {'peak':>6} "
        f"{'settled':>7} {'kept':>6} {'health during':>13} {'x goal':>6}"
    )
    for limit, args in LIMITS.items():
        with server(*args) as (url, pid):
            for name, payload in FLOODS.items():
                f = flood_gradient_values(url, pid, payload)
                print(
                    f"{limit:28} {name:>7} {f.status:>6} {f.seconds:8.2f} {f.rss_before_mib:8.0f} MiB "
                    f"{f.rss_peak_mib:6.0f} {f.rss_after_mib:7.0f} {f.rss_after_mib - f.rss_before_mib:+6.0f} "
                    f"{f.health_during_s * 1000:10.0f} ms {f.health_during_s / HEALTH_GOAL_S:6.2f}"
                )
    print("status 0: the server closed the connection before reading the whole body; 'kept' is RSS settled - before")


def websocket_floods() -> None:
    for limit, args in LIMITS.items():
        with server(*args) as (url, pid):
            for size in (23_000_000, 2_000_000, 900_000):
                answer, w, before, after = flood_over_websocket(url, pid, "1," * (size // 2))
                print(
                    f"WebSocket, {limit:28} {size / 1e6:5.1f} MB: {answer:32} RSS {before:.0f} -> "
                    f"peak {w.rss_peak_mib:.0f}, settled {after:.0f} MiB; "
                    f"slowest health {w.health_s * 1000:.0f} ms"
                )


def frozen_program() -> None:
    with server() as (url, pid):
        session = AgentSession(url)
        session.interact()
        session.interact(page="play")
        session.interact(widget_state={"playground_editor": "print('warm')"}, trigger={"key": "playground_run"})
        before = rss_mib(pid)
        run = {"widget_state": {"playground_editor": EXPONENTIAL_COMPARE}, "trigger": {"key": "playground_run"}}
        _, w = watched(url, pid, lambda: session.interact(**run))
        print(
            f"frozen program: answered in {w.seconds:.1f} s; slowest health {w.health_s * 1000:.0f} ms "
            f"({w.health_s / HEALTH_GOAL_S:.2f}x the goal); server RSS {before:.0f} MiB, "
            f"peak {w.rss_peak_mib:.0f} MiB"
        )


def issue_31() -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with streamlit_server(log, ("--server.enableAgentApi", "true"), with_pid=True) as (url, pid):
            d = probes.download_flood(url, log)
            print(
                f"2. 100 requests for Checkpointing's replay on one WebSocket: {d.builds} build(s) (100 before), "
                f"{d.answers} answers, {d.distinct_files} distinct file; another visitor's lesson opened in "
                f"{d.other_page_s:.2f} s (1.4-4.2 s before)"
            )
            c = probes.clear_cache_cost(url, pid)
            print(
                f"5. Memory policies, server CPU: first open {c.cold_s:.2f} s, a rerun {c.warm_s:.2f} s, a visitor's "
                f"clear_cache then a rerun {c.cleared_s:.2f} s (recomputed before); the least of three each"
            )
            for page, label, heading in (
                ("traversal", "Program", b"Backward traversal"),
                ("play", "Examples", b"Playground"),
            ):
                f = probes.forged_choice(url, log, page, label, heading, "<b>forged</b>")
                print(
                    f"7. a forged {label!r} on {page}: page answered {f.page_answered}, alert {f.alert}, "
                    f"value echoed {f.value_echoed}, tracebacks in the log {f.tracebacks}"
                )
        with streamlit_server(log) as url:
            q = probes.playground_flood(url)
            print(
                f"3. 63 Playground sessions from one address: another address's run answered in "
                f"{q.waited_s:.1f} s (37.4 s with one queue for all; ~5 min in the report), {q.refused} runs "
                "refused at once"
            )
        with streamlit_server(log, with_pid=True) as (url, pid):
            m = probes.checkpointing_sessions(url, pid)
            print(
                f"1. 150 Checkpointing sessions in {m.opened_s:.1f} s: RSS {m.baseline_mib:.0f} -> peak "
                f"{m.peak_mib:.0f} -> {m.settled_mib:.0f} MiB after they left (1,177 -> 2,264 MiB "
                "before)"
            )
    with deployment(replicas=1, port=_free_port(), first_replica_port=_free_port()) as single:
        port = int(single.url.rsplit(":", 1)[1])
        h = probes.half_open(port, single.prefix / "error.log")
        print(
            f"4. 1,100 half-sent requests through nginx: health {h.behind_burst_s * 1000:.0f} ms behind their burst, "
            f"then {h.health_worst_s * 1000:.0f} ms at worst, the "
            f"page {h.page_s * 1000:.0f} ms, a WebSocket opened {h.websocket_opened}, nginx's log "
            f"+{h.log_growth_bytes} bytes (the bare server: health timed out, +197 MB of log)"
        )
        st = probes.static_loop(port, single.replicas[0].process.pid, PER_CLIENT)
        print(
            f"6. the Graphviz module looped on {PER_CLIENT} connections for {st.seconds:.1f} s: {st.served} served "
            f"({st.served / st.seconds:.0f}/s; 141/s before), {st.refused} refused, replica CPU "
            f"{st.replica_cpu_s:.2f} s (18.4 of 20 s before), another client's file in "
            f"{st.other_client_s * 1000:.0f} ms; a page load's 100 files: {st.page_load_ok} served"
        )


@contextmanager
def classroom_on_file() -> Iterator[tuple[Path, Classroom, Classroom]]:
    """Two replicas' classrooms on one new SQLite file (the default store), and the file."""
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "class.sqlite3"
        ours, other = open_store(f"sqlite:///{database}"), open_store(f"sqlite:///{database}")
        try:
            yield database, Classroom(ours), Classroom(other)
        finally:
            ours.close()
            other.close()


def issue_41() -> None:
    with classroom_on_file() as (database, classroom, replica):
        s = class_probes.school_joins(classroom)
        print(
            f"300 students of 10 classes behind one address with 100 wrong codes among them: {s.joined} joined, "
            f"{s.wrong_counted} wrong codes counted, refusals {dict(s.refusals) or 'none'} (before: the 21st wrong "
            "code refused the right one)"
        )
        j = class_probes.seat_flood(classroom)
        print(f"1,000 joins into one room: {j.seated} seated, refused {dict(j.refusals)} (before: 1,000 seated)")
        r = class_probes.room_flood(classroom)
        print(
            f"60 classes started from one address: {r.started} started, refused {dict(r.refusals)}; a teacher "
            f"elsewhere started one: {r.other_teacher_started} (before: 42 rooms in 2.9 s filled the 50)"
        )
        e = class_probes.end_a_class(database, classroom, replica)
        print(
            f"a class ended on the other replica: {e.traces_before} traces (answers, nicknames, seat and key hashes) "
            f"in the files before End, {e.traces_after} after, WAL {e.wal_bytes_after} bytes (before: readable in the "
            "WAL 4 minutes later)"
        )
        room = classroom.create_room("seed", 40)
        asked = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
        seat = classroom.join(room.code, "10.0.0.1", "x;=1+1;").token
        classroom.answer(room.code, seat, asked.id, "x;=1+1;", right=False)
        row = answers_csv(classroom, room.code, room.teacher_key, nicknames=True).splitlines()[1]
        print(f"the CSV row of a student who typed x;=1+1; as nickname and answer: {row} (before: x;=1+1; raw)")
    with tempfile.TemporaryDirectory() as folder, class_probes.class_server(Path(folder)) as served:
        store = open_store(served.database)
        try:
            classroom = Classroom(store)
            room = classroom.create_room("seed", 40)
            seat, other = (classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2))
            f = class_probes.follow_flood(served.port, room.code, seat, other)
        finally:
            store.close()
        print(
            f"classroom.serve, 1,100 follows on one seat: {dict(f.statuses)}; another student's follow "
            f"{f.other_status} in {f.other_s * 1000:.0f} ms, the Class page in {f.page_s * 1000:.0f} ms "
            "(goal 1,500 ms; before: 503, and 2.8-4.9 s)"
        )
        m = class_probes.malformed_steps(served.port, served.log)
        print(
            f"classroom.serve, half-sent and malformed steps: the log grew {m.log_lines} line(s), "
            f"{m.tracebacks} traceback(s) (before: 3.8 KB of traceback each)"
        )
        base = f"http://127.0.0.1:{served.port}"
        policies = {path: class_probes.referrer_policy(base + path) for path in class_probes.POLICY_PATHS}
        print(f"Referrer-Policy of each kind of answer: {policies} (before: none)")


def main() -> None:
    if sys.argv[1:] == ["class"]:
        issue_41()
        return
    floods()
    websocket_floods()
    frozen_program()
    issue_31()
    issue_41()


if __name__ == "__main__":
    main()
