"""Import coreference items: a gold and a system file, one document per item, metrics on import.

`coref_items_import` reads both files with `analysis.metrics.formats.read_gold_and_system`
(CoNLL-2012 or RuCoCo JSON), turns its `FormatError` problems into one `InputError` (same file,
line and column), then stores one item per document with

- `external_id`: the document's name — for CoNLL the key `NAME-PART` (scorch's convention, e.g.
  `#begin document (wsj_0001); part 000` → `wsj_0001-000`, or `NAME` without a part); for
  RuCoCo the document's `name` or `id` (gold's, else system's), and for an unnamed document
  `<gold file stem>#<position>` (e.g. `dev#3`). Ids must be unique in the file and new to the
  study;
- `text`: a plain text of the passage (CoNLL: tokens joined by spaces, sentences by a space;
  RuCoCo: the `text` as is);
- `annotation`: what the annotator view renders (see `annotation_of`);
- `metrics`: `analysis.metrics.coref.coref_metrics` (PRODUCT.md names, `LEA_split_*` for RuCoCo);
- `features`: the six error-type counts of `analysis.metrics.features.error_features`, without
  their `feature:` prefix (as imported `feature:` columns are stored).

All or nothing: any problem in either file raises one `InputError` and nothing is written.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.db import transaction

from analysis.metrics.coref import coref_metrics
from analysis.metrics.features import error_features

# `_BEGIN`/`_END` are the reader's own document delimiters: token positions line up with its
# mentions exactly.
from analysis.metrics.formats import _BEGIN as CONLL_BEGIN
from analysis.metrics.formats import _END as CONLL_END
from analysis.metrics.formats import (
    FORMATS,
    Document,
    FormatError,
    conll_document_name,
    read_gold_and_system,
)

from .importers import decode_upload
from .models import Item, Study
from .problems import Collector, InputError, Problem

MAX_ID_LENGTH = Item._meta.get_field("external_id").max_length


def coref_items_import(
    *,
    study: Study,
    gold: bytes,
    system: bytes,
    gold_name: str,
    system_name: str,
    fmt: str,
) -> int:
    """Validate a gold and a system file completely, then store one item per document.

    Raises `InputError` listing every problem of both files; nothing is written then.
    """
    problems: list[Problem] = []
    if study.status != Study.Status.DRAFT:
        raise InputError([Problem(gold_name, None, None,
                                  "items can only be added while the study is a draft")])
    if study.display != Study.Display.COREF:
        problems.append(Problem(gold_name, None, None, f"coreference items need a study that "
                                f"shows coreference passages; {study.slug!r} shows "
                                f"{study.display!r} items"))
    if fmt not in FORMATS:
        problems.append(Problem(gold_name, None, "--format",
                                f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"))
    texts = []
    for data, name in ((gold, gold_name), (system, system_name)):
        errors = Collector(name)
        texts.append(decode_upload(data, errors, max_bytes=settings.CONCORD_MAX_UPLOAD_BYTES))
        problems.extend(errors.problems)
    if problems:
        raise InputError(problems)
    gold_text, system_text = texts
    try:
        pairs = read_gold_and_system(gold_text, system_text, format=fmt,
                                     gold_file=gold_name, system_file=system_name)
    except FormatError as exc:
        raise InputError([Problem(p.file, p.line, p.column, p.message)
                          for p in exc.problems]) from None

    tokens = conll_tokens(gold_text) if fmt == "conll2012" else {}
    stem = PurePath(gold_name).stem
    existing = set(study.items.values_list("external_id", flat=True))
    seen: set[str] = set()
    items: list[Item] = []
    for n, (g, s) in enumerate(pairs, start=1):
        item_id = item_id_of(g, s, position=n, stem=stem)
        if not item_id.strip():
            problems.append(Problem(gold_name, None, None, f"document {n} has an empty name"))
        elif len(item_id) > MAX_ID_LENGTH:
            problems.append(Problem(gold_name, None, None, f"document {n}: the name {item_id[:40]!r}… "
                                    f"is longer than {MAX_ID_LENGTH} characters"))
        elif item_id in seen:
            problems.append(Problem(gold_name, None, None,
                                    f"document {n}: the name {item_id!r} is used twice"))
        elif item_id in existing:
            problems.append(Problem(gold_name, None, None,
                                    f"document {n}: {item_id!r} is already an item of this study"))
        seen.add(item_id)
        annotation = annotation_of(g, s, tokens=tokens.get(g.name))
        items.append(Item(
            study=study,
            external_id=item_id,
            text=plain_text(annotation),
            annotation=annotation,
            metrics=coref_metrics(g, s),
            features={k.removeprefix("feature:"): v for k, v in error_features(g, s).items()},
        ))
    if problems:
        raise InputError(problems)
    with transaction.atomic():
        start = study.items.count()
        for n, item in enumerate(items):
            item.position = start + n
        Item.objects.bulk_create(items)
    return len(items)


def item_id_of(gold: Document, system: Document, *, position: int, stem: str) -> str:
    """Return the item id of a document pair (see the module docstring for the rule)."""
    if gold.format == "conll2012":
        return gold.name
    for name in (gold.name, system.name):
        if not name.startswith("#"):
            return name
    return f"{stem}#{position}"


def conll_word(columns: list[str]) -> str:
    """Return the word of a CoNLL token line: column 4 of CoNLL-2012 (≥ 5 columns), else the
    column just before the coreference column (`John (0)`, `1 John (0)`)."""
    return columns[3] if len(columns) >= 5 else columns[-2]


def conll_tokens(text: str) -> dict[str, list[list[str]]]:
    """Return {document key: sentences of words} of a CoNLL file the reader has accepted.

    Mirrors `read_conll2012`'s positions: sentences are blank-line separated blocks of token
    lines, a token's position is its rank in the sentence; `#` lines other than begin/end are
    comments.
    """
    out: dict[str, list[list[str]]] = {}
    sentences: list[list[str]] | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#"):
            begin = CONLL_BEGIN.match(stripped)
            if begin:
                sentences = out.setdefault(conll_document_name(begin["name"], begin["part"]), [[]])
            elif CONLL_END.match(stripped):
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


def _side(doc: Document) -> dict[str, Any]:
    return {
        "entities": [[list(m) for m in entity] for entity in doc.entities],
        "includes": [list(c) for c in doc.includes] if doc.has_includes else [],
    }


def annotation_of(gold: Document, system: Document, *, tokens: list[list[str]] | None) -> dict:
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


def plain_text(annotation: dict) -> str:
    """Return the readable passage of an annotation (CoNLL: words and sentences joined by spaces)."""
    if annotation.get("format") == "conll2012":
        return " ".join(" ".join(words) for words in annotation.get("sentences", []))
    return annotation.get("text", "")
