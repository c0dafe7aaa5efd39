"""The analysis settings: one frozen, validated object with every knob of a run (no Django).

`AnalysisSettings` is the single definition of what an analysis can be asked to do: the
measurement level, the trust variant, the bootstrap, trust and noise parameters, every filtering
heuristic's parameters and the annotators left out.  Study definition files (`analysis` table),
the dashboard's rerun form, the API, `manage.py analyze` and the results builder all build it, so
a value is checked in one place and a choice (levels, variants, rule names) is listed in one place.

Constructing it validates every field and raises one `SettingsError` naming every problem with
its key path (``heuristics.slow.threshold_s``).  ``from_mapping`` reads a JSON/TOML-shaped mapping
(unknown keys are errors, nested tables may be partial), ``to_dict`` writes it back JSON-safe in a
stable order, ``replace`` changes some fields.  Every default is the value the frozen demo results
were computed with.

>>> s = AnalysisSettings.from_mapping({"level": "interval", "heuristics": {"slow": {"threshold_s": 600}}})
>>> s.level, s.heuristics.slow.threshold_s, s.heuristics.low_variance.threshold
('interval', 600.0, 1.0)
>>> AnalysisSettings.from_mapping(s.to_dict()) == s
True
>>> try:
...     AnalysisSettings.from_mapping({"level": "fancy", "seed": -1})
... except SettingsError as exc:
...     print(exc.fields)
{'level': ["must be one of nominal, ordinal, interval, ratio, not 'fancy'"], 'seed': ['must be at least 0, not -1']}
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

from core.problems import InputError, Problem
from core.stats.heuristics import RULES, SENTIMENT_THRESHOLDS
from core.stats.quality import QUALITY_RULES
from core.stats.scales import LEVELS
from core.stats.systems_choices import CORRECTIONS, RESAMPLINGS
from core.stats.systems_choices import TESTS as SYSTEM_TESTS
from core.stats.trust import MAX_EXACT_LIMIT, VARIANTS

__all__ = [
    "LEVELS",
    "RULES",
    "TRUST_VARIANTS",
    "TRUST_VARIANT_LABELS",
    "AnalysisSettings",
    "HeuristicSettings",
    "Knob",
    "QUALITY_RULES",
    "QualitySettings",
    "SettingsError",
    "knob",
    "knobs",
    "pseudonym_number",
]

# The choices are defined by the code that implements them (core.stats); everything outside
# core.stats takes them from here.
TRUST_VARIANTS: tuple[str, ...] = VARIANTS
TRUST_VARIANT_LABELS: Mapping[str, str] = {
    "paper": "paper (Borovikova et al. 2022, Algorithm 1)",
    "notebook": "notebook (the authors' code)",
}
PSEUDONYM = re.compile(r"A[1-9][0-9]*")
SOURCE = "analysis settings"  # the `file` of every Problem a SettingsError carries


def pseudonym_number(name: str) -> int:
    """Return the number of a pseudonym: ``pseudonym_number("A12") == 12``."""
    return int(name[1:])


class SettingsError(InputError):
    """One or more invalid analysis settings; ``problems[i].column`` is the key path."""

    def render(self, limit: int = 200) -> str:
        lines = [f"{len(self.problems)} problem(s) in the analysis settings:"]
        lines += [f"  {p.column}: {p.message}" for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"  … and {len(self.problems) - limit} more")
        return "\n".join(lines)

    @property
    def fields(self) -> dict[str, list[str]]:
        """Return the messages per key path, in the order found."""
        out: dict[str, list[str]] = {}
        for p in self.problems:
            out.setdefault(str(p.column), []).append(p.message)
        return out


def _problem(path: str, message: str) -> Problem:
    return Problem(file=SOURCE, line=None, column=path, message=message)


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Knob:
    """What one setting accepts, and how a form or a command presents it.

    ``kind``: ``choice`` (one of ``choices``), ``int``, ``float`` (ints are accepted and stored
    as floats; never NaN or infinite), ``bool`` (true or false, never 0/1), ``pseudonyms`` (a
    list of ``A<n>``).  ``low``/``high``
    bound numbers (``open_low``/``open_high``: strictly); ``optional``: ``None`` is allowed
    (its meaning is in ``help``).
    """

    kind: Literal["choice", "int", "float", "bool", "pseudonyms"]
    label: str
    help: str
    choices: tuple[str, ...] = ()
    choice_labels: Mapping[str, str] | None = None
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    optional: bool = False

    def problem(self, value: Any) -> str | None:
        """Return what is wrong with ``value``, or ``None`` when it is acceptable."""
        if value is None:
            return None if self.optional else "is required"
        if self.kind == "choice":
            if value not in self.choices:
                return f"must be one of {', '.join(self.choices)}, not {value!r}"
            return None
        if self.kind == "pseudonyms":
            return self._pseudonyms_problem(value)
        if self.kind == "bool":
            return None if isinstance(value, bool) else f"must be true or false, not {value!r}"
        if self.kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            return f"must be an integer, not {value!r}"
        if self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"must be a number, not {value!r}"
            try:
                finite = math.isfinite(value)
            except OverflowError:  # an int too large for a float
                finite = False
            if not finite:
                return f"must be a finite number, not {value!r}"
        return self._range_problem(value)

    def _range_problem(self, value: int | float) -> str | None:
        above = self.low is None or (value > self.low if self.open_low else value >= self.low)
        below = self.high is None or (value < self.high if self.open_high else value <= self.high)
        return None if above and below else f"must be {self.bounds()}, not {_number(value)}"

    def _pseudonyms_problem(self, value: Any) -> str | None:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            return f"must be a list of pseudonyms like A3, not {value!r}"
        bad = [v for v in value if not isinstance(v, str) or not PSEUDONYM.fullmatch(v)]
        if bad:
            return f"must list pseudonyms like A3 (A followed by a number from 1), not {', '.join(map(repr, bad))}"
        return None

    def bounds(self) -> str:
        """Describe the accepted range: "at least 1", "strictly between 0 and 1", …"""
        low, high = self.low, self.high
        if low is not None and high is not None and self.open_low == self.open_high:
            return f"{'strictly ' if self.open_low else ''}between {_number(low)} and {_number(high)}"
        parts = []
        if low is not None:
            parts.append(f"{'greater than' if self.open_low else 'at least'} {_number(low)}")
        if high is not None:
            parts.append(f"{'less than' if self.open_high else 'at most'} {_number(high)}")
        return " and ".join(parts) or "any number"

    def normalise(self, value: Any) -> Any:
        """Return ``value`` in its stored form (floats as float, pseudonyms sorted and unique)."""
        if value is None:
            return None
        if self.kind == "float":
            return float(value)
        if self.kind == "pseudonyms":
            return tuple(sorted(set(value), key=pseudonym_number))
        return value


def _knob(default: Any, **spec: Any) -> Any:
    return field(default=default, metadata={"knob": Knob(**spec)})


def _section(cls: type) -> Any:
    return field(default_factory=cls, metadata={"section": cls})


# --------------------------------------------------------------------------- heuristics
# The five rules of Solomon et al., *Rethinking Crowd Sourcing for Semantic Similarity*, §5.1,
# with the defaults of core.stats.heuristics (tests/unit/test_settings.py keeps them equal).


@dataclass(frozen=True)
class SlowRule:
    threshold_s: float = _knob(300.0, kind="float", label="Slow: mean seconds per item above",
                               help="flag an annotator whose mean active time per item exceeds this",
                               low=0.0, open_low=True)


@dataclass(frozen=True)
class LowVarianceRule:
    threshold: float = _knob(1.0, kind="float", label="Low variance: label std below",
                             help="flag an annotator whose labels' sample standard deviation is below this",
                             low=0.0)
    min_ratings: int = _knob(2, kind="int", label="Low variance: minimum labels",
                             help="fewer labels leave the value undefined (the sample std needs 2)",
                             low=2)


@dataclass(frozen=True)
class HighRandomRule:
    threshold: float = _knob(0.0, kind="float", label="High on random controls: difference above",
                             help="flag when the mean label on control items minus the mean on the "
                                  "other items exceeds this")
    min_ratings: int = _knob(2, kind="int", label="High on random controls: minimum labels per side",
                             help="labels needed on control items and on the other items", low=1)


@dataclass(frozen=True)
class DisagreeableRule:
    min_other_raters: int = _knob(2, kind="int", label="Disagreeable: minimum other raters",
                                  help="an item counts when at least this many other raters agree",
                                  low=1)
    min_items: int = _knob(3, kind="int", label="Disagreeable: minimum items",
                           help="fewer counted items leave the value undefined", low=1)
    threshold: float = _knob(0.5, kind="float", label="Disagreeable: share above",
                             help="flag when the share of counted items the annotator contradicts "
                                  "exceeds this", low=0.0, high=1.0)


@dataclass(frozen=True)
class SentimentRule:
    sentiment_threshold: float | None = _knob(
        None, kind="float", optional=True, label="Sentiment: opposite-sentiment gap at least",
        help="|sentiment_a − sentiment_b| of a qualifying pair; empty/null = automatic: "
             f"{SENTIMENT_THRESHOLDS['imported']:g} with imported scores, "
             f"{SENTIMENT_THRESHOLDS['vader']:g} with VADER", low=0.0, high=2.0)
    bleu_threshold: float = _knob(0.8, kind="float", label="Sentiment: unigram BLEU above",
                                  help="a qualifying pair's overlap", low=0.0, high=1.0)
    std_threshold: float = _knob(1.0, kind="float", label="Sentiment: label std above",
                                 help="flag when the std of the labels on qualifying pairs exceeds this",
                                 low=0.0)
    min_pairs: int = _knob(2, kind="int", label="Sentiment: minimum pairs",
                           help="fewer rated qualifying pairs leave the value undefined", low=2)


@dataclass(frozen=True)
class HeuristicSettings:
    """The parameters of each filtering rule, by rule name (`RULES`)."""

    slow: SlowRule = _section(SlowRule)
    low_variance: LowVarianceRule = _section(LowVarianceRule)
    high_random: HighRandomRule = _section(HighRandomRule)
    disagreeable: DisagreeableRule = _section(DisagreeableRule)
    sentiment: SentimentRule = _section(SentimentRule)

    def params(self, rule: str) -> dict[str, Any]:
        """Return the keyword arguments of ``rule``'s function in ``core.stats.heuristics``."""
        return _as_dict(getattr(self, rule))


