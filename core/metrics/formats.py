"""Read coreference annotations (CoNLL-2012, RuCoCo JSON) into `Document`s, validating everything.

Every reader collects *all* the problems of its input and raises one `core.problems.InputError`
listing them (file, line, column, message), so a researcher fixes a file in one round trip.

Mentions are `Mention(sentence, start, end)` with `end` exclusive:
- CoNLL-2012: `sentence` is the 0-based index of the sentence (blank-line separated block) in the
  document, `start`/`end` 0-based token positions in that sentence (the line's rank, not the
  word-number column, so a file with odd numbering still aligns by position);
- RuCoCo JSON: `sentence` is always 0, `start`/`end` are character offsets into `text`
  (Python code points, `text[start:end]` is the mention).

Example::

    >>> doc, = read_conll2012("#begin document (d); part 000\\n"
    ...                      "d 0 0 John (0)\\nd 0 1 sleeps -\\nd 0 2 he (0)\\n#end document\\n")
    >>> doc.entities
    ((Mention(sentence=0, start=0, end=1), Mention(sentence=0, start=2, end=3)),)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from core.problems import Collector, InputError, Problem
from core.tabular import MAX_DEPTH, json_too_deep

FORMATS = ("conll2012", "rucoco-json")
Format = Literal["conll2012", "rucoco-json"]


class Mention(NamedTuple):
    """A mention: sentence index, start and exclusive end (tokens for CoNLL, characters for RuCoCo)."""

    sentence: int
    start: int
    end: int

    def overlaps(self, other: Mention) -> bool:
        """Return whether the two spans share at least one token/character."""
        return (
            self.sentence == other.sentence
            and self.start < other.end
            and other.start < self.end
        )


@dataclass(frozen=True)
class Document:
    """One annotated document (one item).

    `entities` are tuples of mentions in document order, entities ordered by their first
    appearance; `includes[i]` lists the entities that entity i's plural mentions refer to
    (RuCoCo only, empty tuples for CoNLL). `sentence_lengths` (CoNLL) lets gold and system be
    checked for the same tokenisation; `text` (RuCoCo) must be identical on both sides.
    """

    name: str
    entities: tuple[tuple[Mention, ...], ...]
    includes: tuple[tuple[int, ...], ...] = ()
    format: Format = "conll2012"
    text: str | None = None
    sentence_lengths: tuple[int, ...] = ()
    part: str | None = None

    @property
    def mentions(self) -> frozenset[Mention]:
        return frozenset(m for e in self.entities for m in e)

    @property
    def has_includes(self) -> bool:
        return any(self.includes)


# --------------------------------------------------------------------------------------------
# CoNLL-2012
# --------------------------------------------------------------------------------------------

_BEGIN = re.compile(r"#\s*begin document \((?P<name>.*?)\);?(?:\s*part\s+(?P<part>\S+))?\s*$")
_END = re.compile(r"#\s*end document\b")
# A mention bracket anywhere in a coreference cell: `(12)`, `(12` or `12)`. Like scorch's reader
# and the reference scorer, the cell is scanned for brackets, so parts need no `|` between them
# (`(1(3`, `3)1)`) and anything else in the cell is ignored (and reported as a warning).
_BRACKET = re.compile(r"\((\d+)\)|\((\d+)|(\d+)\)")


def conll_document_name(name: str, part: str | None) -> str:
    """Return the document key scorch uses: `name-part` (or `name` without a part)."""
    return f"{name}-{part}" if part is not None else name


@dataclass
class _OpenDoc:
    name: str
    part: str | None
    line: int
    # cluster id -> mentions, in order of first opening
    clusters: dict[str, list[Mention]] = field(default_factory=dict)
    sentence_lengths: list[int] = field(default_factory=list)
    tokens_in_sentence: int = 0
    # cluster id -> stack of (token, line, column)
    open_brackets: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)


def read_conll2012(text: str, file: str = "<conll>",
                   warnings: Collector | None = None) -> list[Document]:
    """Parse a CoNLL-2012 file: one `#begin document (name); part N` … `#end document` per item.

    Read as the CoNLL reference scorer and scorch read it: the coreference column is the last
    whitespace-separated column of each token line, whatever the line's column count; `-` means
    no mention, else the cell holds brackets `(12`, `12)` or `(12)`, with or without `|` between
    them (`(1|(3`, `(1(3`). Within a line, openings are processed before closings. A mention may
    not cross a sentence boundary (a blank line). Lines starting with `#` other than begin/end
    are comments. A mention repeated in one entity is kept once; a mention in several entities
    stays in the entity that appeared first (scorch's and the reference scorer's de-duplication).

    What those tools pass over silently is read the same way and reported to `warnings` (file,
    line, column): a token line whose column count differs from the file's first token line, a
    line with one column only (read as the coreference column), and anything in the coreference
    cell that is not a bracket with a numeric id (`(A)`, `*`, `((`). Unbalanced brackets, which
    the tools refuse, stay errors.
    """
    problems: list[Problem] = []
    documents: list[Document] = []
    seen_names: dict[str, int] = {}
    n_columns: int | None = None
    doc: _OpenDoc | None = None
    warn = warnings if warnings is not None else Collector(file)

    def close_sentence(d: _OpenDoc) -> None:
        for cid, stack in d.open_brackets.items():
            for _token, line, col in stack:
                problems.append(Problem(file, line, col, f"unclosed mention ({cid}"))
        d.open_brackets = {}
        if d.tokens_in_sentence:
            d.sentence_lengths.append(d.tokens_in_sentence)
        d.tokens_in_sentence = 0

    def finish(d: _OpenDoc) -> None:
        close_sentence(d)
        key = conll_document_name(d.name, d.part)
        if not d.sentence_lengths:
            problems.append(Problem(file, d.line, 1, f"document ({d.name}) has no tokens"))
        if key in seen_names:
            problems.append(
                Problem(file, d.line, 1, f"document ({d.name}) part {d.part} repeats the one "
                        f"at line {seen_names[key]}")
            )
        seen_names.setdefault(key, d.line)
        documents.append(
            Document(
                name=key,
                part=d.part,
                entities=_deduplicate(d.clusters.values()),
                format="conll2012",
                sentence_lengths=tuple(d.sentence_lengths),
            )
        )

    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        if stripped.startswith("#"):
            begin = _BEGIN.match(stripped)
            if begin:
                if doc is not None:
                    problems.append(
                        Problem(file, doc.line, 1, f"document ({doc.name}) has no #end document "
                                f"before the next #begin document at line {number}")
                    )
                    finish(doc)
                doc = _OpenDoc(name=begin["name"], part=begin["part"], line=number)
            elif _END.match(stripped):
                if doc is None:
                    problems.append(Problem(file, number, 1, "#end document without #begin document"))
                else:
                    finish(doc)
                    doc = None
            continue  # other '#' lines are comments
        if not stripped:
            if doc is not None:
                close_sentence(doc)
            continue
        if doc is None:
            problems.append(Problem(file, number, 1, "token line outside a document"))
            continue
        columns = stripped.split()
        if n_columns is None:
            n_columns = len(columns)
        elif len(columns) != n_columns:
            warn.add(f"{len(columns)} columns where the first token line has {n_columns}; the "
                     "last one is read as the coreference column", line=number, column=1,
                     file=file)
        if len(columns) == 1:
            warn.add("one column only: read as the coreference column, the word left empty",
                     line=number, column=1, file=file)
        token = doc.tokens_in_sentence
        doc.tokens_in_sentence += 1
        coref = columns[-1]
        if coref == "-":
            continue
        col0 = line.rfind(coref) + 1
        _read_coref_cell(doc, coref, token, number, col0, file, problems, warn)

    if doc is not None:
        problems.append(Problem(file, doc.line, 1, f"document ({doc.name}) has no #end document"))
        finish(doc)
    if not documents and not problems:
        problems.append(Problem(file, None, None, "no document found (empty input)"))
    if problems:
        raise InputError(problems)
    return documents


def _read_coref_cell(
    doc: _OpenDoc, cell: str, token: int, line: int, col0: int, file: str,
    problems: list[Problem], warnings: Collector,
) -> None:
    """Apply the brackets of one coreference cell to the open brackets of `doc`.

    Unbalanced brackets are problems; text that is not a bracket is skipped with a warning.
    """
    opens: list[tuple[str, int]] = []
    closes: list[tuple[str, int]] = []
    at = 0
    for m in _BRACKET.finditer(cell):
        _skipped(cell[at:m.start()], col0 + at, line, file, warnings)
        at = m.end()
        col = col0 + m.start()
        both, opening, closing = m.groups()
        if both is not None:
            opens.append((str(int(both)), col))  # "007" and "7" are the same cluster
            closes.append((str(int(both)), col))
        elif opening is not None:
            opens.append((str(int(opening)), col))
        else:
            closes.append((str(int(closing)), col))
    _skipped(cell[at:], col0 + at, line, file, warnings)
    for cid, col in opens:
        doc.open_brackets.setdefault(cid, []).append((token, line, col))
        doc.clusters.setdefault(cid, [])
    for cid, col in closes:
        stack = doc.open_brackets.get(cid)
        if not stack:
            problems.append(Problem(file, line, col, f"closing bracket {cid}) without an opening one"))
            continue
        start, _, _ = stack.pop()
        sentence = len(doc.sentence_lengths)
        doc.clusters[cid].append(Mention(sentence, start, token + 1))


def _skipped(text: str, col: int, line: int, file: str, warnings: Collector) -> None:
    """Warn about text of a coreference cell that is neither a bracket nor a `|` separator."""
    stray = text.strip("|")
    if stray:
        warnings.add(f"ignored {stray!r} in the coreference column (not a mention bracket)",
                     line=line, column=col + (len(text) - len(text.lstrip("|"))), file=file)


def _deduplicate(clusters: Iterable[Iterable[Mention]]) -> tuple[tuple[Mention, ...], ...]:
    """Keep each mention once, in the first entity that has it; drop emptied entities."""
    seen: set[Mention] = set()
    out = []
    for cluster in clusters:
        mentions = sorted(set(cluster) - seen)
        seen.update(mentions)
        if mentions:
            out.append(tuple(mentions))
    return tuple(out)


def conll_word(columns: list[str]) -> str:
    """Return the word of a CoNLL token line: column 4 of CoNLL-2012 (≥ 5 columns), else the
    column just before the coreference column (`John (0)`, `1 John (0)`)."""
    if len(columns) >= 5:
        return columns[3]
    return columns[-2] if len(columns) >= 2 else ""


def conll_tokens(text: str) -> dict[str, list[list[str]]]:
    """Return {document key: sentences of words} of a CoNLL file `read_conll2012` has accepted.

    Mirrors `read_conll2012`'s positions (the same document delimiters): sentences are
    blank-line separated blocks of token lines, a token's position is its rank in the sentence;
    `#` lines other than begin/end are comments.
    """
    out: dict[str, list[list[str]]] = {}
    sentences: list[list[str]] | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#"):
            begin = _BEGIN.match(stripped)
            if begin:
                sentences = out.setdefault(conll_document_name(begin["name"], begin["part"]), [[]])
            elif _END.match(stripped):
                sentences = None
            continue
        if sentences is None:
            continue
        if not stripped:
            if sentences[-1]:
                sentences.append([])
            continue
        sentences[-1].append(conll_word(stripped.split()))
    for doc in out.values():
        if doc and not doc[-1]:
            doc.pop()
    return out


# --------------------------------------------------------------------------------------------
# RuCoCo JSON
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Gold / system pairs
# --------------------------------------------------------------------------------------------


def read_documents(text: str, *, format: Format, file: str,
                   warnings: Collector | None = None) -> list[Document]:
    """Read one file in the given format (`conll2012` or `rucoco-json`); what was read
    leniently goes to `warnings`."""
    if format == "conll2012":
        return read_conll2012(text, file, warnings)
    if format == "rucoco-json":
        return read_rucoco_json(text, file, warnings)
    raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")


def read_gold_and_system(
    gold_text: str,
    system_text: str,
    *,
    format: Format,
    gold_file: str = "gold",
    system_file: str = "system",
    warnings: Collector | None = None,
) -> list[tuple[Document, Document]]:
    """Read and pair gold and system documents, raising one `InputError` with every problem.

    CoNLL documents pair by name and part (in gold order); RuCoCo documents pair by position,
    and when both sides name them the names must agree. Different document sets are reported as
    one problem listing what is missing on each side. Paired CoNLL documents must have the same
    sentence lengths; paired RuCoCo documents the same text.
    """
    both = Collector(gold_file)
    gold: list[Document] = []
    system: list[Document] = []
    for text, file, out in ((gold_text, gold_file, gold), (system_text, system_file, system)):
        try:
            out.extend(read_documents(text, format=format, file=file, warnings=warnings))
        except InputError as e:
            both.extend(e)
    both.raise_if_any()

    problems: list[Problem] = []

    pairs: list[tuple[Document, Document]] = []
    if format == "conll2012":
        by_name = {d.name: d for d in system}
        gold_names = [d.name for d in gold]
        missing = [n for n in gold_names if n not in by_name]
        extra = [d.name for d in system if d.name not in set(gold_names)]
        if missing or extra:
            parts = [f"gold has {len(gold)} documents, system has {len(system)}"]
            if missing:
                parts.append("missing from the system: " + ", ".join(missing))
            if extra:
                parts.append("not in the gold: " + ", ".join(extra))
            raise InputError([Problem(system_file, None, None, "; ".join(parts))])
        for g in gold:
            s = by_name[g.name]
            if g.sentence_lengths != s.sentence_lengths:
                problems.append(
                    Problem(system_file, None, None, f"document {g.name}: tokenisation differs "
                            f"from the gold ({_describe_lengths(g, s)})")
                )
            pairs.append((g, s))
    else:
        if len(gold) != len(system):
            raise InputError([
                Problem(system_file, None, None,
                        f"gold has {len(gold)} documents, system has {len(system)}")
            ])
        mismatched = [
            f"{i}: gold {g.name!r} vs system {s.name!r}"
            for i, (g, s) in enumerate(zip(gold, system, strict=True), start=1)
            if g.name != s.name and not (g.name.startswith("#") or s.name.startswith("#"))
        ]
        if mismatched:
            raise InputError([
                Problem(system_file, None, None, "document names differ at position "
                        + "; ".join(mismatched))
            ])
        for i, (g, s) in enumerate(zip(gold, system, strict=True), start=1):
            if g.text != s.text:
                problems.append(
                    Problem(system_file, None, None, f"document {i} ({s.name}): text differs "
                            "from the gold's")
                )
            pairs.append((g, s))
    if problems:
        raise InputError(problems)
    return pairs


def _describe_lengths(g: Document, s: Document) -> str:
    if len(g.sentence_lengths) != len(s.sentence_lengths):
        return f"{len(g.sentence_lengths)} sentences in the gold, {len(s.sentence_lengths)} here"
    for i, (a, b) in enumerate(zip(g.sentence_lengths, s.sentence_lengths, strict=True), 1):
        if a != b:
            return f"sentence {i} has {a} tokens in the gold, {b} here"
    return "same lengths"  # pragma: no cover
