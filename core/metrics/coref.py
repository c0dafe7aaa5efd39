"""Coreference metrics for one gold/system document pair.

MUC, B³, CEAFm, CEAFe, BLANC and the CoNLL average come from `scorch.scores`; LEA (Moosavi &
Strube 2016) and split-antecedent LEA (Dobrovolskii et al. 2022, as in the RuCoCo-2023
shared task's `evaluate.py`) are ours.

Mention alignment (scorch's command-line scorer, `scorch.main.process_files`): every system
mention missing from the gold is added to the gold as a singleton entity before scoring. We
apply it to every metric of `coref_metrics`, LEA included, so all the numbers of an item are
computed on the same two clusterings. The CoNLL reference scorer does not align (Pradhan et al.
2014 score twinless mentions as they are); `score_clusters(..., align=False)` gives its numbers.

Worked example (reference scorer test case TC-A-2)::

    key = [{"a"}, {"b", "c"}, {"d", "e", "f"}];  response = [{"a"}, {"d", "e"}]
    lea(key, response) == (1/3, 1.0, 0.5)    # recall (1 + 3·(1/3))/6, precision (1 + 2)/3
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from scorch import scores

from core.metrics.formats import Document, Mention

COREF_METRICS = (
    "MUC_R", "MUC_P", "MUC_F1",
    "B3_R", "B3_P", "B3_F1",
    "CEAFm_R", "CEAFm_P", "CEAFm_F1",
    "CEAFe_R", "CEAFe_P", "CEAFe_F1",
    "BLANC_R", "BLANC_P", "BLANC_F1",
    "LEA_R", "LEA_P", "LEA_F1",
    "CoNLL_F1",
)  # fmt: skip
SPLIT_LEA_METRICS = ("LEA_split_R", "LEA_split_P", "LEA_split_F1")


class SortableMention(Hashable, Protocol):
    """Describe a mention as the metrics take it: hashable, and ordered for a stable alignment."""

    def __lt__(self, other: Any, /) -> bool: ...


Clusters = Sequence[set[SortableMention]]


def f1(recall: float, precision: float) -> float:
    """Return the harmonic mean of recall and precision; 0 when both are 0."""
    total = recall + precision
    return 2 * recall * precision / total if total > 0 else 0.0


def align_mentions(key: Clusters, response: Clusters) -> list[set[SortableMention]]:
    """Return the key plus one singleton per response mention the key lacks (scorch's CLI).

    Sorted so the result does not depend on set iteration order.
    """
    key_mentions = {m for k in key for m in k}
    extra = {m for r in response for m in r} - key_mentions
    return [set(k) for k in key] + [{m} for m in sorted(extra)]


def _lea_side(key: Clusters, response: Clusters) -> float:
    """Return Σ_k |k|·resolution(k) / Σ_k |k| (0 when the key has no mention).

    resolution(k) = Σ_r link(k ∩ r) / link(k), link(e) = |e|(|e|−1)/2; a key singleton {m} has
    one self-link, resolved iff {m} is also a singleton entity of the response.
    """
    owner: dict[Hashable, int] = {}
    for i, r in enumerate(response):
        for m in r:
            owner[m] = i
    weighted: list[float] = []
    total = 0
    for k in key:
        n = len(k)
        if n == 0:
            continue
        total += n
        if n == 1:
            (m,) = k
            resolved = 1.0 if m in owner and len(response[owner[m]]) == 1 else 0.0
        else:
            shared = Counter(owner[m] for m in k if m in owner)
            resolved = sum(c * (c - 1) / 2 for c in shared.values()) / (n * (n - 1) / 2)
        weighted.append(n * resolved)
    return math.fsum(weighted) / total if total else 0.0


def lea(key: Clusters, response: Clusters) -> tuple[float, float, float]:
    """Return LEA (recall, precision, F1) of `response` against `key` (Moosavi & Strube 2016).

    Precision is the recall formula with key and response swapped; F1 = 0 when R + P = 0.
    Recall is 0 for an empty key, precision 0 for an empty response (the reference scorer's
    guards). Reference test case TC-A-10: key {a}{bc}{def}, response all singletons → (1/6,
    1/6, 1/6).
    """
    recall = _lea_side(key, response)
    precision = _lea_side(response, key)
    return recall, precision, f1(recall, precision)


def score_clusters(key: Clusters, response: Clusters, *, align: bool = True) -> dict[str, float]:
    """Return every metric of COREF_METRICS for two clusterings of hashable mentions.

    With `align` (the product's rule) the key first gets scorch's CLI alignment.
    Conventions for degenerate inputs are scorch's: MUC is 0 when every key or every response
    entity is a singleton; B³ and CEAF give 0 for an empty side; BLANC follows Recasens & Hovy
    (2011) / Luo et al. (2014) as scorch documents (e.g. only the non-coreference part counts
    when the key has no coreference link).
    """
    key = [set(k) for k in key if k]
    response = [set(r) for r in response if r]
    if align:
        key = align_mentions(key, response)
    out: dict[str, float] = {}
    for name, metric in (
        ("MUC", scores.muc),
        ("B3", scores.b_cubed),
        ("CEAFm", scores.ceaf_m),
        ("CEAFe", scores.ceaf_e),
        ("BLANC", scores.blanc),
        ("LEA", lea),
    ):
        r, p, f = metric(key, response)
        out[f"{name}_R"], out[f"{name}_P"], out[f"{name}_F1"] = float(r), float(p), float(f)
    # scorch.scores.conll2012 is exactly this statistics.mean; reusing the F1s avoids scoring twice.
    out["CoNLL_F1"] = float(statistics.mean((out["MUC_F1"], out["B3_F1"], out["CEAFe_F1"])))
    for name, value in out.items():
        if not math.isfinite(value):  # pragma: no cover - scorch guards its divisions
            raise ValueError(f"{name} is not finite ({value})")
    return out


def coref_metrics(gold: Document, system: Document) -> dict[str, float]:
    """Return the coreference metrics of one item, keys COREF_METRICS (+ SPLIT_LEA_METRICS).

    Split-antecedent LEA is added for RuCoCo documents (format `rucoco-json`), whether or not
    they have `includes`; it does not use the mention alignment (evaluate.py does not).
    """
    if gold.format != system.format:
        raise ValueError(f"gold is in format {gold.format}, system in format {system.format}")
    out = score_clusters(
        [set(e) for e in gold.entities], [set(e) for e in system.entities], align=True
    )
    if gold.format == "rucoco-json":
        r, p, f = split_antecedent_lea(gold, system)
        out["LEA_split_R"], out["LEA_split_P"], out["LEA_split_F1"] = r, p, f
    return out


# --------------------------------------------------------------------------------------------
# Split-antecedent LEA
# --------------------------------------------------------------------------------------------


def child_mentions(doc: Document, index: int) -> frozenset[Mention]:
    """Return the child mentions of entity `index`, exactly as RuCoCo-2023's `get_children`.

    That is the mentions of the entities it includes directly, plus the mentions of every
    *leaf* entity (one that includes nothing) reachable through `includes`. A descendant two or
    more levels down that itself includes entities contributes only through its leaves.
    """
    includes = doc.includes
    children = {m for c in includes[index] for m in doc.entities[c]}
    visited: set[int] = set()
    stack = list(includes[index])
    while stack:
        c = stack.pop()
        visited.add(c)
        if not includes[c]:
            children.update(doc.entities[c])
        else:
            stack.extend(g for g in includes[c] if g not in visited)
    return frozenset(children)


def _split_lea_side(key: Document, response: Document) -> tuple[float, float]:
    """Return (Σ importance·resolution, Σ importance) of `key` against `response`."""
    owner: dict[Mention, int] = {}
    for i, entity in enumerate(response.entities):
        for m in entity:
            owner[m] = i
    # child mention -> every mention of the response entities having it as a child
    parents_of_child: dict[Mention, set[Mention]] = defaultdict(set)
    if response.includes:
        for i, entity in enumerate(response.entities):
            for child in child_mentions(response, i):
                parents_of_child[child].update(entity)
    weighted: list[float] = []
    weight = 0
    for i, entity in enumerate(key.entities):
        size = len(entity)
        if size > 1:  # RuCoCo does not annotate singletons: they are not scored
            shared = Counter(owner[m] for m in entity if m in owner)
            correct = sum(c * (c - 1) // 2 for c in shared.values())
            weighted.append(size * correct / (size * (size - 1) / 2))
            weight += size
        children = child_mentions(key, i) if key.includes else frozenset()
        if children:
            correct = sum(1 for m in entity for c in children if m in parents_of_child.get(c, ()))
            weighted.append(len(children) * correct / (size * len(children)))
            weight += len(children)
    return math.fsum(weighted), weight


def split_antecedent_lea(gold: Document, system: Document) -> tuple[float, float, float]:
    """Return split-antecedent LEA (recall, precision, F1) as in RuCoCo-2023's evaluate.py.

    Each entity of size > 1 adds the usual LEA term (importance |e|); each entity with child
    mentions C adds a term of importance |C| and resolution = share of the |e|·|C| pairs
    (mention m, child mention c) for which the other side has an entity containing m whose
    child mentions contain c. R = Σ imp·res / Σ imp over the gold (0 when nothing is scored),
    P symmetrically, F1 = 2PR/(P+R) (0 when P + R = 0). evaluate.py adds 1e-7 to these
    denominators; we do not, so our values are exact (they differ from its by < 1e-6).
    """
    r_num, r_den = _split_lea_side(gold, system)
    p_num, p_den = _split_lea_side(system, gold)
    recall = r_num / r_den if r_den else 0.0
    precision = p_num / p_den if p_den else 0.0
    return recall, precision, f1(recall, precision)
