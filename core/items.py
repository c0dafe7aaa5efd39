"""Parse and validate item files completely before anything is written; build coreference items.

Item files (CSV/TSV or JSON Lines, read by `core.tabular`): `id` (required), `text` or
`text_a`/`text_b`, `control` (0/1), `role` (main, screening or check), `system` and `source`
(the system that produced the item and the source it answers, docs/systems.md), and prefixed columns
`metric:<name>`, `feature:<name>`, `meta:<name>`, `gold:<question>` and `tolerance:<question>`
(a screening or check item's known answer to a question and how far from it an answer may be),
and `outputs` (a comparison: the ids of the items it compares, `a|b|c`, docs/comparisons.md).
`items_parse` returns `ItemRow`s or raises one `InputError` listing every
problem; `items_stream` checks the same rows one by one without holding them (the bulk import
checks the ids across rows afterwards); `studies.services.items_import` stores them.

Coreference items come from a gold and a system annotation (`core.metrics.formats`): one item a
document pair, whose id, text and annotation `coref_item_id`, `coref_annotation` and
`coref_plain_text` build; `studies.services.coref_items_import` stores them.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.formats import unneutralise
from core.metrics.formats import Document
from core.problems import Collector, Problem
from core.tabular import DEFAULT_LIMITS, Limits, decode, stream_table

TEXT_COLUMNS = ("text", "text_a", "text_b")
# The system that produced an item and the source (input document, segment, prompt) it answers.
LABEL_COLUMNS = ("system", "source")
MAX_LABEL = 200  # the model's CharField
PREFIXES = ("metric:", "feature:", "meta:", "gold:", "tolerance:")
ROLES = ("main", "screening", "check")
# A comparison's outputs: item ids separated by `|` (core.comparative.SEPARATOR), 2 to 8.
OUTPUTS_COLUMN = "outputs"
OUTPUTS_SEPARATOR = "|"
MIN_COMPARED, MAX_COMPARED = 2, 8


@dataclass
class ItemRow:
    """One valid row of an item file; `line` is where it starts (0 for generated items)."""

    line: int
    external_id: str
    text: str = ""
    text_a: str = ""
    text_b: str = ""
    is_control: bool = False
    system: str = ""
    source: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    features: dict[str, float] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    role: str = "main"
    gold: dict[str, float] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)
    check_at: int | None = None
    outputs: list[str] = field(default_factory=list)


def _number(raw: str, errors: Collector, line: int, column: str) -> float | None:
    raw = raw.strip()
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        errors.add(f"{raw!r} is not a number", line=line, column=column)
        return None
    if not math.isfinite(value):
        errors.add(f"{raw!r} is not a finite number", line=line, column=column)
        return None
    return value


def _prefixed_columns(header: list[str], errors: Collector,
                      questions: Mapping[str, tuple[float, ...]] | None = None,
                      ) -> dict[str, tuple[str, str]]:
    """Return {column: (prefix, name)} of the prefixed columns; report every unknown column
    (and a `gold:`/`tolerance:` column naming no question of the study)."""
    prefixed: dict[str, tuple[str, str]] = {}
    for column in dict.fromkeys(header):  # each name once, in order
        if column in ("id", "control", "role", "check_at", OUTPUTS_COLUMN, *TEXT_COLUMNS,
                      *LABEL_COLUMNS):
            continue
        prefix, colon, name = column.partition(":")
        if colon and f"{prefix}:" in PREFIXES and name.strip():
            if prefix in ("gold", "tolerance") and name.strip() not in (questions or {}):
                known = ", ".join(questions or {}) or "none"
                errors.add(f"column {column!r} names no question of this study "
                           f"(its questions: {known})", line=1, column=column)
                continue
            prefixed[column] = (prefix, name.strip())
        else:
            errors.add(
                f"unknown column {column!r} (expected id, text, text_a, text_b, control, role, check_at, "
                "system, source, outputs, metric:<name>, feature:<name>, meta:<name>, gold:<question>, "
                "tolerance:<question>)",
                line=1, column=column,
            )
    return prefixed


def _known_answers(item: ItemRow, row: Mapping[str, str], line: int, errors: Collector,
                   questions: Mapping[str, tuple[float, ...]],
                   comparative: frozenset[str] = frozenset()) -> None:
    """Check a row's role and its known answers (`gold:`) and tolerances against the scales (a
    comparison's against its outputs, for the ``comparative`` questions)."""
    role = row.get("role", "").strip().lower() or "main"
    if role not in ROLES:
        errors.add(f"role must be main, screening or check, not {role!r}", line=line,
                   column="role")
        return
    item.role = role
    at = row.get("check_at", "").strip()
    if at:
        if role != "check":
            errors.add("check_at places an attention check: only for role check", line=line,
                       column="check_at")
        elif not at.isdigit() or not 1 <= int(at) <= 1_000_000:
            errors.add(f"check_at is a place among the main items, from 1: not {at!r}",
                       line=line, column="check_at")
        else:
            item.check_at = int(at)
    if role == "main":
        if item.gold or item.tolerance:
            errors.add("a main item has no known answer (gold:/tolerance: need role "
                       "screening or check)", line=line, column="role")
        return
    if item.is_control:
        errors.add(f"a {role} item cannot also be a control item", line=line, column="control")
    if not item.gold:
        errors.add(f"a {role} item needs a known answer in at least one gold:<question> column",
                   line=line, column="role")
    for key, value in item.gold.items():
        if (key in comparative) != bool(item.outputs):
            errors.add(f"question {key!r} is " + (
                "comparative: its known answer belongs to a comparison (an item with outputs)"
                if key in comparative else
                "a scale question: a comparison's known answer is for a comparative question"),
                line=line, column=f"gold:{key}")
        elif item.outputs:
            # the canonical index of the right output (0.5: a pairwise tie)
            if not (float(value).is_integer() and 0 <= value < len(item.outputs)) \
                    and not (value == 0.5 and len(item.outputs) == 2):
                errors.add(f"{value:g} is not an output's place in this comparison (0 to "
                           f"{len(item.outputs) - 1}; 0.5 a tie of two)", line=line,
                           column=f"gold:{key}")
        elif value not in questions[key]:
            errors.add(f"{value:g} is not a value of the scale of question {key!r}",
                       line=line, column=f"gold:{key}")
    for key, tolerance in item.tolerance.items():
        if key not in item.gold:
            errors.add(f"a tolerance without a known answer (gold:{key} is empty)",
                       line=line, column=f"tolerance:{key}")
        elif tolerance < 0:
            errors.add("a tolerance is a distance: 0 or more", line=line,
                       column=f"tolerance:{key}")


