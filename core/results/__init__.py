"""Build the results document `concord.results/3` from a study's arrays (no ORM here).

`build_results_split` returns the document a run stores, whose size does not grow with the
number of items, and the run's `ItemRecords` (items, simple items, per-item gaps and labels),
which a run stores in tables of its own; `build_results` returns the two put together, the full
document (docs/results.md, "Items stored apart").

Every analysis (docs/results.md) runs per question of the study, on its raw scale and on each of
its reductions, with the run's `AnalysisSettings`; each record names its ``question`` (null for
the two study-wide ones: active time per annotator, and the *slow* rule, since time is measured
per item, not per question).  The whole settings object, and what each heuristic applied, is
recorded in `settings`; numbers that cannot be computed are null with a `reason`.  The first
question (the *primary* one) also fills the top-level fields a one-question document had
(``simple_items``, ``counts.answers``, the derived settings), so a one-question study's document
is the `concord.results/1` one with ``question`` added to its records (docs/results.md).

The package: `build` runs the analyses and assembles the document, `scales` the sections of one
question's scale, `records` the item records a run stores apart and the section clock, `view`
reads a document for one question, `comparisons` the sections of the comparative questions
(pairwise, ranking, best–worst), `groups` a build in section groups as bytes (what the tasks of
a fanned-out run store: `section_groups` lists a build's groups, `group_part` computes one on
its own, `assemble` puts their parts together into the document `build_results_split` gives).
"""

from core.results.build import (
    QUALITY_SECTIONS,
    RECORD_SECTIONS,
    SCHEMA,
    Progress,
    Settings,
    StudyRows,
    analysed_data,
    assemble,
    build_results,
    build_results_split,
    document_head,
    group_part,
    prepare_questions,
    section_groups,
    study_rows,
    trust_inputs,
)
from core.results.comparisons import (
    COMPARISON_SECTIONS,
    Judgments,
    comparison_records,
    judgments_from_choices,
)
from core.results.records import ITEM_SECTIONS, Group, ItemRecords, Part, SectionClock, expand_gaps
from core.results.scales import (
    GAP_SAMPLE,
    LARGEST_GAPS,
    SAMPLED_AGGREGATE,
    TIMING_QUANTILES,
    ScaleView,
    TrustInput,
    TrustKey,
    gap_summaries,
    scale_views,
)
from core.results.view import SECTIONS, question_keys, question_view

__all__ = [
    "COMPARISON_SECTIONS", "Judgments", "comparison_records", "judgments_from_choices",
    "GAP_SAMPLE", "ITEM_SECTIONS", "LARGEST_GAPS", "QUALITY_SECTIONS", "SAMPLED_AGGREGATE",
    "SCHEMA", "SECTIONS", "TIMING_QUANTILES", "ItemRecords", "Progress", "ScaleView",
    "SectionClock", "Settings", "TrustInput", "TrustKey", "analysed_data", "build_results",
    "build_results_split", "expand_gaps", "gap_summaries", "question_keys", "question_view",
    "scale_views", "trust_inputs",
    "Group", "Part", "RECORD_SECTIONS", "StudyRows", "assemble", "document_head", "group_part",
    "prepare_questions", "section_groups", "study_rows",
]
