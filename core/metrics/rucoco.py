"""Read RuCoCo JSON coreference annotations into `Document`s (`read_rucoco_json`), collecting every
problem of the input into one `core.problems.InputError`; its mentions are character offsets
into the document's text (`core.metrics.formats` reads both formats).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from core.metrics.documents import Document, Mention
from core.problems import Collector, InputError, Problem
from core.tabular import MAX_DEPTH, json_too_deep


def read_rucoco_json(text: str, file: str = "<json>",
                     warnings: Collector | None = None) -> list[Document]:
    """Parse RuCoCo JSON: one object, a JSON list of objects, or JSON Lines (one object a line).

    Each object: `text` (string), `entities` (list of entities, each a non-empty list of
    `[start, end]` character offsets, `0 <= start < end <= len(text)`), `includes` (optional; if
    present one list per entity of the indices of the entities it includes, no self-reference and
    no cycle). A span may belong to one entity only. An optional `name` or `id` names the
    document (default `#1`, `#2`, … by position). Problems are located at the line and column
    where the document's object starts; the message gives the JSON path inside it. Other keys
    are ignored, with one warning per document naming them.
    """
    problems: list[Problem] = []
    warn = warnings if warnings is not None else Collector(file)
    objects = _split_json_documents(text, file, problems)
    documents: list[Document] = []
    for index, (obj, line, col) in enumerate(objects, start=1):
        if isinstance(obj, dict) and (unknown := sorted(set(obj) - RUCOCO_KEYS)):
            shown = ", ".join(repr(k[:40]) for k in unknown[:5])
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            warn.add(f"document {index}: ignored the key(s) {shown}{more}", line=line,
                     column=col, file=file)
        doc = _rucoco_document(obj, index, file, line, col, problems)
        if doc is not None:
            documents.append(doc)
    if not objects and not problems:
        problems.append(Problem(file, None, None, "no document found (empty input)"))
    if problems:
        raise InputError(problems)
    return documents


RUCOCO_KEYS = {"text", "entities", "includes", "name", "id"}


class _Positions:
    """Turn increasing character offsets of a text into (line, column), in one pass overall."""

    def __init__(self, text: str):
        self.text, self.pos, self.line, self.line_start = text, 0, 1, 0

    def __call__(self, pos: int) -> tuple[int, int]:
        newlines = self.text.count("\n", self.pos, pos)
        if newlines:
            self.line += newlines
            self.line_start = self.text.rfind("\n", self.pos, pos) + 1
        self.pos = pos
        return self.line, pos - self.line_start + 1


def _split_json_documents(
    text: str, file: str, problems: list[Problem]
) -> list[tuple[Any, int, int]]:
    """Return (object, line, column) for each document of a JSON / JSON list / JSONL input."""
    decoder = json.JSONDecoder()
    stripped = text.lstrip()
    if not stripped:
        return []
    # Python's JSON parser recurses: refuse absurd nesting before parsing (a RuCoCo document
    # nests 4 levels).
    if json_too_deep(text, MAX_DEPTH):
        problems.append(Problem(file, None, None,
                                f"invalid JSON: nested deeper than {MAX_DEPTH} levels"))
        return []
    start = len(text) - len(stripped)
    position = _Positions(text)
    try:
        if stripped.startswith("["):
            whole = json.loads(text)
            # Find where each element starts so problems point at their document.
            out = []
            pos = start + 1
            for obj in whole:
                while text[pos] in " \t\r\n,":
                    pos += 1
                _, end = decoder.raw_decode(text, pos)
                out.append((obj, *position(pos)))
                pos = end
            return out
        obj, end = decoder.raw_decode(text, start)
    except json.JSONDecodeError as e:
        problems.append(Problem(file, e.lineno, e.colno, f"invalid JSON: {e.msg}"))
        return []
    except (ValueError, RecursionError) as e:  # a number too long to convert; nesting
        problems.append(Problem(file, None, None, f"invalid JSON: {str(e).split(';')[0]}"))
        return []
    if not text[end:].strip():
        return [(obj, *position(start))]
    # JSON Lines: one object per non-blank line.
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((json.loads(line), number, len(line) - len(line.lstrip()) + 1))
        except json.JSONDecodeError as e:
            problems.append(Problem(file, number, e.colno, f"invalid JSON: {e.msg}"))
        except (ValueError, RecursionError) as e:
            problems.append(Problem(file, number, None, f"invalid JSON: {str(e).split(';')[0]}"))
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _rucoco_document(
    obj: Any, index: int, file: str, line: int, col: int, problems: list[Problem]
) -> Document | None:
    def bad(message: str) -> None:
        problems.append(Problem(file, line, col, f"document {index}: {message}"))

    if not isinstance(obj, dict):
        bad(f"expected a JSON object, found {type(obj).__name__}")
        return None
    before = len(problems)
    text = obj.get("text")
    if not isinstance(text, str):
        bad("'text' must be a string")
        text = None
    name = _rucoco_name(obj, index, bad)
    entities = _rucoco_entities(obj.get("entities"), text, bad)
    includes = _rucoco_includes(obj.get("includes"), len(entities), bad)
    if len(problems) > before:
        return None
    return Document(
        name=name,
        entities=tuple(entities),
        includes=tuple(includes),
        format="rucoco-json",
        text=text,
    )


def _rucoco_name(obj: dict[str, Any], index: int, bad: Callable[[str], None]) -> str:
    """The document's ``name`` (or ``id``; a numeric id names it as its digits), else
    ``#<index>``."""
    name: object = obj.get("name", obj.get("id"))
    if name is None:
        name = f"#{index}"
    elif isinstance(name, int) and not isinstance(name, bool):
        name = str(name)  # a numeric id names the document as its digits
    elif not isinstance(name, str) or not name.strip():
        bad(f"'name' must be a non-empty string, not {json.dumps(name)[:40]}")
        name = f"#{index}"
    return str(name)


