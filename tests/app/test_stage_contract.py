"""The stage's contract, checked at every level: the trace's event classes, the Python TypedDicts that carry them
to the browser (autodiff/stage/: payload.py, events.py, chain_rule.py, groups.py, format.py) and the JSDoc typedefs
of its browser modules name the same event kinds, the same keys and the same nested types. Renaming a trace class
fails here."""

import re
import sys
import typing

from autodiff import trace
from autodiff.stage import STAGE_JS, chain_rule, events, format, groups, payload, replay_payload
from autodiff.stage.bundle import JS
from course.programs import record_program

PYTHON_TYPES = {
    name: cls
    for module in (payload, events, chain_rule, groups, format)
    for name, cls in vars(module).items()
    if typing.is_typeddict(cls) and cls.__module__ == module.__name__
}
TRACE_EVENTS = typing.get_args(trace.Event)
CONTRACT_JS = (JS / "model" / "contract.mjs").read_text()


def js_typedefs(source: str = CONTRACT_JS) -> dict[str, str]:
    """Each `@typedef {type} Name` of a script's first JSDoc block (the stage's contract module, by default; a
    bundle drops comment blocks): Name -> its type, the comment's `*` removed."""
    doc = re.search(r"/\*\*(.*?)\*/", source, re.S).group(1)
    doc = re.sub(r"\n\s*\*", " ", doc)
    typedefs = {}
    for match in re.finditer(r"@typedef \{", doc):
        depth, k = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(doc[k], 0)
            k += 1
        name = re.match(r"\s*(\w+)", doc[k:]).group(1)
        typedefs[name] = doc[match.end() : k - 1].strip()
    return typedefs


def js_fields(record: str) -> dict[str, str]:
    """`{a: T, b: U}` -> {"a": "T", "b": "U"} (commas inside nested types are not separators)."""
    assert record.startswith("{") and record.endswith("}"), record
    fields, depth, start, body = {}, 0, 0, record[1:-1] + ","
    for k, char in enumerate(body):
        depth += {"{": 1, "(": 1, "<": 1, "}": -1, ")": -1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            key, _, kind = body[start:k].partition(":")
            fields[key.strip().rstrip("?")] = kind.strip()
            start = k + 1
    return fields


def annotations(typed_dict: type) -> dict[str, str]:
    """A TypedDict's keys and their annotations as written (the modules postpone them); a module's own Literal alias
    (`GroupKind`) is read as the values it names."""
    module = sys.modules[typed_dict.__module__]
    out = {}
    for key, annotation in typed_dict.__annotations__.items():
        text = getattr(annotation, "__forward_arg__", annotation)
        alias = getattr(module, text, None) if isinstance(text, str) else None
        out[key] = repr(alias) if typing.get_origin(alias) is typing.Literal else text
    return out


def shape(annotation: str) -> tuple[set[str], set[str]]:
    """What a type says beyond its primitives: the named types it nests, and its literal values."""
    names = set(re.findall(r"\b[A-Z]\w+\b", annotation)) & (set(PYTHON_TYPES) | set(js_typedefs()))
    return names, set(re.findall(r"""["'](\w+)["']""", annotation))


def test_each_trace_class_declares_its_kind_and_the_contract_has_exactly_those():
    kinds = {cls.kind for cls in TRACE_EVENTS}
    assert {cls.__name__ for cls in TRACE_EVENTS} == kinds
    assert all(cls.kind == cls.__name__ for cls in TRACE_EVENTS)  # a renamed class must rename its kind too
    python = [shape(annotations(t)["kind"])[1] for t in typing.get_args(events.StageEvent)]
    assert set().union(*python) == kinds and all(len(k) == 1 for k in python)
    union = js_typedefs()["StageEvent"]
    js = {js_fields(js_typedefs()[name])["kind"].strip('"') for name in re.findall(r"\w+", union)}
    assert js == kinds
    listed = re.search(r"const EVENT_KINDS = new Set\(\[([^\]]*)\]\)", STAGE_JS).group(1)
    assert set(re.findall(r'"(\w+)"', listed)) == kinds


def test_every_typedef_has_the_same_keys_and_nested_types_on_both_sides():
    typedefs = js_typedefs()
    records = {name: t for name, t in typedefs.items() if t.startswith("{")}
    assert set(records) == set(PYTHON_TYPES)
    for name, record in records.items():
        js = js_fields(record)
        python = annotations(PYTHON_TYPES[name])
        assert set(js) == set(python), name
        for key, annotation in python.items():
            assert shape(annotation) == shape(js[key]), (name, key, annotation, js[key])


def test_a_recorded_backward_sends_each_event_with_exactly_its_kinds_keys():
    seen = set()
    for key, checkpointing in [("seed", "none"), ("chain", "balanced")]:
        run = record_program(key, checkpointing=checkpointing)
        for event in replay_payload(run.before, run.recorder, run.names)["events"]:
            assert set(event) == set(PYTHON_TYPES[f"{event['kind']}Event"].__annotations__), event
            seen.add(event["kind"])
    assert {"TapeBuilt", "StepStarted", "GradientRegistered", "GradientConsumed", "Recomputed"} <= seen
