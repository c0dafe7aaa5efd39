"""Import responses collected elsewhere (Google Forms, Qualtrics, crowd platforms, CSV).

Contract (PRODUCT.md, `import_responses`; user guide in docs/importing-responses.md):

- wide: one row per annotator (`annotator_column`), one column per item. A column whose header
  is an item id, or is mapped to one by the item map (CSV `column,item`), is an item; the k-th
  column of the same item is that annotator's presentation k (2 = the duplicate). Columns
  named in `meta_columns` become participant metadata; any other column is an error. Rows of
  the same annotator merge, the last non-blank answer winning.
- long: `annotator,item,value[,duration_ms,position]`; a second row for the same annotator and
  item is the repeated presentation when its position differs, an error otherwise.
- The value map (CSV `label,value`) turns option labels into scale values. Blank cells are
  missing answers: no row is stored, but they are counted.

The file is validated completely before anything is written: every problem is reported at once
(file, line, column) in one `InputError`, and nothing is stored unless the whole file is valid.
The parser (`responses_parse`) is pure; `responses_import` is the transactional service, and
`pending_import_*` keep an uploaded file server-side between the page's preview and confirm.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import secrets
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from studies.importers import decode_upload
from studies.models import Participant, Study
from studies.problems import Collector, InputError, Problem

from .models import Response
from .services import MAX_ACTIVE_MS

FORMATS = ("wide", "long")
LONG_COLUMNS = ("annotator", "item", "value", "duration_ms", "position")
LONG_REQUIRED = ("annotator", "item", "value")
DELIMITERS = (",", ";", "\t")
MAX_ID_LENGTH = 200  # Participant.external_id
INVALID = -1  # a duration or position that was reported as a problem


@dataclass(frozen=True)
class Upload:
    """A file as received: its name (used in every message) and its bytes."""

    filename: str
    data: bytes


@dataclass
class Answer:
    """One presentation of an item to an annotator; `value` None = blank (nothing stored)."""

    item: str
    presentation: int
    position: int | None
    value: float | None
    active_ms: int | None = None


@dataclass
class Annotator:
    external_id: str
    line: int  # first appearance in the file
    rows: int = 0
    meta: dict[str, str] = field(default_factory=dict)
    answers: dict[tuple[str, int], Answer] = field(default_factory=dict)


@dataclass(frozen=True)
class AnnotatorSummary:
    external_id: str
    rows: int
    presented: int
    answered: int
    blanks: int
    duplicates: int  # answered repeat presentations (presentation >= 2)
    meta: dict[str, str]


@dataclass(frozen=True)
class ImportSummary:
    """What a file holds (dry run) or what was stored (`imported`)."""

    filename: str
    fmt: str
    rows: int
    annotators: tuple[AnnotatorSummary, ...]
    items: int  # distinct items with at least one answer
    answers: int  # stored rows: non-blank presentations
    blanks: int
    duplicates: int
    merged_rows: int  # rows merged into an earlier row of the same annotator
    imported: bool = False


# --- reading ----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    """Return a header or label with surrounding and repeated whitespace collapsed.

    Exports wrap long question texts and use non-breaking spaces; a researcher copying a header
    into a map file should not have to reproduce them exactly.
    """
    return " ".join(text.split())


def _short(text: str, limit: int = 60) -> str:
    text = _norm(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_record_counts(text: str) -> dict[str, int]:
    """Count each candidate delimiter in the header record, outside quoted fields."""
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "\r\n":
            break
        elif not quoted and char in counts:
            counts[char] += 1
    return counts


def _read_grid(
    text: str, filename: str, errors: Collector, *, min_columns: int = 2
) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Read a CSV/TSV into its header and (line, cells) rows; record every malformed line."""
    if PurePath(filename).suffix.lower() == ".tsv":
        delimiter = "\t"
    else:
        counts = _first_record_counts(text)
        delimiter = max(counts, key=lambda d: counts[d]) if any(counts.values()) else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error) as exc:
        errors.add(f"cannot read the header: {exc}", line=1)
        return [], []
    if len(header) < min_columns:
        errors.add(
            f"the header has a single column ({_short(header[0] if header else '')!r}); "
            "separate columns with commas, semicolons or tabs",
            line=1,
        )
        return [], []
    rows: list[tuple[int, list[str]]] = []
    line = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            # The csv module cannot resynchronise after a broken quote: report and stop.
            errors.add(f"malformed line: {exc}", line=reader.line_num)
            break
        start, line = line + 1, reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            errors.add(f"{len(cells)} fields where the header has {len(header)} "
                       f"(delimiter {delimiter!r})", line=start)
            continue
        rows.append((start, cells))
    return header, rows