# --------------------------------------------------------------------------- quality rules
# Rules beyond the paper's five (core.stats.quality, docs/statistics/quality.md), with the
# defaults of its functions (tests/unit/test_settings.py keeps them equal).


@dataclass(frozen=True)
class TooFastRule:
    floor_s: float = _knob(1.0, kind="float", low=0.0, high=3600.0,
                           label="Too fast: floor in seconds",
                           help="an answer is too fast when its active time (the first "
                                "revision's) is below this floor")
    reading_speed: float | None = _knob(
        None, kind="float", optional=True, low=0.0, open_low=True, high=1000.0,
        label="Too fast: reading speed (words per second)",
        help="empty/null = the fixed floor only; else an item's floor is the larger of the fixed "
             "floor and its words divided by this speed (≈ 4 words/s is silent reading)")
    threshold: float = _knob(0.5, kind="float", low=0.0, high=1.0,
                             label="Too fast: share above",
                             help="flag an annotator when more than this share of their timed "
                                  "answers is too fast")
    min_answers: int = _knob(3, kind="int", low=1, label="Too fast: minimum timed answers",
                             help="fewer timed answers leave the value undefined")


@dataclass(frozen=True)
class AttentionRule:
    max_failures: int = _knob(2, kind="int", low=1, high=1000,
                              label="Attention checks: failures at least",
                              help="flag an annotator who failed at least this many attention "
                                   "checks (each scored on its first answer); the study's "
                                   "check_stop_after is the collection policy, this the analysis")