def _rucoco_entities(entities_raw: object, text: str | None,
                     bad: Callable[[str], None]) -> list[tuple[Mention, ...]]:
    """One tuple of sorted mentions per entity (empty for an entity that is not a list); a
    span that is malformed, empty, outside the text or another entity's is reported and
    left out."""
    entities: list[tuple[Mention, ...]] = []
    owner: dict[Mention, int] = {}
    if not isinstance(entities_raw, list):
        bad("'entities' must be a list")
        entities_raw = []
    for i, entity in enumerate(entities_raw):
        if not isinstance(entity, list) or not entity:
            bad(f"entities[{i}] must be a non-empty list of [start, end] spans")
            entities.append(())
            continue
        mentions: list[Mention] = []
        for j, span in enumerate(entity):
            m = _rucoco_mention(span, f"entities[{i}][{j}]", text, bad)
            if m is None:
                continue
            if m in owner and owner[m] != i:
                bad(f"entities[{i}][{j}]: span [{m.start}, {m.end}] already belongs to "
                    f"entities[{owner[m]}]")
                continue
            owner[m] = i
            mentions.append(m)
        entities.append(tuple(sorted(set(mentions))))
    return entities


def _rucoco_mention(span: object, where: str, text: str | None,
                    bad: Callable[[str], None]) -> Mention | None:
    """The mention of one ``[start, end]`` span, or None (reported) when it is not one."""
    if not (isinstance(span, list) and len(span) == 2 and all(map(_is_int, span))):
        bad(f"{where} must be [start, end] with integer offsets, found {span!r}")
        return None
    s, e = span
    if s >= e:
        bad(f"{where}: start {s} is not before end {e}")
        return None
    if s < 0 or (text is not None and e > len(text)):
        length = len(text) if text is not None else "?"
        bad(f"{where}: span [{s}, {e}] lies outside the text (length {length})")
        return None
    return Mention(0, s, e)


def _rucoco_includes(includes_raw: object, n: int,
                     bad: Callable[[str], None]) -> list[tuple[int, ...]]:
    """The entities each of the ``n`` entities includes (none when ``includes`` is absent); a
    missing entity, an entity including itself and a cycle are reported."""
    includes: list[tuple[int, ...]] = [()] * n
    if includes_raw is None:
        return includes
    if not isinstance(includes_raw, list) or len(includes_raw) != n:
        bad(f"'includes' must be a list with one list per entity ({n})")
        return includes
    for i, children in enumerate(includes_raw):
        if not isinstance(children, list):
            bad(f"includes[{i}] must be a list of entity indices")
            continue
        good = []
        for c in children:
            if not _is_int(c) or not 0 <= c < n:
                bad(f"includes[{i}] points to a missing entity {c!r}")
            elif c == i:
                bad(f"includes[{i}] includes itself")
            else:
                good.append(c)
        includes[i] = tuple(sorted(set(good)))
    for cycle in _cycles(includes):
        bad("includes form a cycle: " + " → ".join(map(str, cycle)))
    return includes


def _cycles(includes: Sequence[Sequence[int]]) -> list[list[int]]:
    """Return one cycle (as a closed path) per strongly connected loop found by DFS."""
    white, grey, black = 0, 1, 2
    colour = [white] * len(includes)
    cycles: list[list[int]] = []
    for root in range(len(includes)):
        if colour[root] != white:
            continue
        path: list[int] = []
        stack: list[tuple[int, int]] = [(root, 0)]
        colour[root] = grey
        path.append(root)
        while stack:
            node, k = stack[-1]
            if k < len(includes[node]):
                stack[-1] = (node, k + 1)
                child = includes[node][k]
                if colour[child] == white:
                    colour[child] = grey
                    path.append(child)
                    stack.append((child, 0))
                elif colour[child] == grey:
                    cycles.append(path[path.index(child):] + [child])
            else:
                colour[node] = black
                path.pop()
                stack.pop()
    return cycles
