"""The on-screen column mapper of a wide file (a Google Forms export): guess what each column is
from its header (`columns_guess`), then turn the researcher's choices into the very options a
hand-made item map gives the import (`columns_mapping`): the annotator column, the item map
(header -> ``item`` or ``item:question``), the meta columns and the ignored ones.

Columns are numbered from 1, as the import's problems number them. Pure: no Django.

>>> header = ["Timestamp", "Email address", "p1", "p1"]
>>> [c.use for c in columns_guess(header, items={"p1": "One"}, questions={"q": ""})]
['meta', 'annotator', 'item', 'repeat']
>>> columns_mapping(header, columns_guess(header, items={"p1": "One"}, questions={"q": ""}),
...                 items={"p1"}, questions=["q"], filename="f.csv").item_map
{'p1': 'p1'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from core.problems import Collector
from core.responses.model import MAX_ID_LENGTH, _norm, _short

# What a column can be, in the order the page offers them.
USES = ("item", "repeat", "annotator", "meta", "ignore")
USE_LABELS = {
    "item": "an item's answers",
    "repeat": "an item shown again (repeat)",
    "annotator": "the annotator id",
    "meta": "participant metadata",
    "ignore": "ignore",
}
# Item texts are compared with headers only for a study of at most this many items (each header
# against each text); beyond it only item ids are looked for in headers.
GUESS_TEXTS_MAX_ITEMS = 2000
_TEXT_MIN = 12  # a shorter item text appears in headers by chance
_ANNOTATOR = re.compile(r"e-?mail|courriel|prolific|worker|participant|annotator|respondent|"
                        r"user ?id|username|\bpid\b", re.I)
_PRIVATE = re.compile(r"\bname\b|\bnom\b|phone|address", re.I)
_TOKEN = re.compile(r"[^\s\[\](){}\"'“”«»,;!?=]+")
_BRACKET = re.compile(r"\[([^\]]*)\]\s*$")


@dataclass(frozen=True)
class ColumnChoice:
    """What one column is: `use` one of `USES`; an item's id and the question it answers for
    an item or a repeat (empty otherwise)."""

    use: str
    item: str = ""
    question: str = ""


@dataclass(frozen=True)
class ColumnMapping:
    """The options of the import, as a hand-made item map and the command's options give them."""

    annotator_column: str
    item_map: dict[str, str]
    meta_columns: tuple[str, ...]
    ignore_columns: tuple[str, ...]


def _label(number: int, header: str) -> str:
    return f"column {number} {_short(header, 50)!r}" if _norm(header) else f"column {number}"


def _guess_item(header: str, *, items: Mapping[str, str], texts: Sequence[tuple[str, str]]
                ) -> tuple[str, str]:
    """Return (item id, the header's rest) when exactly one item is named by the header."""
    name = _norm(header)
    if name in items:
        return name, ""
    head, colon, key = name.rpartition(":")
    if colon and head in items:
        return head, key
    found = {token.strip(".:") for token in _TOKEN.findall(name)} & items.keys()
    if not found:
        low = name.casefold()
        found = {item for item, text in texts if text in low}
    return (found.pop(), "") if len(found) == 1 else ("", "")


def _guess_question(header: str, suffix: str, questions: Mapping[str, str]) -> str:
    if len(questions) == 1:
        return next(iter(questions))
    if suffix in questions:
        return suffix
    name = _norm(header).casefold()
    bracket = _BRACKET.search(name)
    if bracket:
        inside = bracket.group(1).strip()
        hits = [k for k, prompt in questions.items()
                if inside in (k.casefold(), _norm(prompt).casefold())]
        if len(hits) == 1:
            return hits[0]
    tokens = {t.strip(".:") for t in _TOKEN.findall(name)}
    hits = [k for k, prompt in questions.items()
            if k.casefold() in tokens or (len(_norm(prompt)) >= _TEXT_MIN
                                          and _norm(prompt).casefold() in name)]
    return hits[0] if len(hits) == 1 else ""


def columns_guess(header: Sequence[str], *, items: Mapping[str, str],
                  questions: Mapping[str, str]) -> list[ColumnChoice]:
    """Guess each column's use from its header.

    `items` maps each item id to its text (texts are compared only for a study of at most
    `GUESS_TEXTS_MAX_ITEMS` items), `questions` each question key to its prompt, in the study's
    order. A header holding exactly one item id (as a word, or the item's text) is that item; its
    question is the study's only one, the key after a last colon, a bracketed key or prompt
    (``Rate summary 1 [Fluency]``), or a key or prompt the header holds. The second column of the
    same item and question is its repeat. The first header that names an e-mail or a platform's
    id is the annotator; a timestamp or a profile question metadata; a name, phone or postal
    address, and an empty header, ignored; anything else metadata, to be looked at.
    """
    texts: list[tuple[str, str]] = []
    if len(items) <= GUESS_TEXTS_MAX_ITEMS:
        texts = [(item, _norm(text).casefold()) for item, text in items.items()
                 if len(_norm(text)) >= _TEXT_MIN]
    seen: set[tuple[str, str]] = set()
    annotator = False
    out = []
    for raw in header:
        name = _norm(raw)
        item, suffix = _guess_item(name, items=items, texts=texts) if name else ("", "")
        if item:
            question = _guess_question(name, suffix, questions)
            use = "repeat" if question and (item, question) in seen else "item"
            seen.add((item, question))
            out.append(ColumnChoice(use, item, question))
        elif not name:
            out.append(ColumnChoice("ignore"))
        elif _ANNOTATOR.search(name) and not annotator:
            annotator = True
            out.append(ColumnChoice("annotator"))
        elif _ANNOTATOR.search(name) or _PRIVATE.search(name):
            out.append(ColumnChoice("ignore"))
        else:
            out.append(ColumnChoice("meta"))
    return out