@dataclass(frozen=True)
class StraightLiningRule:
    run_threshold: int = _knob(10, kind="int", low=1, label="Straight-lining: run of at least",
                               help="flag an annotator whose longest run of one answer (across "
                                    "items and an item's questions) is at least this long")
    share_threshold: float = _knob(0.8, kind="float", low=0.0, high=1.0,
                                   label="Straight-lining: run share at least",
                                   help="also flag when the longest run is at least this share "
                                        "of the annotator's answers")
    min_answers: int = _knob(5, kind="int", low=1, label="Straight-lining: minimum answers",
                             help="fewer answers leave the value undefined")


@dataclass(frozen=True)
class DuplicateInconsistencyRule:
    tolerance: float = _knob(1.0, kind="float", low=0.0,
                             label="Duplicate inconsistency: difference above",
                             help="a repeated item's two answers are inconsistent when they "
                                  "differ by more than this (on the raw scale's codes)")
    threshold: float = _knob(0.5, kind="float", low=0.0, high=1.0,
                             label="Duplicate inconsistency: share above",
                             help="flag when more than this share of the annotator's duplicate "
                                  "pairs is inconsistent")
    min_pairs: int = _knob(2, kind="int", low=1, label="Duplicate inconsistency: minimum pairs",
                           help="fewer answered duplicate pairs leave the value undefined")


