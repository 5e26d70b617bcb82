"""The stage's browser code, made into the one ES module each host runs.

The stage is ES modules in `js/`, each with one job: `model/` (DOM-free: the contract, the steps and frames, the
parts, the DOT of a view, the answer grammar), `view/`, `features/`, one `controller.mjs`, and an entry file per host
in `hosts/` (Streamlit's component, the exported HTML page, the notebook's anywidget). A host takes its code as one
module, a string: `bundle(host)` puts the modules its entry needs in dependency order (read from their `import`
lines), drops those lines and the `export` keywords, so they share one scope, and the comments (for the source's
reader: a line that is only a comment, or one after code where it is sure to be one; a JSDoc block stays); the
entry's own `export default` stays (Streamlit and anywidget mount through it). It is made when first asked, once per
process (about 10 ms a host on a busy two-core machine), from the files the package ships: nothing generated is
committed, so nothing can be stale. Without its comments the stage travels smaller than the single file it was cut
from did, though it does more now.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from pathlib import Path

JS = Path(__file__).resolve().parent / "js"
HOSTS = {"streamlit": "hosts/streamlit.mjs", "page": "hosts/page.mjs", "notebook": "hosts/notebook.mjs"}
# the one form of import the modules use: named, from a module beside them (a relative path)
IMPORT = re.compile(r'^import \{([^}]*)\} from "(\.{1,2}/[^"]+)";[ \t]*\n', re.M)
ANY_IMPORT = re.compile(r"^import\b.*", re.M)  # a static import of any form (a dynamic `import(url)` is indented)
EXPORTED = re.compile(r"^export (?:async )?(?:function\*?|const|let|class) ([\w$]+)", re.M)
EXPORT_KEYWORD = re.compile(r"^export (?=(?:async )?(?:function|const|let|class)\b)", re.M)
DECLARED = re.compile(r"^(?:export )?(?:async )?(?:function\*?|const|let|class) ([\w$]+)", re.M)
COMMENT_LINE = re.compile(r"^[ \t]*//.*\n", re.M)
# the lexer's tokens: in code (a comment or a string is one token), in a `${}` within a template, in its text
CODE_TOKEN = re.compile(r"""//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`""")
EXPRESSION_TOKEN = re.compile(CODE_TOKEN.pattern + r"|[{}]")
STRING_TOKEN = re.compile(r""""(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?""")
TEMPLATE_TOKEN = re.compile(r"\\[\s\S]|\$\{|`")


class BundleError(Exception):
    """The modules cannot make one bundle: an import of a missing module or name, a circle, a name declared twice."""


def _name(module: Path) -> str:
    return module.relative_to(JS).as_posix() if module.is_relative_to(JS) else module.name


@functools.cache
def _source(module: Path) -> str:
    return module.read_text(encoding="utf-8")


def _imports(module: Path, source: str) -> list[tuple[Path, list[str]]]:
    """Each module `module` imports, with the names it takes; any other form of import is an error."""
    found = [(m.start(), m.group(1), m.group(2)) for m in IMPORT.finditer(source)]
    starts = {start for start, _, _ in found}
    for line in ANY_IMPORT.finditer(source):
        if line.start() not in starts:
            raise BundleError(
                f"{_name(module)}: `{line.group(0)}` is not an import the bundle understands: write "
                '`import { a, b } from "./module.mjs";`'
            )
    out = []
    for _, names, target in found:
        wanted = [name.strip() for name in names.split(",") if name.strip()]
        renamed = [name for name in wanted if not re.fullmatch(r"[\w$]+", name)]
        if renamed:
            raise BundleError(
                f"{_name(module)} imports {', '.join(renamed)}: the bundle is one scope, names stay as they are"
            )
        out.append(((module.parent / target).resolve(), wanted))
    return out