def _read_map(
    source: Upload | Mapping[str, str] | None, *, kind: str, header: tuple[str, str],
    max_bytes: int,
) -> tuple[list[tuple[int | None, str, str]], Collector]:
    """Return a map file's (line, key, target) rows and the collector of its problems."""
    if source is None:
        return [], Collector(kind)
    if isinstance(source, Mapping):
        return [(None, _norm(str(k)), str(v).strip()) for k, v in source.items()], Collector(kind)
    own = Collector(source.filename)
    text = decode_upload(source.data, own, max_bytes=max_bytes)
    pairs: list[tuple[int | None, str, str]] = []
    if text is not None:
        reader = csv.reader(io.StringIO(text, newline=""),
                            delimiter=_map_delimiter(text), strict=True)
        try:
            for cells in reader:
                line = reader.line_num
                if not any(c.strip() for c in cells):
                    continue
                if [c.strip().lower() for c in cells] == list(header) and not pairs:
                    continue
                if len(cells) != 2:
                    own.add(f"a {kind} line has two fields ({header[0]},{header[1]}), "
                            f"not {len(cells)}", line=line)
                    continue
                pairs.append((line, _norm(cells[0]), cells[1].strip()))
        except csv.Error as exc:
            own.add(f"malformed line: {exc}", line=reader.line_num)
    return pairs, own


def _map_delimiter(text: str) -> str:
    counts = _first_record_counts(text)
    return max(counts, key=lambda d: counts[d]) if any(counts.values()) else ","


def _parse_number(raw: str) -> float | None:
    try:
        number = float(raw)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Values:
    """Turn a cell into a scale value: value-map label first, then a number of the scale."""

    def __init__(self, scale: Sequence[float], value_map: dict[str, float] | None):
        self.scale = {float(v) for v in scale}
        self.shown = ", ".join(_fmt(v) for v in scale)
        self.labels = value_map

    def parse(self, raw: str, errors: Collector, line: int, column: str | int) -> float | None:
        text = raw.strip()
        if self.labels and _norm(text) in self.labels:
            return self.labels[_norm(text)]
        number = _parse_number(text)
        if number is not None and number in self.scale:
            return number
        extra = " nor a label of the value map" if self.labels else ""
        errors.add(f"{_short(text, 40)!r} is not a value of the scale ({self.shown}){extra}",
                   line=line, column=column)
        return None


def _value_map(read, scale: Sequence[float]) -> dict[str, float]:
    pairs, where = read
    allowed = {float(v) for v in scale}
    shown = ", ".join(_fmt(v) for v in scale)
    out: dict[str, float] = {}
    seen: dict[str, int | None] = {}
    for line, label, target in pairs:
        number = _parse_number(target)
        if number is None or number not in allowed:
            where.add(f"{target!r} is not a value of the scale ({shown})", line=line, column="value")
            continue
        if label in out and out[label] != number:
            where.add(f"label {label!r} is already mapped to {_fmt(out[label])} on line "
                      f"{seen[label]}", line=line, column="label")
            continue
        out[label], seen[label] = number, line
    return out


def _item_map(read, items: Iterable[str]) -> dict[str, str]:
    pairs, where = read
    known = set(items)
    out: dict[str, str] = {}
    for line, column, item in pairs:
        if item not in known:
            where.add(f"{item!r} is not an item id of this study", line=line, column="item")
            continue
        if column in out and out[column] != item:
            where.add(f"column {_short(column)!r} is already mapped to {out[column]!r}",
                      line=line, column="column")
            continue
        out[column] = item
    return out


# --- parsing ----------------------------------------------------------------------------------


