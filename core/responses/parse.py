"""Validate a whole response file, wide or long (`responses_parse`), and count what it holds
(`responses_summarize`); the wide format is read here, the long one in `core.responses.long`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set

from core.problems import Collector
from core.responses.long import _parse_long, long_unread
from core.responses.model import (
    FORMATS,
    MAX_ID_LENGTH,
    SINGLE,
    Annotator,
    AnnotatorSummary,
    Answer,
    Cell,
    ImportSummary,
    Upload,
    _item_map,
    _norm,
    _Questions,
    _read_map,
    _short,
    _value_map,
)
from core.tabular import (
    DEFAULT_LIMITS,
    Limits,
    Row,
    decode,
    read_grid,
)


def responses_parse(
    data: bytes,
    *,
    filename: str,
    fmt: str,
    items: Iterable[str],
    scale: Sequence[float] = (),
    questions: Mapping[str, Sequence[float]] | None = None,
    existing_annotators: Iterable[str] = (),
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    ignore_columns: Sequence[str] = (),
    max_bytes: int,
    limits: Limits = DEFAULT_LIMITS,
    warnings: list[str] | None = None,
) -> list[Annotator]:
    """Validate a response file completely; return its annotators in order of first appearance.

    `questions` maps each question key to its scale's values, in the study's order; a study of
    one question may give its `scale` alone (its answers are then keyed `SINGLE`). Raise
    `InputError` listing every problem of the map files, then of the file. What is accepted but
    worth saying (the export's columns a long file carries and the import does not read, answers
    to a third or later presentation of an item) is appended to `warnings` when given.
    `ignore_columns` (wide) are columns read by nothing (a respondent's name, a second e-mail).
    """
    errors = Collector(filename)
    if fmt not in FORMATS or fmt == "judgments":  # judgments: `judgments_parse`
        errors.add(f"unknown format {fmt!r}; use wide or long")
        errors.raise_if_any()
    scales = dict(questions) if questions else {SINGLE: scale}
    items = list(items)
    item_read = _read_map(item_map, kind="item map", header=("column", "item"),
                          max_bytes=max_bytes, limits=limits)
    value_read = _read_map(value_map, kind="value map", header=("label", "value"),
                           max_bytes=max_bytes, limits=limits)
    imap = _item_map(item_read, items, list(scales) if fmt == "wide" else ())
    vmap = _value_map(value_read, sorted({float(v) for s in scales.values() for v in s}))
    known = _Questions(scales, vmap)
    existing = set(existing_annotators)
    annotators: list[Annotator] = []
    text = decode(data, errors, max_bytes=max_bytes)
    grid = None if text is None else read_grid(text, filename=filename, errors=errors,
                                               limits=limits, min_columns=2)
    if grid is not None:
        header, rows = grid.header, grid.rows
        if ignore_columns and fmt != "wide":
            errors.add("only a wide file ignores columns (a long file's columns are fixed)")
        if header and fmt == "wide":
            annotators = _parse_wide(header, rows, errors, items=set(items), item_map=imap,
                                     questions=known, annotator_column=annotator_column,
                                     meta_columns=[_norm(m) for m in meta_columns if _norm(m)],
                                     ignore_columns={_norm(c) for c in ignore_columns})
        elif header:
            annotators = _parse_long(header, rows, errors, items=set(items), item_map=imap,
                                     questions=known, annotator_column=annotator_column,
                                     meta_columns=[_norm(m) for m in meta_columns if _norm(m)])
        if header:
            if not rows and not errors:
                errors.add("the file has a header but no rows")
            if fmt == "long" and warnings is not None:
                warnings += long_unread(header, annotator_column)
            if warnings is not None:
                warnings += later_presentations(sum(
                    x.stored and x.presentation > 2 for a in annotators for x in a.answers.values()))
            for annotator in annotators:
                if annotator.external_id in existing:
                    errors.add(
                        f"annotator {annotator.external_id!r} was already imported into this "
                        "study; remove their rows or import them into another study",
                        line=annotator.line, column=annotator_column or "annotator",
                    )
    report = Collector(filename)
    for collected in (item_read[1], value_read[1], errors):
        report.extend(collected)
    report.raise_if_any()
    return annotators



def _wide_column(name: str, *, items: Set[str], item_map: Mapping[str, str],
                 questions: _Questions) -> tuple[str, str] | str:
    """Return (item, question key) of a wide column, or why it is not one."""
    if name in item_map or name in items:
        target = item_map.get(name, name)
        if target not in items:  # the item map named the question too: item:question
            head, _, key = target.rpartition(":")
            return head, key
        if questions.single is not None:
            return target, questions.single
        return (f"column {_short(name)!r} names an item but no question: this study asks "
                f"several questions, name it {_short(name)}:<question> ({questions.shown})")
    head, colon, key = name.rpartition(":")
    if colon and (head in item_map or head in items):
        if key in questions.values:
            return item_map.get(head, head), key
        return f"column {_short(name)!r}: {questions.unknown(key)}"
    return (f"unknown column {_short(name)!r}: not an item id of this study, not in the item "
            "map, not a meta column")


def _parse_wide(header: Sequence[str], rows: Sequence[Row], errors: Collector, *,
                items: Set[str], item_map: Mapping[str, str], questions: _Questions,
                annotator_column: str | None, meta_columns: Sequence[str],
                ignore_columns: Set[str] = frozenset()) -> list[Annotator]:
    if not annotator_column:
        errors.add("the wide format needs the annotator column (--annotator-column NAME)")
        return []
    want = _norm(annotator_column)
    meta_names = set(meta_columns)
    annotator_at: int | None = None
    meta_at: dict[int, str] = {}
    meta_found: set[str] = set()
    # index -> (item, presentation, position, question key)
    item_at: dict[int, tuple[str, int, int, str]] = {}
    repeats: dict[tuple[str, str], int] = {}
    positions: dict[tuple[str, int], int] = {}  # (item, presentation) -> position
    for index, raw in enumerate(header):
        name, column = _norm(raw), index + 1
        if name == want and annotator_at is None:
            annotator_at = index
            continue
        if name in meta_names:
            if name in meta_found:
                errors.add(f"meta column {_short(name)!r} appears twice", line=1, column=column)
            meta_at[index] = name
            meta_found.add(name)
            continue
        if name in ignore_columns:
            continue
        if name == want:
            errors.add(f"the annotator column {want!r} appears twice", line=1, column=column)
            continue
        if not name:
            errors.add("a column has no header", line=1, column=column)
            continue
        found = _wide_column(name, items=items, item_map=item_map, questions=questions)
        if isinstance(found, str):
            errors.add(found, line=1, column=column)
            continue
        item, key = found
        presentation = repeats[(item, key)] = repeats.get((item, key), 0) + 1
        position = positions.setdefault((item, presentation), len(positions))
        item_at[index] = (item, presentation, position, key)
    names = {_norm(h) for h in header}
    if annotator_at is None:
        errors.add(f"the annotator column {want!r} is not in the file", line=1)
    for name in meta_columns:
        if name not in names:
            errors.add(f"the meta column {_short(name)!r} is not in the file", line=1)
    if not item_at and header:
        errors.add("no column is an item: name columns by item id or map them with --item-map",
                   line=1)
    if annotator_at is None:
        return []

    annotators: dict[str, Annotator] = {}
    for line, cells in rows:
        external = cells[annotator_at].strip()
        if not external:
            errors.add("empty annotator id", line=line, column=annotator_at + 1)
            continue
        if len(external) > MAX_ID_LENGTH:
            errors.add(f"annotator id longer than {MAX_ID_LENGTH} characters", line=line,
                       column=annotator_at + 1)
            continue
        annotator = annotators.setdefault(external, Annotator(external, line))
        annotator.rows += 1
        for index, name in meta_at.items():
            if cells[index].strip():
                annotator.meta[name] = cells[index].strip()  # last non-blank wins
        for index, (item, presentation, position, key) in item_at.items():
            answer = annotator.answers.setdefault((item, presentation),
                                                  Answer(item, presentation, position))
            if cells[index].strip():
                value = questions.values[key].parse(cells[index], errors, line, index + 1)
                if value is not None:
                    answer.cells[key] = Cell(value)  # last non-blank wins
    return list(annotators.values())



def later_presentations(count: int) -> list[str]:
    """Say that ``count`` answered presentations come after an item's second to its annotator.

    They are stored and exported, but the analysis pairs the first two presentations of an item
    and uses none after them (docs/importing-responses.md, "A third presentation")."""
    if not count:
        return []
    return [f"{count} answered presentation{'s' if count != 1 else ''} of an item after the "
            "annotator's second (presentation 3 or later): stored and exported, but the analysis "
            "uses only the first two presentations of an item"]



def responses_summarize(annotators: Sequence[Annotator], *, filename: str, fmt: str
                        ) -> ImportSummary:
    """Count what a parsed file holds: annotators, items, answers, blanks, duplicates."""
    per = []
    for a in annotators:
        answered = [x for x in a.answers.values() if x.stored]
        per.append(AnnotatorSummary(
            external_id=a.external_id, rows=a.rows, presented=len(a.answers),
            answered=len(answered), blanks=len(a.answers) - len(answered),
            duplicates=sum(x.presentation > 1 for x in answered), meta=dict(a.meta),
        ))
    answered_items = {x.item for a in annotators for x in a.answers.values() if x.stored}
    return ImportSummary(
        filename=filename, fmt=fmt, rows=sum(a.rows for a in annotators),
        annotators=tuple(per), items=len(answered_items),
        answers=sum(p.answered for p in per), blanks=sum(p.blanks for p in per),
        duplicates=sum(p.duplicates for p in per),
        merged_rows=sum(a.rows - 1 for a in annotators) if fmt == "wide" else 0,
    )