@dataclass(frozen=True)
class QualitySettings:
    """The parameters of each quality rule beyond the paper's five, by rule name."""

    too_fast: TooFastRule = _section(TooFastRule)
    attention: AttentionRule = _section(AttentionRule)
    straight_lining: StraightLiningRule = _section(StraightLiningRule)
    duplicate_inconsistency: DuplicateInconsistencyRule = _section(DuplicateInconsistencyRule)

    def params(self, rule: str) -> dict[str, Any]:
        """Return the keyword arguments of ``rule``'s function in ``core.stats.quality``."""
        return _as_dict(getattr(self, rule))


# --------------------------------------------------------------------------- the settings


@dataclass(frozen=True)
class AnalysisSettings:
    """Every setting of an analysis run, validated on construction (see the module docstring)."""

    level: str = _knob("ordinal", kind="choice", choices=LEVELS, label="Level of measurement",
                       help="Used for trust coefficients and the outliers removed from alpha; the "
                            "alpha table always shows all four levels.")
    trust_variant: str = _knob("paper", kind="choice", choices=TRUST_VARIANTS,
                               choice_labels=TRUST_VARIANT_LABELS, label="Trust variant",
                               help="Algorithm 1 as printed (paper) or as the authors' code (notebook)")
    simple_threshold: int = _knob(3, kind="int", low=1, high=1000,
                                  label="Simple items: at most this many distinct answers",
                                  help="an item is simple when it has at most this many distinct "
                                       "raw answers")
    bootstrap_samples: int = _knob(1000, kind="int", low=1, high=1_000_000,
                                   label="Bootstrap resamples",
                                   help="resamples of the items for every bootstrap interval "
                                        "(alpha, metric–human correlations)")
    bootstrap_confidence: float = _knob(0.95, kind="float", low=0.0, high=1.0, open_low=True,
                                        open_high=True, label="Bootstrap confidence",
                                        help="coverage of the percentile bootstrap interval")
    seed: int = _knob(0, kind="int", low=0, label="Seed",
                      help="seed of every bootstrap and of sampled trust; the same data and "
                           "settings give the same document")
    trust_max_exact: int = _knob(20, kind="int", low=2, high=MAX_EXACT_LIMIT,
                                 label="Exact trust up to annotators",
                                 help="exact trust coefficients up to this many annotators; "
                                      "beyond, sampled subsets")
    trust_samples: int = _knob(20_000, kind="int", low=1, high=10_000_000,
                               label="Sampled trust subsets",
                               help="subsets drawn for sampled trust coefficients")
    trust_budget_s: float = _knob(60.0, kind="float", low=0.0, high=86_400.0, open_low=True,
                                  label="Sampled trust: seconds at most",
                                  help="time the sampled trust estimate may take per scale and "
                                       "item set; fewer subsets (a larger, reported Monte-Carlo "
                                       "error) when the asked number would take longer")
    trust_max_annotators: int | None = _knob(None, kind="int", optional=True, low=2, high=10_000,
                                             label="Trust up to annotators",
                                             help="empty: no limit (the time limit above "
                                                  "decides); above this many annotators, trust "
                                                  "coefficients are not computed")
    outlier_threshold: float = _knob(0.5, kind="float", low=0.0, high=1.0,
                                     label="Outlier threshold",
                                     help="an annotator is an outlier when their trust "
                                          "coefficient is at most this")
    noise_confidence: float = _knob(0.95, kind="float", low=0.0, high=1.0, open_low=True,
                                    open_high=True, label="Noise model confidence",
                                    help="confidence of the noise model's t0 and γ")
    noise_max_gamma: float = _knob(0.05, kind="float", low=0.0, high=1.0, open_low=True,
                                   open_high=True, label="Noise model target γ",
                                   help="the γ the largest number of disagreements must keep")
    excluded_annotators: tuple[str, ...] = _knob(
        (), kind="pseudonyms", label="Leave out annotators",
        help="pseudonyms (A3, A7) whose answers the analysis leaves out")
    correlation_intervals: str = _knob(
        "every", kind="choice", choices=("every", "baseline", "none"),
        label="Bootstrap intervals on correlations",
        help="every metric–human correlation (every rule combination), the baseline only "
             "(and the radical/centrist rows), or none: each interval resamples the items "
             "as many times as the bootstrap resamples, seconds apiece at tens of thousands of "
             "items")
    comparison_alpha: float = _knob(0.05, kind="float", low=0.0, high=1.0, open_low=True,
                                    open_high=True, label="Metric comparison: significance level",
                                    help="Williams' test says one metric agrees with the humans "
                                         "better than another when its two-sided p is below this")
    systems_resampling: str = _knob(
        "sources", kind="choice", choices=RESAMPLINGS,
        choice_labels={"sources": "sources (the outputs of one input together)",
                       "sources_and_annotators": "sources and annotators (two-way)"},
        label="Systems: the bootstrap draws",
        help="what each bootstrap of the system scores draws with replacement: the sources, or "
             "the sources and the annotators (wider intervals that also cover who rated)")
    systems_test: str = _knob(
        "permutation", kind="choice", choices=SYSTEM_TESTS,
        choice_labels={"permutation": "paired permutation (sign-flip) test",
                       "wilcoxon": "Wilcoxon signed-rank test"},
        label="Systems: paired test",
        help="the test of every two systems on the sources both answered")
    systems_correction: str = _knob(
        "holm", kind="choice", choices=CORRECTIONS, label="Systems: multiple-comparison correction",
        help="how the p-values of all pairs of systems are adjusted (Holm 1979, Bonferroni, none)")
    systems_bootstrap: int = _knob(1000, kind="int", low=1, high=100_000,
                                   label="Systems: bootstrap resamples",
                                   help="resamples of the sources for the system scores' and "
                                        "the system-level correlations' intervals")
    systems_permutations: int = _knob(10_000, kind="int", low=1, high=1_000_000,
                                      label="Systems: permutations",
                                      help="random sign vectors of the paired permutation test "
                                           "(exact when 2^n is fewer) and relabellings of the "
                                           "pairwise accuracies' p-values (exact when n! is fewer)")
    systems_alpha: float = _knob(0.05, kind="float", low=0.0, high=1.0, open_low=True,
                                 open_high=True, label="Systems: significance level",
                                 help="two systems differ significantly when the adjusted p of "
                                      "their paired test is below this (and the clusters split)")
    comparisons_bootstrap: int = _knob(1000, kind="int", low=1, high=100_000,
                                       label="Comparisons: bootstrap resamples",
                                       help="resamples of the judgments of a comparative "
                                            "question for the intervals of its strengths and "
                                            "ranks, and of its units for its correlations")
    comparisons_splits: int = _knob(100, kind="int", low=1, high=10_000,
                                    label="Comparisons: split-half splits",
                                    help="random splits of the annotators into two halves "
                                         "averaged by the split-half reliability")
    # The judges analysis (docs/statistics/judges.md): the alternative annotator test of
    # Calderon et al. (2025), whose ε the paper recommends at 0.2 for expert annotators (0.1
    # for crowd workers), its p-values adjusted by Benjamini and Yekutieli (2001) at q.
    judge_epsilon: float = _knob(0.2, kind="float", low=0.0, high=1.0, open_low=True,
                                 open_high=True, label="Judges: cost advantage ε",
                                 help="the alternative annotator test's ε: how much a judge's "
                                      "alignment may fall short of an annotator's and still "
                                      "win against them, for being cheaper (Calderon et al. "
                                      "2025 recommend 0.2 for experts, 0.1 for crowd workers)")
    judge_q: float = _knob(0.05, kind="float", low=0.0, high=1.0, open_low=True, open_high=True,
                           label="Judges: false discovery rate q",
                           help="the level of the Benjamini–Yekutieli procedure over the "
                                "annotators of the alternative annotator test")
    judges_as_annotators: bool = _knob(False, kind="bool",
                                       label="Judges as annotators (the “with judges” view)",
                                       help="off: judges' answers enter no statistic about the "
                                            "people; on: each judge's first run is analysed as "
                                            "one more annotator, named “judge: <name>”, and "
                                            "every page of the run says “with judges”")
    heuristics: HeuristicSettings = _section(HeuristicSettings)
    quality: QualitySettings = _section(QualitySettings)

    def __post_init__(self) -> None:
        problems = _instance_problems(self, "")
        if problems:
            raise SettingsError(problems)
        _normalise(self)

    # -- reading and writing

    @classmethod
    def from_mapping(cls, data: Any, base: AnalysisSettings | None = None) -> AnalysisSettings:
        """Read settings from a mapping, over ``base`` (default: the defaults).

        Nested tables may be partial; unknown keys and values of the wrong type or range are
        reported together in one `SettingsError`.  Values may also be parts of this object
        (``heuristics=HeuristicSettings(...)``).
        """
        base = base if base is not None else cls()
        problems: list[Problem] = []
        if not isinstance(data, Mapping):
            raise SettingsError([_problem("", f"must be a table of settings, not {data!r}")])
        candidate = _merged(type(base), base, data, "", problems)
        try:
            settings = cls(**candidate)
        except SettingsError as exc:
            problems += exc.problems
        if problems:
            raise SettingsError(sorted(problems, key=_order(cls)))
        return settings

    @classmethod
    def coerce(cls, value: AnalysisSettings | Mapping[str, Any]) -> AnalysisSettings:
        """Return ``value`` as settings: an object as it is, a mapping through ``from_mapping``."""
        return value if isinstance(value, cls) else cls.from_mapping(value)

    def to_dict(self) -> dict[str, Any]:
        """Return every setting as a JSON-safe dict, in field order (tuples become lists)."""
        return _as_dict(self)

    def replace(self, **changes: Any) -> AnalysisSettings:
        """Return a copy with ``changes`` (nested sections may be partial mappings), validated."""
        return type(self).from_mapping(changes, base=self)


