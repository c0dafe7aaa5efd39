"""Render coreference items for annotators: bracketed mentions coloured and numbered by chain.

`coref_views` turns `Item.annotation` (see `core.items.coref_annotation`) into one view
per side shown (gold then system, or the system only), each with the passage as HTML and a
legend of its chains. Every piece of item text is escaped here: it is untrusted. Colours are a
fixed palette of classes `chain-1` … `chain-12` (the CSP forbids inline styles) that cycles;
the chain number printed after each closing bracket and in the legend is the non-colour cue.

Numbering: gold chains 1, 2, … in order of their first mention. When the gold is shown, each
system chain takes the number of the gold chain it shares most mentions with (exact spans, one
to one, largest overlap first), so the same number and colour mean the same entity on both
sides; the other system chains get the next numbers in order of first mention. Without the
gold, system chains are numbered 1, 2, … in order of first mention.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

PALETTE_SIZE = 12

Span = tuple[int, int, int]  # (sentence, start, end), end exclusive


@dataclass
class Chain:
    number: int
    css: str
    mentions: list[str] = field(default_factory=list)
    includes: list[int] = field(default_factory=list)


@dataclass
class View:
    key: str  # "gold" or "system"
    html: SafeString
    chains: list[Chain]


def chain_class(number: int) -> str:
    """Return the palette class of a chain number (`chain-1` … `chain-12`, cycling)."""
    return f"chain-{(number - 1) % PALETTE_SIZE + 1}"


class _Passage:
    """The units of a passage: words per sentence (CoNLL) or characters of one text (RuCoCo)."""

    def __init__(self, annotation: dict):
        if annotation.get("format") == "conll2012":
            self.sentences: list[list[str]] | list[str] = [
                [str(w) for w in words] for words in annotation.get("sentences", [])]
            self.separator = " "
        else:
            self.sentences = [str(annotation.get("text", ""))]
            self.separator = ""

    def valid(self, span: Span) -> bool:
        s, start, end = span
        return 0 <= s < len(self.sentences) and 0 <= start < end <= len(self.sentences[s])

    def text(self, span: Span) -> str:
        s, start, end = span
        return self.separator.join(self.sentences[s][start:end])


def _entities(side: dict, passage: _Passage) -> list[list[Span]]:
    out = []
    for entity in side.get("entities", []):
        spans = sorted({tuple(m) for m in entity if len(m) == 3})
        out.append([m for m in spans if passage.valid(m)])
    return out


def _first(entity: list[Span]) -> tuple:
    return entity[0] if entity else (float("inf"),)


def _number(entities: list[list[Span]], reference: list[list[Span]] | None,
            reference_numbers: dict[int, int] | None) -> dict[int, int]:
    """Return {entity index: chain number} (see the module docstring)."""
    order = sorted((i for i, e in enumerate(entities) if e), key=lambda i: _first(entities[i]))
    if reference is None or reference_numbers is None:
        return {i: n for n, i in enumerate(order, start=1)}
    owner = {m: j for j, e in enumerate(reference) for m in e}
    overlaps = []
    for i in order:
        counts: dict[int, int] = {}
        for m in entities[i]:
            if m in owner:
                counts[owner[m]] = counts.get(owner[m], 0) + 1
        overlaps += [(-c, _first(entities[i]), i, j) for j, c in counts.items()]
    numbers: dict[int, int] = {}
    taken: set[int] = set()
    for _, _, i, j in sorted(overlaps):
        if i not in numbers and j not in taken and j in reference_numbers:
            numbers[i] = reference_numbers[j]
            taken.add(j)
    following = max(reference_numbers.values(), default=0) + 1
    for i in order:
        if i not in numbers:
            numbers[i] = following
            following += 1
    return numbers


def _open(number: int, continued: bool = False) -> str:
    cls = f"mention {chain_class(number)}" + (" continued" if continued else "")
    bracket = "" if continued else '<span class="bracket">[</span>'
    return f'<span class="{cls}">{bracket}'


def _close(number: int, interrupted: bool = False) -> str:
    if interrupted:
        return "</span>"
    return f'<span class="bracket">]</span><sub class="chain-no">{number}</sub></span>'


def _render_sentence(units: list[str] | str, separator: str,
                     mentions: list[tuple[int, int, int]]) -> str:
    """Return the HTML of one sentence; `mentions` are (start, end, chain number).

    Mentions nest as elements; a mention that crosses another is split (the inner one is closed
    and reopened as a continuation) so the HTML stays well formed.
    """
    starts: dict[int, list[tuple[int, int, int]]] = {}
    ends: dict[int, list[tuple[int, int, int]]] = {}
    for m in mentions:
        starts.setdefault(m[0], []).append(m)
        ends.setdefault(m[1], []).append(m)
    n = len(units)
    bounds = sorted({0, n, *starts, *ends})
    stack: list[tuple[int, int, int]] = []
    out: list[str] = []
    for k, b in enumerate(bounds):
        for m in sorted(ends.get(b, []), key=stack.index, reverse=True):
            reopen = []
            while stack[-1] != m:
                top = stack.pop()
                out.append(_close(top[2], interrupted=True))
                reopen.append(top)
            stack.pop()
            out.append(_close(m[2]))
            for top in reversed(reopen):
                out.append(_open(top[2], continued=True))
                stack.append(top)
        if 0 < b < n:
            out.append(escape(separator))
        for m in sorted(starts.get(b, []), key=lambda m: (-m[1], m[2])):
            out.append(_open(m[2]))
            stack.append(m)
        if k + 1 < len(bounds):
            out.append(escape(separator.join(units[b:bounds[k + 1]])))
    return "".join(out)


def _view(key: str, passage: _Passage, side: dict, entities: list[list[Span]],
          numbers: dict[int, int]) -> View:
    per_sentence: dict[int, list[tuple[int, int, int]]] = {}
    for i, entity in enumerate(entities):
        for s, start, end in entity:
            per_sentence.setdefault(s, []).append((start, end, numbers[i]))
    html = escape(passage.separator).join(
        _render_sentence(units, passage.separator, per_sentence.get(s, []))
        for s, units in enumerate(passage.sentences)
    )
    includes = side.get("includes") or []
    chains = []
    for i, entity in sorted(((i, e) for i, e in enumerate(entities) if e),
                            key=lambda pair: numbers[pair[0]]):
        children = includes[i] if i < len(includes) else []
        chains.append(Chain(
            number=numbers[i],
            css=chain_class(numbers[i]),
            mentions=[passage.text(m) for m in entity],
            includes=sorted(numbers[c] for c in children
                            if isinstance(c, int) and c in numbers),
        ))
    return View(key=key, html=mark_safe(html), chains=chains)  # noqa: S308 - every text escaped


@register.simple_tag
def coref_views(item, show_gold: bool = True) -> list[View]:
    """Return the views of a coreference item (gold and system, or system only); [] if none."""
    annotation = getattr(item, "annotation", None) or {}
    if "system" not in annotation:
        return []
    passage = _Passage(annotation)
    system = _entities(annotation["system"], passage)
    if not show_gold:
        return [_view("system", passage, annotation["system"], system, _number(system, None, None))]
    gold = _entities(annotation.get("gold", {}), passage)
    gold_numbers = _number(gold, None, None)
    return [
        _view("gold", passage, annotation.get("gold", {}), gold, gold_numbers),
        _view("system", passage, annotation["system"], system,
              _number(system, gold, gold_numbers)),
    ]
