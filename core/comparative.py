"""Comparative questions — pairwise preference, ranking, best–worst scaling — as stored.

A comparative question is asked about a *comparison*: an item whose ``outputs`` list other items
of the study (typically the systems' outputs for one source) in a canonical order. The annotator
sees the outputs in an order shuffled per participant (`shown_order`); the judgment names outputs,
never sides, and is stored as given (``Answer.choice``) with the order shown, so position bias can
be measured. Its ``value`` (what α, the attention checks and the answer counts read) is the
canonical index of the chosen output: for pairwise 0 or 1 (0.5 a tie), for ranking the first
ranked output, for best–worst the best one (docs/comparisons.md).

The judgment's stored form, by kind (every name an output's external id):

- pairwise: ``{"shown": [a, b], "pick": a | "tie", "strength": "" | "slightly" | "much"}``
- ranking:  ``{"shown": [a, b, c], "order": [[b], [a, c]]}`` (best first; a group is a tie)
- bws:      ``{"shown": [a, b, c, d], "best": b, "worst": d}``

>>> judgment_clean("pairwise", {"ties": True}, ["x", "y"], {"shown": ["y", "x"], "pick": "y"})
(1.0, {'shown': ['y', 'x'], 'pick': 'y', 'strength': ''})
>>> judgment_from_text("bws", {}, ["a", "b", "c", "d"], "c|a")[1]
{'shown': ['a', 'b', 'c', 'd'], 'best': 'c', 'worst': 'a'}
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

KINDS = ("pairwise", "ranking", "bws")
STRENGTHS = ("slightly", "much")
TIE = "tie"
MIN_OUTPUTS = {"pairwise": 2, "ranking": 2, "bws": 3}
MAX_OUTPUTS = {"pairwise": 2, "ranking": 8, "bws": 8}
# The options of each kind and their defaults; `options_clean` fills and checks them.
DEFAULTS: dict[str, dict[str, Any]] = {
    "pairwise": {"ties": False, "strength": False},
    "ranking": {"ties": False},
    "bws": {"size": 4},
}
# A long file's separators: outputs in `items` and in a ranking's `choice`; `=` ties two
# outputs of a ranking.
SEPARATOR = "|"
TIE_MARK = "="


class JudgmentError(ValueError):
    """A judgment or an option that cannot be stored; the message names what is wrong."""


def is_comparative(kind: str) -> bool:
    return kind in KINDS


def asks(kind: str, n_outputs: int) -> bool:
    """Whether a question of ``kind`` is asked about an item with ``n_outputs`` outputs: a scale
    question about every item that is not a comparison, a comparative one about every comparison
    whose number of outputs it can judge (a pairwise question two, a best–worst one three to
    eight), so one study may ask pairwise questions of its pairs and best–worst ones of its
    tuples."""
    if not is_comparative(kind):
        return n_outputs == 0
    return MIN_OUTPUTS[kind] <= n_outputs <= MAX_OUTPUTS[kind]


def options_clean(kind: str, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the options of a comparative question, defaults filled in; raise `JudgmentError`
    naming an unknown or invalid option."""
    if kind not in DEFAULTS:
        raise JudgmentError(f"kind must be one of {', '.join(KINDS)}, not {str(kind)[:20]!r}")
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise JudgmentError("the options must be a mapping")
    out = dict(DEFAULTS[kind])
    for name, value in raw.items():
        if name not in out:
            raise JudgmentError(f"a {kind} question has no option {str(name)[:30]!r} "
                                f"(it has: {', '.join(out)})")
        if name == "size":
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not MIN_OUTPUTS["bws"] <= value <= MAX_OUTPUTS["bws"]:
                raise JudgmentError(f"size must be a whole number from {MIN_OUTPUTS['bws']} "
                                    f"to {MAX_OUTPUTS['bws']}, not {str(value)[:20]!r}")
        elif not isinstance(value, bool):
            raise JudgmentError(f"{name} must be true or false, not {str(value)[:20]!r}")
        out[name] = value
    return out


def shown_order(outputs: Sequence[str], key: str) -> list[str]:
    """The outputs in the order one participant sees them: a shuffle seeded by ``key`` (the
    participant's and the item's ids), the same on every showing and every worker."""
    order = list(outputs)
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    random.Random(seed).shuffle(order)
    return order


def _shown(outputs: Sequence[str], shown: Any) -> list[str]:
    if not isinstance(shown, list) or not all(isinstance(s, str) for s in shown):
        raise JudgmentError("shown must list the outputs in the order shown")
    if sorted(shown) != sorted(outputs) or len(set(shown)) != len(shown):
        raise JudgmentError("shown must list this comparison's outputs, each once")
    return shown