# --------------------------------------------------------------------------- the machinery


def knobs(cls: type = AnalysisSettings, prefix: str = "") -> dict[str, Knob]:
    """Return every setting's `Knob` by key path, in field order (nested sections flattened)."""
    out: dict[str, Knob] = {}
    for f in fields(cls):
        if "section" in f.metadata:
            out.update(knobs(f.metadata["section"], f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = f.metadata["knob"]
    return out


def knob(path: str) -> Knob:
    """Return the `Knob` of one key path, e.g. ``knob("heuristics.slow.threshold_s")``."""
    return knobs()[path]


def _order(cls: type) -> Callable[[Problem], tuple[int, int, str]]:
    """Sort problems in field order; an unknown key goes after the known keys of its table."""
    paths = list(knobs(cls))

    def rank(problem: Problem) -> tuple[int, int, str]:
        path = str(problem.column)
        if path in paths:
            return paths.index(path), 0, path
        inside = [n for n, p in enumerate(paths) if p.startswith(path + ".")]
        if inside:  # a whole section
            return inside[0], 0, path
        parent = path.rpartition(".")[0]
        siblings = [n for n, p in enumerate(paths) if parent and p.startswith(parent + ".")]
        return (siblings[-1] if siblings else len(paths)), 1, path

    return rank


def _instance_problems(obj: Any, prefix: str) -> list[Problem]:
    problems = []
    for f in fields(obj):
        value, path = getattr(obj, f.name), f"{prefix}{f.name}"
        if "section" in f.metadata:
            if not isinstance(value, f.metadata["section"]):
                problems.append(_problem(path, f"must be a table of settings, not {value!r}"))
            else:
                problems += _instance_problems(value, f"{path}.")
            continue
        message = f.metadata["knob"].problem(value)
        if message:
            problems.append(_problem(path, message))
    return problems


def _normalise(obj: Any) -> None:
    # Frozen dataclasses: the stored form is set once, right after validation.
    for f in fields(obj):
        value = getattr(obj, f.name)
        if "section" in f.metadata:
            _normalise(value)
        else:
            object.__setattr__(obj, f.name, f.metadata["knob"].normalise(value))


def _merged(cls: type, base: Any, data: Mapping[str, Any], prefix: str,
            problems: list[Problem]) -> dict[str, Any]:
    """Return the constructor arguments of ``cls``: ``base``'s values updated from ``data``."""
    names = {f.name: f for f in fields(cls)}
    for key in data:
        if key not in names:
            problems.append(_problem(f"{prefix}{key}", f"unknown key {key!r}"))
    out = {}
    for name, f in names.items():
        current = getattr(base, name)
        if name not in data:
            out[name] = current
            continue
        value = data[name]
        if "section" in f.metadata:
            section = f.metadata["section"]
            if isinstance(value, section):
                value = _as_dict(value)
            if not isinstance(value, Mapping):
                problems.append(_problem(f"{prefix}{name}", f"must be a table of settings, not {value!r}"))
                out[name] = current
                continue
            out[name] = section(**_merged(section, current, value, f"{prefix}{name}.", problems))
        else:
            out[name] = value
    return out


def _as_dict(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if is_dataclass(value):
            value = _as_dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out