def responses_parse(
    data: bytes,
    *,
    filename: str,
    fmt: str,
    items: Iterable[str],
    scale: Sequence[float],
    existing_annotators: Iterable[str] = (),
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    max_bytes: int,
) -> list[Annotator]:
    """Validate a response file completely; return its annotators in order of first appearance.

    Raise `InputError` listing every problem of the file and of the map files.
    """
    errors = Collector(filename)
    if fmt not in FORMATS:
        errors.add(f"unknown format {fmt!r}; use wide or long")
        errors.raise_if_any()
    items = list(items)
    item_read = _read_map(item_map, kind="item map", header=("column", "item"),
                          max_bytes=max_bytes)
    value_read = _read_map(value_map, kind="value map", header=("label", "value"),
                           max_bytes=max_bytes)
    imap = _item_map(item_read, items)
    vmap = _value_map(value_read, scale)
    values = _Values(scale, vmap)
    existing = set(existing_annotators)
    annotators: list[Annotator] = []
    text = decode_upload(data, errors, max_bytes=max_bytes)
    if text is not None:
        header, rows = _read_grid(text, filename, errors)
        if header:
            reader = _parse_wide if fmt == "wide" else _parse_long
            annotators = reader(header, rows, errors, items=set(items), item_map=imap,
                                values=values, annotator_column=annotator_column,
                                meta_columns=[_norm(m) for m in meta_columns if _norm(m)])
            if not rows and not errors:
                errors.add("the file has a header but no rows")
            for annotator in annotators:
                if annotator.external_id in existing:
                    errors.add(
                        f"annotator {annotator.external_id!r} was already imported into this "
                        "study; remove their rows or import them into another study",
                        line=annotator.line, column=annotator_column or "annotator",
                    )
    errors.problems[:0] = item_read[1].problems + value_read[1].problems
    errors.raise_if_any()
    return annotators


def _parse_wide(header, rows, errors: Collector, *, items, item_map, values, annotator_column,
                meta_columns) -> list[Annotator]:
    if not annotator_column:
        errors.add("the wide format needs the annotator column (--annotator-column NAME)")
        return []
    want = _norm(annotator_column)
    annotator_at: int | None = None
    meta_at: dict[int, str] = {}
    item_at: dict[int, tuple[str, int, int]] = {}  # index -> (item, presentation, position)
    repeats: dict[str, int] = {}
    for index, raw in enumerate(header):
        name, column = _norm(raw), index + 1
        if name == want and annotator_at is None:
            annotator_at = index
        elif name in meta_columns:
            if name in meta_at.values():
                errors.add(f"meta column {_short(name)!r} appears twice", line=1, column=column)
            meta_at[index] = name
        elif name in item_map or name in items:
            item = item_map.get(name, name)
            repeats[item] = repeats.get(item, 0) + 1
            item_at[index] = (item, repeats[item], len(item_at))
        elif name == want:
            errors.add(f"the annotator column {want!r} appears twice", line=1, column=column)
        elif not name:
            errors.add("a column has no header", line=1, column=column)
        else:
            errors.add(f"unknown column {_short(name)!r}: not an item id of this study, not in "
                       "the item map, not a meta column", line=1, column=column)
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
        for index, (item, presentation, position) in item_at.items():
            key = (item, presentation)
            answer = annotator.answers.setdefault(key, Answer(item, presentation, position, None))
            if cells[index].strip():
                value = values.parse(cells[index], errors, line, index + 1)
                if value is not None:
                    answer.value = value  # last non-blank wins
    return list(annotators.values())