@dataclass
class ItemStream:
    """An item file read row by row: `rows` yields every row (with problems or not) as it is
    checked, `errors` collects the problems of the file and of each row; `lines` is the number
    of lines of the text (for progress)."""

    errors: Collector
    rows: Iterator[ItemRow]
    lines: int


# Called with a row's id once it passed the checks of its own row (not empty, no invisible
# character), and the row's line; returns the problem of the id across rows, or None.
IdCheck = Callable[[str, int], "str | None"]


def items_stream(
    data: bytes,
    *,
    filename: str,
    display: str,
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
    questions: Mapping[str, tuple[float, ...]] | None = None,
    id_check: IdCheck | None = None,
    comparative: frozenset[str] = frozenset(),
) -> ItemStream:
    """Check an item file's header now and each of its rows as they are iterated.

    The checks and messages of `items_parse`, but the rows are never held: a bulk import stores
    each row as it is read and checks the ids across rows afterwards (`id_check` None), or
    `id_check` does it as the rows come. A comparison's outputs are checked on their row (2 to 8
    distinct ids, not its own); that they name items of the file or the study is the caller's
    check, across rows (`outputs_problems`).
    """
    errors = Collector(filename)
    text = decode(data, errors, max_bytes=max_bytes)
    if text is None:
        return ItemStream(errors=errors, rows=iter(()), lines=0)
    table = stream_table(text, filename=filename, errors=errors, limits=limits)
    first = next(table.rows, None)
    columns = set(table.header)
    prefixed = _prefixed_columns(table.header, errors, questions)
    if first is not None and "id" not in columns:
        errors.add("the required column 'id' is missing", line=1)
    needed = ("text_a", "text_b") if display == "pair" else ("text",)
    if first is not None and display != "coref":
        for name in needed:
            if name not in columns:
                errors.add(f"a {display} study needs the column {name!r}", line=1)
    if first is None and not errors:
        errors.add("the file has a header but no items")
    rows = itertools.chain([first], table.rows) if first is not None else iter(())
    return ItemStream(errors=errors, lines=text.count("\n") + 1, rows=_item_rows(
        rows, errors=errors, columns=columns, prefixed=prefixed, needed=needed, display=display,
        questions=questions or {}, id_check=id_check, comparative=comparative,
        # Neutralisation is a CSV matter: JSON strings are taken exactly as written.
        clean=(lambda raw: raw) if table.jsonl else unneutralise))