def columns_mapping(header: Sequence[str], choices: Sequence[ColumnChoice], *, items: Set[str],
                    questions: Sequence[str], filename: str) -> ColumnMapping:
    """Check the researcher's choices and return the import's options; raise `InputError` naming
    the column of every problem (all of them at once), nothing returned then.

    The import reads a header as one thing, so columns sharing a header must be mapped alike (an
    item's first column and its repeats); an item and question given twice must be a repeat,
    and a repeat needs an earlier column of its item and question. Exactly one column is the
    annotator id, and at least one an item.
    """
    errors = Collector(filename)
    if len(choices) != len(header):
        errors.add(f"the mapping names {len(choices)} columns; the file has {len(header)}")
        errors.raise_if_any()
    single = questions[0] if len(questions) == 1 else None
    annotators: list[int] = []
    first_of: dict[tuple[str, str], int] = {}
    by_header: dict[str, tuple[int, tuple[str, str, str]]] = {}
    item_map: dict[str, str] = {}
    meta: list[str] = []
    ignore: list[str] = []
    for number, (raw, choice) in enumerate(zip(header, choices, strict=True), start=1):
        name, where = _norm(raw), _label(number, raw)
        if choice.use not in USES:
            errors.add(f"{where}: choose what the column is", line=1, column=number)
            continue
        if not name and choice.use != "ignore":
            errors.add(f"{where} has no header: the import can only ignore it", line=1,
                       column=number)
            continue
        item, question = choice.item.strip(), (choice.question.strip() or single or "")
        if choice.use in ("item", "repeat"):
            if not item:
                errors.add(f"{where}: choose its item", line=1, column=number)
                continue
            if item not in items:
                errors.add(f"{where}: {_short(item, 40)!r} is not an item of this study",
                           line=1, column=number)
                continue
            if question not in questions:
                errors.add(f"{where}: choose the question it answers ({', '.join(questions)})",
                           line=1, column=number)
                continue
            pair = (item, question)
            shown = f"item {item}" + ("" if single else f", question {question}")
            if choice.use == "item" and pair in first_of:
                errors.add(f"{where} and column {first_of[pair]} both map to {shown}: if the "
                           "item was shown twice, choose \u201crepeat\u201d for the later column",
                           line=1, column=number)
            elif choice.use == "repeat" and pair not in first_of:
                errors.add(f"{where} is a repeat of {shown}, but no earlier column is that item",
                           line=1, column=number)
            first_of.setdefault(pair, number)
        family = "item" if choice.use in ("item", "repeat") else choice.use
        key = (family, item if family == "item" else "", question if family == "item" else "")
        if name in by_header and by_header[name][1] != key:
            errors.add(f"{where} has the same header as column {by_header[name][0]}, so the "
                       "import reads them as one: map them alike (the later as a repeat of "
                       "the same item)", line=1, column=number)
            continue
        if name in by_header and family in ("annotator", "meta"):
            errors.add(f"{where} has the same header as column {by_header[name][0]}: "
                       f"{USE_LABELS[family]} must come from one column", line=1, column=number)
            continue
        if name in by_header:
            continue
        by_header[name] = (number, key)
        if family == "item":
            item_map[name] = item if single is not None else f"{item}:{question}"
        elif family == "annotator":
            annotators.append(number)
        elif family == "meta":
            meta.append(name)
        else:
            ignore.append(name)
    if not annotators:
        errors.add("no column is the annotator id: choose \u201cthe annotator id\u201d for the "
                   "column that tells respondents apart (an e-mail address, a platform id)",
                   line=1)
    for number in annotators[1:]:
        errors.add(f"{_label(number, header[number - 1])} and column {annotators[0]} are both "
                   "the annotator id: choose one", line=1, column=number)
    if not any(c.use in ("item", "repeat") for c in choices):
        errors.add("no column is an item: choose \u201can item's answers\u201d for the columns "
                   "holding ratings", line=1)
    errors.raise_if_any()
    return ColumnMapping(annotator_column=_norm(header[annotators[0] - 1]), item_map=item_map,
                         meta_columns=tuple(meta), ignore_columns=tuple(ignore))


def choice_clean(*, use: str, item: str, question: str) -> ColumnChoice:
    """A choice as posted, bounded: an unknown use stays unknown (`columns_mapping` names it)."""
    return ColumnChoice(use=use if use in USES else "", item=item.strip()[:MAX_ID_LENGTH + 1],
                        question=question.strip()[:60])