def _parse_long(header, rows, errors: Collector, *, items, item_map, values, annotator_column,
                meta_columns) -> list[Annotator]:
    names = {"annotator": _norm(annotator_column or "annotator")}
    at: dict[str, int] = {}
    meta_at: dict[int, str] = {}
    for index, raw in enumerate(header):
        name = _norm(raw)
        role = next((r for r in LONG_COLUMNS if name.lower() == names.get(r, r).lower()), None)
        if role and role not in at:
            at[role] = index
        elif name in meta_columns and name not in meta_at.values():
            meta_at[index] = name
        elif role or name in meta_at.values():
            errors.add(f"column {name!r} appears twice", line=1, column=name)
        else:
            errors.add(f"unknown column {_short(name)!r} (expected annotator, item, value, "
                       "duration_ms, position, or a meta column)", line=1, column=name)
    for role in LONG_REQUIRED:
        if role not in at:
            errors.add(f"the required column {names.get(role, role)!r} is missing", line=1)
    for name in meta_columns:
        if name not in meta_at.values():
            errors.add(f"the meta column {_short(name)!r} is not in the file", line=1)
    if any(role not in at for role in LONG_REQUIRED):
        return []

    def col(role: str) -> str:
        return _norm(header[at[role]])

    annotators: dict[str, Annotator] = {}
    rows_of: dict[tuple[str, str], list[tuple[int, int | None, float | None, int | None]]] = {}
    positions: dict[tuple[str, int], tuple[int, str]] = {}
    for line, cells in rows:
        external = cells[at["annotator"]].strip()
        raw_item = _norm(cells[at["item"]])
        ok = True
        if not external:
            errors.add("empty annotator id", line=line, column=col("annotator"))
            ok = False
        elif len(external) > MAX_ID_LENGTH:
            errors.add(f"annotator id longer than {MAX_ID_LENGTH} characters", line=line,
                       column=col("annotator"))
            ok = False
        item = item_map.get(raw_item, raw_item)
        if not raw_item:
            errors.add("empty item id", line=line, column=col("item"))
            ok = False
        elif item not in items:
            errors.add(f"{_short(raw_item)!r} is not an item id of this study", line=line,
                       column=col("item"))
            ok = False
        raw_value = cells[at["value"]]
        value = values.parse(raw_value, errors, line, col("value")) if raw_value.strip() else None
        ok = ok and (value is not None or not raw_value.strip())
        duration = _whole(cells, at.get("duration_ms"), errors, line, header, MAX_ACTIVE_MS)
        position = _whole(cells, at.get("position"), errors, line, header, 2**31 - 1)
        if duration == INVALID or position == INVALID:
            ok = False
        if position is not None and position != INVALID and external:
            earlier, other = positions.setdefault((external, position), (line, item))
            if earlier != line and other == item:
                errors.add(f"duplicate row: annotator {external!r} already has item {item!r} at "
                           f"position {position} on line {earlier}", line=line)
                ok = False
            elif earlier != line:
                errors.add(f"position {position} of annotator {external!r} is already used on "
                           f"line {earlier}", line=line, column=col("position"))
                ok = False
        if not ok:
            continue
        annotator = annotators.setdefault(external, Annotator(external, line))
        annotator.rows += 1
        for index, name in meta_at.items():
            if cells[index].strip():
                annotator.meta[name] = cells[index].strip()
        same = rows_of.setdefault((external, item), [])
        if same and (position is None or any(p is None for _, p, _, _ in same)):
            errors.add(f"duplicate row: annotator {external!r} already has a row for item "
                       f"{item!r} on line {same[0][0]}; a repeated presentation needs a "
                       "different position", line=line)
            continue
        same.append((line, position, value, duration))
    for (external, item), presented in rows_of.items():
        # The earlier position is the first presentation, whatever the order of the lines.
        presented.sort(key=lambda row: (row[1] is None, row[1] or 0))
        for n, (_, position, value, duration) in enumerate(presented, start=1):
            annotators[external].answers[(item, n)] = Answer(item, n, position, value, duration)
    return list(annotators.values())


def _whole(cells, index, errors: Collector, line: int, header, maximum: int):
    """Return a non-negative whole number, None when blank or absent, INVALID (recorded)."""
    if index is None or not cells[index].strip():
        return None
    raw = cells[index].strip()
    number = _parse_number(raw)
    if number is None or not number.is_integer() or not 0 <= number <= maximum:
        errors.add(f"{_short(raw, 40)!r} is not a whole number between 0 and {maximum}",
                   line=line, column=_norm(header[index]))
        return INVALID
    return int(number)