def _item_rows(rows: Iterator[tuple[int, dict[str, str]]], *, errors: Collector,
               columns: set[str], prefixed: dict[str, tuple[str, str]],
               needed: tuple[str, ...], display: str,
               questions: Mapping[str, tuple[float, ...]], id_check: IdCheck | None,
               clean: Callable[[str], str],
               comparative: frozenset[str] = frozenset()) -> Iterator[ItemRow]:
    for line, row in rows:
        item_id = clean(row.get("id", "").strip())
        if "id" in columns and not item_id:
            errors.add("empty id", line=line, column="id")
        elif (problem := item_id_problem(item_id)) is not None:
            errors.add(problem, line=line, column="id")
        elif id_check is not None and (problem := id_check(item_id, line)) is not None:
            errors.add(problem, line=line, column="id")
        item = ItemRow(line=line, external_id=item_id)
        compares = clean(row.get(OUTPUTS_COLUMN, ""))
        item.outputs = _outputs(compares, item_id, errors, line)
        for name in TEXT_COLUMNS:
            setattr(item, name, clean(row.get(name, "")))
        for name in needed:  # a comparison shows its outputs: its own text may be empty
            if name in columns and not getattr(item, name).strip() and display != "coref" \
                    and not compares.strip():
                errors.add(f"empty {name}", line=line, column=name)
        for name in LABEL_COLUMNS:
            label = clean(row.get(name, "").strip())
            if (problem := label_problem(label, name)) is not None:
                errors.add(problem, line=line, column=name)
            else:
                setattr(item, name, label)
        if item.outputs and item.system:
            errors.add("a comparison has no system (its outputs have theirs)", line=line,
                       column="system")
        control = row.get("control", "").strip().lower()
        if control in {"1", "true", "yes"}:
            item.is_control = True
        elif control not in {"", "0", "false", "no"}:
            errors.add(f"control must be 0 or 1, not {control!r}", line=line, column="control")
        for column, raw in row.items():
            kind = prefixed.get(column)
            if kind is None:
                continue
            prefix, name = kind
            if prefix == "meta":
                if raw.strip() != "":
                    item.meta[name] = clean(raw)
                continue
            value = _number(raw, errors, line, column)
            if value is not None:
                target = {"metric": item.metrics, "feature": item.features, "gold": item.gold,
                          "tolerance": item.tolerance}[prefix]
                target[name] = value
        _known_answers(item, row, line, errors, questions, comparative)
        if item.outputs and item.is_control:
            errors.add("a comparison cannot be a control item", line=line, column="control")
        yield item


def _outputs(raw: str, item_id: str, errors: Collector, line: int) -> list[str]:
    """A comparison's outputs from its cell (``a|b|c``), checked on their own; [] when empty."""
    if not raw.strip():
        return []
    names = [name.strip() for name in raw.split(OUTPUTS_SEPARATOR)]
    if any(not name for name in names):
        errors.add("outputs are item ids separated by '|', none of them empty", line=line,
                   column=OUTPUTS_COLUMN)
    elif not MIN_COMPARED <= len(names) <= MAX_COMPARED:
        errors.add(f"a comparison has {MIN_COMPARED} to {MAX_COMPARED} outputs, not "
                   f"{len(names)}", line=line, column=OUTPUTS_COLUMN)
    elif len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        errors.add(f"output {twice[:80]!r} is named twice", line=line, column=OUTPUTS_COLUMN)
    elif item_id in names:
        errors.add("a comparison cannot compare itself", line=line, column=OUTPUTS_COLUMN)
    else:
        return names
    return []


def outputs_problems(filename: str, rows: Iterable[tuple[int, list[str]]],
                     known: Callable[[str], bool],
                     compared: Callable[[str], bool] | None = None) -> list[Problem]:
    """The problems of comparisons' outputs across rows: each ``(line, outputs)`` must name
    items ``known`` (of the file or of the study) that are not comparisons themselves
    (``compared`` tells which ids are comparisons)."""
    problems = []
    for line, outputs in rows:
        missing = [name for name in outputs if not known(name)]
        nested = [name for name in outputs if compared is not None and compared(name)]
        if missing:
            problems.append(Problem(filename, line, OUTPUTS_COLUMN,
                                    f"no item {missing[0][:80]!r} in this file or study" +
                                    (f" (and {len(missing) - 1} more)" if len(missing) > 1
                                     else "")))
        elif nested:
            problems.append(Problem(filename, line, OUTPUTS_COLUMN,
                                    f"{nested[0][:80]!r} is a comparison: a comparison's "
                                    "outputs are plain items"))
    return problems