def _output(name: Any, shown: Sequence[str], field: str) -> str:
    if not isinstance(name, str) or name not in shown:
        raise JudgmentError(f"{field}: {str(name)[:40]!r} is not one of the outputs shown")
    return name


def judgment_clean(kind: str, options: Mapping[str, Any], outputs: Sequence[str],
                   raw: Any) -> tuple[float, dict[str, Any]]:
    """Check one judgment against its comparison's ``outputs`` (canonical order); return its
    value (the canonical index of the chosen output; 0.5 for a pairwise tie) and its stored
    form. Raises `JudgmentError`."""
    if not isinstance(raw, Mapping):
        raise JudgmentError("a comparative answer is a judgment, not a value")
    options = options_clean(kind, options)
    if not MIN_OUTPUTS[kind] <= len(outputs) <= MAX_OUTPUTS[kind]:
        raise JudgmentError(f"a {kind} question compares {MIN_OUTPUTS[kind]} to "
                            f"{MAX_OUTPUTS[kind]} outputs; this comparison has {len(outputs)}")
    shown = _shown(outputs, raw.get("shown"))
    index = {name: i for i, name in enumerate(outputs)}
    if kind == "pairwise":
        pick = raw.get("pick")
        strength = raw.get("strength") or ""
        if strength and (not options["strength"] or strength not in STRENGTHS):
            raise JudgmentError("strength must be one of slightly, much"
                                if options["strength"] else "this question takes no strength")
        if pick == TIE:
            if not options["ties"]:
                raise JudgmentError("this question allows no tie")
            if strength:
                raise JudgmentError("a tie has no strength")
            return 0.5, {"shown": shown, "pick": TIE, "strength": ""}
        pick = _output(pick, shown, "pick")
        return float(index[pick]), {"shown": shown, "pick": pick, "strength": strength}
    if kind == "ranking":
        order = raw.get("order")
        if not isinstance(order, list) or not order:
            raise JudgmentError("order must list the outputs best first")
        groups: list[list[str]] = []
        for group in order:
            group = [group] if isinstance(group, str) else group
            if not isinstance(group, list) or not group:
                raise JudgmentError("order must list the outputs (or groups of tied outputs)")
            groups.append([_output(name, shown, "order") for name in group])
        flat = [name for group in groups for name in group]
        if sorted(flat) != sorted(shown) or len(set(flat)) != len(flat):
            raise JudgmentError("order must rank every output shown, each once")
        if not options["ties"] and any(len(g) > 1 for g in groups):
            raise JudgmentError("this question allows no tie")
        return float(index[groups[0][0]]), {"shown": shown, "order": groups}
    best = _output(raw.get("best"), shown, "best")
    worst = _output(raw.get("worst"), shown, "worst")
    if best == worst:
        raise JudgmentError("the best and the worst must be two different outputs")
    return float(index[best]), {"shown": shown, "best": best, "worst": worst}


def judgment_from_text(kind: str, options: Mapping[str, Any], shown: Sequence[str],
                       text: str) -> tuple[float, dict[str, Any]]:
    """One judgment of a long comparison file (``annotator,items,choice``): ``shown`` the
    outputs in the order shown (the canonical order of a comparison built from the file), and
    ``text`` the chosen output or ``tie`` (pairwise), the outputs best to worst separated by
    ``|`` with ``=`` between tied ones (ranking), or ``best|worst`` (best–worst)."""
    text = text.strip()
    shown = list(shown)
    if kind == "pairwise":
        return judgment_clean(kind, options, shown, {"shown": shown, "pick": text})
    parts = [p.strip() for p in text.split(SEPARATOR)]
    if kind == "ranking":
        order = [[n.strip() for n in p.split(TIE_MARK)] for p in parts]
        return judgment_clean(kind, options, shown, {"shown": shown, "order": order})
    if len(parts) != 2:
        raise JudgmentError("a best–worst choice is best|worst")
    return judgment_clean(kind, options, shown, {"shown": shown, "best": parts[0],
                                                 "worst": parts[1]})


def judgment_text(choice: Mapping[str, Any]) -> str:
    """The choice of a stored judgment as a long file writes it (`judgment_from_text`'s
    inverse)."""
    if "pick" in choice:
        return str(choice["pick"])
    if "order" in choice:
        return SEPARATOR.join(TIE_MARK.join(group) for group in choice["order"])
    return f"{choice['best']}{SEPARATOR}{choice['worst']}"
