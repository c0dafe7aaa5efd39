"""Error-type features of a system annotation against the gold (Borovikova et al. 2022, §3.1).

Borovikova et al. 2022 count, per text, the errors of six types (the typology of
Landragin and Oberle 2018 plus "chain absence"), which they introduced by hand. We derive the counts
from the two annotations with the operational definitions below (ours; the paper gives the types in
words). Researchers who know the counts (e.g. the corpus's own) import them as `feature:<name>`
columns instead. A *chain* is an entity with at least two mentions; `includes` (RuCoCo) are ignored.

1. Mention matching. A system mention with the same span as a gold mention matches it. Then,
   among the mentions left, a system and a gold mention that overlap (same sentence, sharing a
   token/character) match as a *border pair*, one to one, largest overlap first (ties in
   document order).
2. `feature:border`: the number of border pairs (limits marked inaccurately).
3. `feature:noise`: the number of system mentions in system chains that match no gold mention
   (irrelevant expressions marked as part of a chain).
4. A system chain is *relevant* when at least two of its matched mentions belong to one gold
   entity; it is then aligned to the gold entity holding most of them (ties: the entity that
   starts first).
5. `feature:type`: the number of matched mentions of relevant system chains whose gold entity is
   not the chain's aligned entity (mentions assigned to a false chain).
6. `feature:irrelevant_chains`: the number of system chains with at least two matched mentions
   of which no two belong to the same gold entity (a new chain of unrelated mentions).
7. `feature:chain_absence`: the number of gold chains that no relevant system chain is aligned
   to and none of whose mentions is matched by a mention of a relevant system chain (the
   whole entity is missing).
8. `feature:silence`: the number of mentions of gold chains that some relevant system chain is
   aligned to, which are not matched by a mention of any system chain (ignored mentions of a
   relevant chain).

Examples from the appendix of Borovikova et al. 2022: the system drops "it" from
{A phone, It, it} → silence 1; it drops the whole chain → chain_absence 1; it links "he" to
{John, his} instead of {his brother, he} → type 1.
"""

from __future__ import annotations

from collections import Counter

from core.metrics.formats import Document, Mention

ERROR_FEATURES = (
    "feature:border",
    "feature:type",
    "feature:noise",
    "feature:silence",
    "feature:irrelevant_chains",
    "feature:chain_absence",
)


def _match_mentions(gold: Document, system: Document) -> tuple[dict[Mention, Mention], int]:
    """Return (system mention → matched gold mention, number of border pairs)."""
    gold_mentions = gold.mentions
    system_mentions = system.mentions
    match = {m: m for m in system_mentions & gold_mentions}
    free_gold = sorted(gold_mentions - system_mentions)
    free_system = sorted(system_mentions - gold_mentions)
    candidates = []
    for s in free_system:
        for g in free_gold:
            if s.overlaps(g):
                shared = min(s.end, g.end) - max(s.start, g.start)
                candidates.append((-shared, s, g))
    candidates.sort()
    used_gold: set[Mention] = set()
    border = 0
    for _, s, g in candidates:
        if s in match or g in used_gold:
            continue
        match[s] = g
        used_gold.add(g)
        border += 1
    return match, border


def error_features(gold: Document, system: Document) -> dict[str, int]:
    """Return the six error counts of ERROR_FEATURES for one item (definitions: module doc)."""
    match, border = _match_mentions(gold, system)
    gold_entity = {m: i for i, e in enumerate(gold.entities) for m in e}
    first = {i: min(e) for i, e in enumerate(gold.entities)}
    system_chains = [e for e in system.entities if len(e) >= 2]

    noise = 0
    type_errors = 0
    irrelevant = 0
    aligned: set[int] = set()
    in_relevant: set[Mention] = set()  # gold mentions matched by a relevant chain's mention
    linked: set[Mention] = set()  # gold mentions matched by any system chain's mention
    for chain in system_chains:
        matched = [match[m] for m in chain if m in match]
        noise += len(chain) - len(matched)
        linked.update(matched)
        counts = Counter(gold_entity[g] for g in matched)
        if not counts:
            continue
        best, best_count = min(counts.items(), key=lambda kv: (-kv[1], first[kv[0]]))
        if best_count >= 2:
            aligned.add(best)
            in_relevant.update(matched)
            type_errors += sum(1 for g in matched if gold_entity[g] != best)
        elif len(matched) >= 2:
            irrelevant += 1

    silence = 0
    absence = 0
    for i, entity in enumerate(gold.entities):
        if len(entity) < 2:
            continue
        if i in aligned:
            silence += sum(1 for g in entity if g not in linked)
        elif not any(g in in_relevant for g in entity):
            absence += 1
    return {
        "feature:border": border,
        "feature:type": type_errors,
        "feature:noise": noise,
        "feature:silence": silence,
        "feature:irrelevant_chains": irrelevant,
        "feature:chain_absence": absence,
    }