def items_parse(
    data: bytes,
    *,
    filename: str,
    display: str,
    existing_ids: set[str],
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
    questions: Mapping[str, tuple[float, ...]] | None = None,
    comparative: frozenset[str] = frozenset(),
    existing_comparisons: frozenset[str] = frozenset(),
) -> list[ItemRow]:
    """Validate an item file completely; return its rows or raise `InputError` listing all problems.

    `display` is the study's item display ("text", "pair" or "coref"): pair studies need
    `text_a` and `text_b`, the others `text`. Linear in the file: columns are classified once,
    ids are checked against sets. `questions` maps each question's key to its scale's values:
    the `gold:<question>` and `tolerance:<question>` columns must name one of them. The problems
    are listed in the order of the lines (those of the whole file first). ``comparative`` names
    the comparative questions (a comparison's `gold:` is an output's place), and
    ``existing_comparisons`` the study's comparisons (no output may be one).
    """
    seen: dict[str, int] = {}

    def id_check(item_id: str, line: int) -> str | None:
        first = seen.setdefault(item_id, line)
        if first != line:
            return f"id {item_id!r} already used on line {first}"
        if item_id in existing_ids:
            return f"id {item_id!r} is already an item of this study"
        return None

    stream = items_stream(data, filename=filename, display=display, max_bytes=max_bytes,
                          limits=limits, questions=questions, id_check=id_check,
                          comparative=comparative)
    items = list(stream.rows)
    comparisons = {row.external_id for row in items if row.outputs} | existing_comparisons
    items_problems(stream.errors, outputs_problems(
        filename, ((row.line, row.outputs) for row in items if row.outputs),
        known=lambda name: name in seen or name in existing_ids,
        compared=comparisons.__contains__)).raise_if_any()
    return items


def items_problems(errors: Collector, across: Iterable[Problem] = ()) -> Collector:
    """Return one collector of a file's problems and those `across` its rows, in the order of
    the lines (a problem of no line first; on one line, a problem across rows first, as the id
    is the first thing a row is checked for)."""
    report = Collector(errors.file)
    report.extend(sorted([*across, *errors.problems],
                         key=lambda p: p.line if p.line is not None else 0))
    report.omitted += errors.omitted
    return report


# --- coreference items ------------------------------------------------------------------------


MAX_ITEM_ID = 200


def item_id_problem(item_id: str) -> str | None:
    """Return why ``item_id`` cannot name an item, or None.

    An id is at most 200 characters and has no control, format or line/paragraph separator
    characters (U+2028 passes a CSV reader but splits the line of every later export, so a
    response file could never name that item again).
    """
    if len(item_id) > MAX_ITEM_ID:
        return f"the id has {len(item_id)} characters; at most {MAX_ITEM_ID} are allowed"
    bad = next((c for c in item_id if unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}), None)
    if bad is not None:
        return f"the id contains the invisible character U+{ord(bad):04X}"
    return None


def label_problem(value: str, name: str) -> str | None:
    """Return why ``value`` cannot be an item's ``name`` (system or source), or None.

    At most 200 characters, without control, format or line/paragraph separator characters:
    the value is a column of every export and a filter of the items page, as an id is.
    """
    if len(value) > MAX_LABEL:
        return f"the {name} has {len(value)} characters; at most {MAX_LABEL} are allowed"
    bad = next((c for c in value if unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}), None)
    if bad is not None:
        return f"the {name} contains the invisible character U+{ord(bad):04X}"
    return None


def coref_item_id(gold: Document, system: Document, *, position: int, stem: str) -> str:
    """Return the item id of a document pair.

    CoNLL: the document key `NAME-PART` (scorch's convention, e.g. `#begin document (wsj_0001);
    part 000` → `wsj_0001-000`, or `NAME` without a part). RuCoCo: the document's `name` or `id`
    (gold's, else system's), and for an unnamed document `<gold file stem>#<position>` (`dev#3`).
    """
    if gold.format == "conll2012":
        return gold.name
    for name in (gold.name, system.name):
        if not name.startswith("#"):
            return name
    return f"{stem}#{position}"


def _side(doc: Document) -> dict[str, Any]:
    return {
        "entities": [[list(m) for m in entity] for entity in doc.entities],
        "includes": [list(c) for c in doc.includes] if doc.has_includes else [],
    }


def coref_annotation(
    gold: Document, system: Document, *, tokens: list[list[str]] | None
) -> dict[str, Any]:
    """Return the JSON the annotator view renders.

    `{"format": "conll2012", "sentences": [[word, …], …], "gold": side, "system": side}` or
    `{"format": "rucoco-json", "text": str, "gold": side, "system": side}`; a side is
    `{"entities": [[[sentence, start, end], …], …], "includes": [[entity index, …], …]}` with
    end exclusive, token positions in the sentence (CoNLL) or character offsets in `text`
    (RuCoCo, sentence 0). `includes` is `[]` when no entity includes another.
    """
    out: dict[str, Any] = {"format": gold.format}
    if gold.format == "conll2012":
        out["sentences"] = tokens or []
    else:
        out["text"] = gold.text or ""
    out["gold"] = _side(gold)
    out["system"] = _side(system)
    return out


def coref_plain_text(annotation: Mapping[str, Any]) -> str:
    """Return the readable passage of an annotation (CoNLL: words and sentences joined by spaces)."""
    if annotation.get("format") == "conll2012":
        return " ".join(" ".join(words) for words in annotation.get("sentences", []))
    text: str = annotation.get("text", "")
    return text
