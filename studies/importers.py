"""Parse and validate item files (CSV or JSONL) completely before anything is written.

Columns (PRODUCT.md, `import_items`): `id` (required), `text` or `text_a`/`text_b`, `control`
(0/1), and prefixed columns `metric:<name>`, `feature:<name>`, `meta:<name>`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import PurePath

from .problems import Collector

TEXT_COLUMNS = ("text", "text_a", "text_b")
PREFIXES = ("metric:", "feature:", "meta:")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0")


@dataclass
class ItemRow:
    line: int
    external_id: str
    text: str = ""
    text_a: str = ""
    text_b: str = ""
    is_control: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    features: dict[str, float] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)


def unneutralise(text: str) -> str:
    """Undo the CSV export's formula neutralisation (`analysis.export_formats.neutralise`).

    One `'` is removed from a text that starts with `'` and whose first character after its
    leading quotes is = + - @ TAB CR NUL: `'=1+1` -> `=1+1`, `''=1` -> `'=1` (a text that really
    started with a quote), `'hello` unchanged. The pair round-trips every string.
    """
    if text[:1] == "'" and text.lstrip("'")[:1] in FORMULA_STARTS:
        return text[1:]
    return text


def decode_upload(data: bytes, errors: Collector, *, max_bytes: int) -> str | None:
    """Return the text of an upload, or None with the problem recorded (size, encoding)."""
    if len(data) > max_bytes:
        errors.add(f"the file is {len(data) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB")
        return None
    if not data.strip():
        errors.add("the file is empty")
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        errors.add("the file is UTF-16; save it as UTF-8 (CSV UTF-8 in spreadsheet programs)")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        guess = "Windows-1252 or Latin-1" if _decodes(data, "cp1252") else "not UTF-8"
        errors.add(
            f"byte 0x{data[exc.start]:02X} is not UTF-8 (the file looks {guess}); "
            "save it as UTF-8",
            line=line, column=column,
        )
        return None


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def is_jsonl(text: str, filename: str) -> bool:
    """Tell JSONL from CSV/TSV by the file's suffix, else by a first `{`."""
    suffix = PurePath(filename).suffix.lower()
    return suffix in {".jsonl", ".ndjson"} or (
        suffix not in {".csv", ".tsv", ".txt"} and text.lstrip().startswith("{"))


def read_table(text: str, filename: str, errors: Collector) -> list[tuple[int, dict[str, str]]]:
    """Read CSV/TSV or JSONL into (line number, {column: text}) rows."""
    suffix = PurePath(filename).suffix.lower()
    if is_jsonl(text, filename):
        return _read_jsonl(text, errors)
    return _read_csv(text, errors, delimiter="\t" if suffix == ".tsv" else None)


def _read_csv(text: str, errors: Collector, delimiter: str | None) -> list[tuple[int, dict[str, str]]]:
    if delimiter is None:
        first = text.splitlines()[0] if text else ""
        counts = {d: first.count(d) for d in (",", ";", "\t")}
        delimiter = max(counts, key=counts.get) if any(counts.values()) else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        errors.add(f"cannot read the header: {exc}", line=1)
        return rows
    header = [h.strip() for h in header]
    seen: set[str] = set()
    for col, name in enumerate(header, start=1):
        if name in seen:
            errors.add(f"column {name!r} appears twice", line=1, column=col)
        seen.add(name)
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            errors.add(f"malformed CSV: {exc}", line=reader.line_num)
            break
        line = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            errors.add(f"{len(values)} fields where the header has {len(header)}", line=line)
            continue
        rows.append((line, dict(zip(header, values, strict=True))))
    return rows


def _read_jsonl(text: str, errors: Collector) -> list[tuple[int, dict[str, str]]]:
    rows = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.add(f"invalid JSON: {exc.msg}", line=line_no, column=exc.colno)
            continue
        if not isinstance(obj, dict):
            errors.add("each line must be a JSON object", line=line_no)
            continue
        row = {}
        for key, value in obj.items():
            if value is None:
                row[key] = ""
            elif isinstance(value, bool):
                row[key] = "1" if value else "0"
            elif isinstance(value, (int, float, str)):
                row[key] = str(value)
            else:
                errors.add(f"field {key!r} must be a string or a number", line=line_no, column=key)
        rows.append((line_no, row))
    return rows


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


def parse_items(
    data: bytes,
    *,
    filename: str,
    display: str,
    existing_ids: set[str],
    max_bytes: int,
) -> list[ItemRow]:
    """Validate an item file completely; return its rows or raise `InputError` listing all problems.

    `display` is the study's item display ("text", "pair" or "coref"): pair studies need
    `text_a` and `text_b`, the others `text`.
    """
    errors = Collector(filename)
    text = decode_upload(data, errors, max_bytes=max_bytes)
    if text is None:
        errors.raise_if_any()
    table = read_table(text, filename, errors)
    # Neutralisation is a CSV matter: JSON strings are taken exactly as written.
    clean = (lambda raw: raw) if is_jsonl(text, filename) else unneutralise
    columns: list[str] = []
    for _, row in table:
        for name in row:
            if name not in columns:
                columns.append(name)
    for name in columns:
        known = name in ("id", "control", *TEXT_COLUMNS) or (
            name.startswith(PREFIXES) and name.split(":", 1)[1].strip()
        )
        if not known:
            errors.add(
                f"unknown column {name!r} (expected id, text, text_a, text_b, control, "
                "metric:<name>, feature:<name>, meta:<name>)",
                line=1, column=name,
            )
    if table and "id" not in columns:
        errors.add("the required column 'id' is missing", line=1)
    needed = ("text_a", "text_b") if display == "pair" else ("text",)
    if table and display != "coref":
        for name in needed:
            if name not in columns:
                errors.add(f"a {display} study needs the column {name!r}", line=1)
    if not table and not errors:
        errors.add("the file has a header but no items")

    items: list[ItemRow] = []
    seen: dict[str, int] = {}
    for line, row in table:
        item_id = clean(row.get("id", "").strip())
        if "id" in columns and not item_id:
            errors.add("empty id", line=line, column="id")
        elif item_id in seen:
            errors.add(f"id {item_id!r} already used on line {seen[item_id]}", line=line, column="id")
        elif item_id in existing_ids:
            errors.add(f"id {item_id!r} is already an item of this study", line=line, column="id")
        seen.setdefault(item_id, line)
        item = ItemRow(line=line, external_id=item_id)
        for name in TEXT_COLUMNS:
            setattr(item, name, clean(row.get(name, "")))
        for name in needed:
            if name in columns and not getattr(item, name).strip() and display != "coref":
                errors.add(f"empty {name}", line=line, column=name)
        control = row.get("control", "").strip().lower()
        if control in {"1", "true", "yes"}:
            item.is_control = True
        elif control not in {"", "0", "false", "no"}:
            errors.add(f"control must be 0 or 1, not {control!r}", line=line, column="control")
        for name, raw in row.items():
            if name.startswith("metric:"):
                value = _number(raw, errors, line, name)
                if value is not None:
                    item.metrics[name.split(":", 1)[1].strip()] = value
            elif name.startswith("feature:"):
                value = _number(raw, errors, line, name)
                if value is not None:
                    item.features[name.split(":", 1)[1].strip()] = value
            elif name.startswith("meta:") and raw.strip() != "":
                item.meta[name.split(":", 1)[1].strip()] = clean(raw)
        items.append(item)
    errors.raise_if_any()
    return items
