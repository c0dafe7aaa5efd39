"""The coreference annotations every reader returns: `Mention` spans grouped into `Document`s
(`core.metrics.formats` says what the spans count in each format).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

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
