"""Read coreference annotations (CoNLL-2012, RuCoCo JSON) into `Document`s, validating everything.

Every reader collects *all* the problems of its input and raises one `core.problems.InputError`
listing them (file, line, column, message), so a researcher fixes a file in one round trip.
The CoNLL-2012 reader and the pairing of gold and system files are here, the RuCoCo JSON reader
in `core.metrics.rucoco`, the `Mention` and `Document` they return in `core.metrics.documents`
(all importable from here).

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

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from core.metrics.documents import Document as Document
from core.metrics.documents import Format as Format
from core.metrics.documents import Mention as Mention
from core.metrics.rucoco import read_rucoco_json as read_rucoco_json
from core.problems import Collector, InputError, Problem

FORMATS = ("conll2012", "rucoco-json")


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
        named = set(gold_names)  # once: a set per document made this quadratic (5 000: 20 s)
        extra = [d.name for d in system if d.name not in named]
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
