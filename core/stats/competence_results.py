"""What the competence models return (`core.stats.competence`): a `CompetenceResult` with a
competence per annotator (`AnnotatorCompetence`) and an aggregated label per item (`ItemLabels`,
read one at a time as `ItemLabel`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from core.stats._types import FloatArray, IntArray


@dataclass(frozen=True)
class AnnotatorCompetence:
    """Hold one annotator's competence (``None`` + reason for an annotator without answers)."""

    annotator: int
    competence: float | None
    n: int  # answers used
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return {annotator, competence, n[, reason]}."""
        rec: dict[str, object] = {
            "annotator": self.annotator, "competence": self.competence, "n": self.n,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class ItemLabel:
    """Hold one item's aggregated label and its uncertainty (``None`` + reason if unanswered).

    ``label`` is the domain value of highest posterior probability (the first in domain order on
    a tie), ``probability`` that posterior, ``entropy`` the posterior's entropy in nats (0 =
    certain, ln K = uniform over the K values).
    """

    item: int
    label: float | None
    probability: float | None
    entropy: float | None
    n: int  # answers to the item
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return {item, label, probability, entropy, n[, reason]}."""
        rec: dict[str, object] = {
            "item": self.item, "label": self.label, "probability": self.probability,
            "entropy": self.entropy, "n": self.n,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True, eq=False)
class ItemLabels:
    """Every item's aggregated label as columns (what `ItemLabel` holds for one item).

    ``label``, ``probability`` and ``entropy`` are ``np.nan`` for an item without answers
    (``n`` = 0), whose reason is "no answers".
    """

    label: FloatArray
    probability: FloatArray
    entropy: FloatArray
    n: IntArray

    REASON_UNANSWERED = "no answers"

    def __len__(self) -> int:
        return int(self.n.size)

    def item(self, i: int) -> ItemLabel:
        """Return item ``i``'s label as an `ItemLabel` (``None`` + reason when unanswered)."""
        if self.n[i] == 0:
            return ItemLabel(i, None, None, None, 0, self.REASON_UNANSWERED)
        return ItemLabel(i, float(self.label[i]), float(self.probability[i]),
                         float(self.entropy[i]), int(self.n[i]))


@dataclass(frozen=True, eq=False)
class CompetenceResult:
    """Hold a fitted competence model.

    ``posterior`` is ``(n_items, K)`` (rows of ``np.nan`` for unanswered items); ``class_prior``
    is ``(K,)`` (uniform for MACE); ``confusion`` ``(n_annotators, K, K)`` for Dawid–Skene
    (row = true class, column = answer) and ``strategy`` ``(n_annotators, K)`` (ξ) for MACE.
    ``log_likelihood`` is the natural-log marginal likelihood of the answers under the fitted
    parameters (for MACE with ``method="vb"``, under MACE's variational point estimates).
    """

    method: Literal["dawid_skene", "mace"]
    params: Mapping[str, object]
    domain: tuple[float, ...]
    annotators: tuple[AnnotatorCompetence, ...]
    labels: ItemLabels
    posterior: FloatArray
    class_prior: FloatArray
    log_likelihood: float
    iterations: int
    converged: bool
    confusion: FloatArray | None = None
    strategy: FloatArray | None = None

    @functools.cached_property
    def items(self) -> tuple[ItemLabel, ...]:
        """Every item's aggregated label, one `ItemLabel` each (``labels`` holds them as
        columns: prefer it on many items)."""
        return tuple(self.labels.item(i) for i in range(len(self.labels)))

    def ranking(self) -> tuple[int, ...]:
        """Return annotator indices by competence, highest first (undefined last, by index)."""
        defined = [a for a in self.annotators if a.competence is not None]
        undefined = [a.annotator for a in self.annotators if a.competence is None]
        ordered = sorted(defined, key=lambda a: (-(a.competence or 0.0), a.annotator))
        return tuple(a.annotator for a in ordered) + tuple(undefined)