def _template_lines(source: str) -> set[int]:
    """The lines (0-based) inside template literals that span lines: a `//` there is the template's text, not a
    comment. Found by a small lexer over comments, strings and `${}` (a string or a regex never spans lines)."""
    spans: list[tuple[int, int]] = []  # where each template literal starts and ends
    stack: list[int | None] = []  # an open template's start, or None for a `${` (or a `{` within one)
    pos = 0
    while token := (
        TEMPLATE_TOKEN if stack and stack[-1] is not None else EXPRESSION_TOKEN if stack else CODE_TOKEN
    ).search(source, pos):
        text, pos, top = token.group(), token.end(), stack[-1] if stack else None
        if stack and top is not None:  # in a template's text
            if text == "`":
                spans.append((stack.pop() or 0, pos))
            elif text == "${":
                stack.append(None)
        elif text == "`":
            stack.append(token.start())
        elif text == "{":
            stack.append(None)
        elif text == "}":
            stack.pop()
    spans += [(start, len(source)) for start in stack if start is not None]  # one left open runs to the end
    newlines = [m.start() for m in re.finditer("\n", source)]
    return {k + 1 for start, end in spans for k in range(bisect_right(newlines, start), bisect_left(newlines, end))}


def _without_comment_lines(source: str) -> str:
    """`source` without the lines that are only a comment: a `//` line, or a `/* */` block (the contract's typedefs)
    that starts a line and ends one, and without its indentation. Lines inside a template literal are its text."""
    keep = _template_lines(source)
    kept, in_block = [], False
    for k, text in enumerate(source.splitlines(keepends=True)):
        if k in keep:
            kept.append(text)
        elif in_block or text.lstrip().startswith("/*"):
            in_block = not text.rstrip().endswith("*/")
        elif not COMMENT_LINE.fullmatch(text):
            kept.append(_without_trailing_comment(text.lstrip(" \t")))  # indentation is for the reader too
    return "".join(kept)


def _without_trailing_comment(line: str) -> str:
    """`line` without a `// comment` after its code, where that is sure to be one: the code before it has no `/`
    (a regex literal or a division, which the lexer does not read) and opens no template; a `//` in a string stays."""
    pos = 0
    while token := CODE_TOKEN.search(line, pos):
        if token.group().startswith("//"):
            code = line[: token.start()]
            if "/" in STRING_TOKEN.sub("", code):
                return line
            return code.rstrip(" \t") + "\n"
        if token.group() == "`":
            return line
        pos = token.end()
    return line


def module_order(entry: Path) -> list[Path]:
    """`entry` and every module it imports, each after the modules it imports (depth first, in import order).
    Raises BundleError for a module or name that does not exist, and for a circular import."""
    order: list[Path] = []
    chain: list[Path] = []  # the imports being followed: a module met again on it closes a circle

    def visit(module: Path) -> None:
        if module in order:
            return
        if module in chain:
            circle = " -> ".join(_name(m) for m in [*chain[chain.index(module) :], module])
            raise BundleError(f"a circular import: {circle}. Pass a callback instead of importing back.")
        chain.append(module)
        for target, names in _imports(module, _source(module)):
            if not target.is_file():
                raise BundleError(f"{_name(module)} imports {target.name}, which does not exist ({target})")
            missing = set(names) - set(EXPORTED.findall(_source(target)))
            if missing:
                raise BundleError(
                    f"{_name(module)} imports {', '.join(sorted(missing))} from {_name(target)}, "
                    "which does not export it"
                )
            visit(target)
        chain.pop()
        order.append(module)

    visit(entry.resolve())
    return order


@functools.cache
def bundle(host: str) -> str:
    """The one ES module `host` runs ("streamlit", "page" or "notebook"): its entry and the modules it imports."""
    if host not in HOSTS:
        raise BundleError(f"no host named {host!r}: the hosts are {', '.join(HOSTS)}")
    return bundled(JS / HOSTS[host])


def bundled(entry: Path) -> str:
    """`entry` and the modules it imports as one module, in one scope."""
    order = module_order(entry)
    declared: dict[str, Path] = {}
    parts = []
    for module in order:
        source = _source(module)
        for name in DECLARED.findall(source):
            if name in declared:
                raise BundleError(
                    f"{name} is declared in {_name(declared[name])} and in {_name(module)}: the bundle is "
                    "one scope, so each top-level name is declared once"
                )
            declared[name] = module
        if module != order[-1] and re.search(r"^export default\b", source, re.M):
            raise BundleError(f"{_name(module)} has a default export: only a host's entry has one")
        body = EXPORT_KEYWORD.sub("", _without_comment_lines(IMPORT.sub("", source)))
        parts.append(body.strip("\n") + "\n")
    return "\n".join(parts)