def responses_summarize(annotators: Sequence[Annotator], *, filename: str, fmt: str
                        ) -> ImportSummary:
    """Count what a parsed file holds: annotators, items, answers, blanks, duplicates."""
    per = []
    for a in annotators:
        answered = [x for x in a.answers.values() if x.value is not None]
        per.append(AnnotatorSummary(
            external_id=a.external_id, rows=a.rows, presented=len(a.answers),
            answered=len(answered), blanks=len(a.answers) - len(answered),
            duplicates=sum(x.presentation > 1 for x in answered), meta=dict(a.meta),
        ))
    answered_items = {x.item for a in annotators for x in a.answers.values()
                      if x.value is not None}
    return ImportSummary(
        filename=filename, fmt=fmt, rows=sum(a.rows for a in annotators),
        annotators=tuple(per), items=len(answered_items),
        answers=sum(p.answered for p in per), blanks=sum(p.blanks for p in per),
        duplicates=sum(p.duplicates for p in per),
        merged_rows=sum(a.rows - 1 for a in annotators),
    )


# --- service ----------------------------------------------------------------------------------


def responses_import(
    *,
    study: Study,
    data: bytes,
    filename: str,
    fmt: str,
    annotator_column: str | None = None,
    item_map: Upload | Mapping[str, str] | None = None,
    value_map: Upload | Mapping[str, str] | None = None,
    meta_columns: Sequence[str] = (),
    dry_run: bool = False,
) -> ImportSummary:
    """Validate a response file completely, then store it in one transaction (unless `dry_run`).

    Allowed whatever the study's status. Each annotator becomes a participant with
    source "import" and external_id = the annotator id; an annotator already imported into the
    study is an error naming them (re-importing never doubles nor silently overwrites answers).
    Responses are stored annotator by annotator in order of first appearance, so the pseudonyms
    A1, A2, … follow the file. Raises `InputError` listing every problem; nothing is written then.
    """
    def parse() -> list[Annotator]:
        return responses_parse(
            data, filename=filename, fmt=fmt,
            items=study.items.values_list("external_id", flat=True),
            scale=study.scale.values,
            existing_annotators=Participant.objects.filter(
                study=study, source=Participant.Source.IMPORT).values_list("external_id", flat=True),
            annotator_column=annotator_column, item_map=item_map, value_map=value_map,
            meta_columns=meta_columns, max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES,
        )

    if dry_run:
        return responses_summarize(parse(), filename=filename, fmt=fmt)
    with transaction.atomic():
        # Serialise imports into one study, so two uploads of one annotator cannot both pass.
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        annotators = parse()
        _store(study=study, annotators=annotators, filename=filename)
    return replace(responses_summarize(annotators, filename=filename, fmt=fmt), imported=True)


def _store(*, study: Study, annotators: Sequence[Annotator], filename: str) -> None:
    now = timezone.now()
    Participant.objects.bulk_create(
        Participant(
            study=study, source=Participant.Source.IMPORT, external_id=a.external_id,
            label=f"imported from {PurePath(filename).name}"[:200], meta=a.meta,
            n_assigned=len(a.answers),
            n_answered=sum(x.value is not None for x in a.answers.values()),
            # An imported submission is final: nobody will answer its blanks later.
            completed_at=now,
        )
        for a in annotators
    )
    ids = dict(Participant.objects.filter(
        study=study, source=Participant.Source.IMPORT,
        external_id__in=[a.external_id for a in annotators],
    ).values_list("external_id", "id"))
    item_ids = dict(study.items.values_list("external_id", "id"))
    # One INSERT in this order: response ids follow the file, and pseudonyms follow them.
    Response.objects.bulk_create(
        (
            Response(
                participant_id=ids[a.external_id], item_id=item_ids[x.item],
                presentation=x.presentation, position=x.position, value=x.value,
                active_ms=x.active_ms, source=Response.Source.IMPORT,
            )
            for a in annotators
            for x in sorted(a.answers.values(), key=lambda x: (x.presentation, x.position or 0))
            if x.value is not None
        ),
        batch_size=2000,
    )


# --- the upload page's pending files ---------------------------------------------------------

PENDING_KEY = re.compile(r"^[0-9a-f]{32}$")
PENDING_MAX_AGE_S = 24 * 3600


@dataclass(frozen=True)
class PendingImport:
    key: str
    upload: Upload
    fmt: str
    annotator_column: str
    meta_columns: tuple[str, ...]
    item_map: Upload | None
    value_map: Upload | None


