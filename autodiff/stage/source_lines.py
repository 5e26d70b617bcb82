"""Which line of a program made each node, so the stage can light the running line beside the graph.

Read from the program's text, not recorded while it runs: a named node comes from its variable's assignment, and an
unnamed one (`x·3` inside `loss = (h + x * 3.0).sum()`) from the statement of the nearest named node that uses it,
which is the statement whose expression created it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from autodiff import NodeSnapshot
from autodiff.structure import parse_python


def assignment_lines(source: str) -> dict[str, tuple[int, int]]:
    """Each variable the program assigns -> the first and last line of its last assignment in the text."""
    try:
        tree = parse_python(source)
    except SyntaxError:
        return {}
    found: dict[str, tuple[int, int]] = {}
    for statement in ast.walk(tree):
        if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            span = (statement.lineno, statement.end_lineno or statement.lineno)
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and span >= found.get(name.id, (0, 0)):
                        found[name.id] = span
    return found


def node_lines(source: str, nodes: Iterable[NodeSnapshot], names: Mapping[int, str]) -> dict[int, tuple[int, int]]:
    """NodeId -> the lines (first, last) of the statement that made it; nodes with no such line are left out."""
    nodes = list(nodes)
    assigned = assignment_lines(source)
    users: dict[int, list[int]] = {}
    for node in nodes:
        for input_id in node.inputs:
            users.setdefault(int(input_id), []).append(int(node.id))
    lines: dict[int, tuple[int, int]] = {}
    for node in sorted(nodes, key=lambda n: -int(n.id)):  # users first: their ids are larger
        node_id = int(node.id)
        name = names.get(node_id)
        if name in assigned:
            lines[node_id] = assigned[name]
        elif name is None:
            made_by = [lines[user] for user in users.get(node_id, []) if user in lines]
            if made_by:
                lines[node_id] = min(made_by)
    return lines