def _pending_root() -> Path:
    return Path(settings.VAR_DIR) / "uploads"


def upload_read(file, *, max_bytes: int | None = None) -> Upload:
    """Read an uploaded file, refusing one over the size limit before reading it."""
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    if file.size > limit:
        raise InputError([Problem(file.name, None, None,
                                  f"the file is {file.size / 1e6:.1f} MB; the limit is "
                                  f"{limit / 1e6:.1f} MB")])
    return Upload(PurePath(file.name).name, file.read())


def pending_import_create(
    *, study: Study, user: AbstractBaseUser, upload: Upload, fmt: str, annotator_column: str = "",
    meta_columns: Sequence[str] = (), item_map: Upload | None = None,
    value_map: Upload | None = None,
) -> tuple[str, ImportSummary]:
    """Validate an upload (dry run), keep its bytes server-side, return (key, summary).

    The key is random and bound to the study and the user; confirming re-reads these bytes and
    validates them again, so the browser never sends the file twice.
    """
    summary = responses_import(study=study, data=upload.data, filename=upload.filename, fmt=fmt,
                               annotator_column=annotator_column or None, item_map=item_map,
                               value_map=value_map, meta_columns=meta_columns, dry_run=True)
    _pending_sweep()
    key = secrets.token_hex(16)
    folder = _pending_root() / key
    folder.mkdir(parents=True)
    files = {"data": upload, "item_map": item_map, "value_map": value_map}
    for name, part in files.items():
        if part is not None:
            (folder / name).write_bytes(part.data)
    (folder / "pending.json").write_text(json.dumps({
        "study": study.pk, "user": user.pk, "fmt": fmt, "annotator_column": annotator_column,
        "meta_columns": list(meta_columns),
        "names": {name: part.filename for name, part in files.items() if part is not None},
    }))
    return key, summary


def pending_import_get(*, study: Study, user: AbstractBaseUser, key: str) -> PendingImport:
    """Return the pending upload `key` of this study and user, or 404."""
    folder = _pending_root() / key if PENDING_KEY.match(key) else None
    try:
        info = json.loads((folder / "pending.json").read_text()) if folder else None
    except (OSError, ValueError):
        info = None
    if not info or info["study"] != study.pk or info["user"] != user.pk:
        raise Http404("No such upload")

    def part(name: str) -> Upload | None:
        if name not in info["names"]:
            return None
        return Upload(info["names"][name], (folder / name).read_bytes())

    return PendingImport(key=key, upload=part("data"), fmt=info["fmt"],
                         annotator_column=info["annotator_column"],
                         meta_columns=tuple(info["meta_columns"]),
                         item_map=part("item_map"), value_map=part("value_map"))


def pending_import_confirm(*, study: Study, user: AbstractBaseUser, key: str) -> ImportSummary:
    """Import a pending upload after validating it again; the pending files are deleted.

    The folder is claimed by an atomic rename first, so a double-click imports once.
    """
    pending = pending_import_get(study=study, user=user, key=key)
    claimed = _pending_root() / f"claimed-{key}-{secrets.token_hex(4)}"
    try:
        (_pending_root() / key).rename(claimed)
    except OSError:
        raise Http404("This upload was already confirmed or cancelled") from None
    try:
        return responses_import(
            study=study, data=pending.upload.data, filename=pending.upload.filename,
            fmt=pending.fmt, annotator_column=pending.annotator_column or None,
            item_map=pending.item_map, value_map=pending.value_map,
            meta_columns=pending.meta_columns,
        )
    finally:
        shutil.rmtree(claimed, ignore_errors=True)


def pending_import_discard(*, study: Study, user: AbstractBaseUser, key: str) -> None:
    pending_import_get(study=study, user=user, key=key)
    shutil.rmtree(_pending_root() / key, ignore_errors=True)


def _pending_sweep() -> None:
    """Delete pending uploads nobody confirmed within a day."""
    root = _pending_root()
    if not root.is_dir():
        return
    cutoff = time.time() - PENDING_MAX_AGE_S
    for folder in root.iterdir():
        try:
            if folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue
