"""A results build in section groups (what a fanned-out run's tasks compute, one group each from
bytes a shared database holds) is the build of one process, value for value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.results import (
    ItemRecords,
    assemble,
    build_results_split,
    document_head,
    group_part,
    prepare_questions,
    section_groups,
    study_rows,
)
from core.results.build import mean_ratings
from core.results.groups import (
    critical_path,
    judgments_bytes,
    judgments_from_bytes,
    part_bytes,
    part_from_bytes,
    question_bytes,
    question_from_bytes,
    rows_bytes,
    rows_from_bytes,
)
from core.results.systems import SYSTEM_SECTIONS
from core.settings import AnalysisSettings
from tests.unit.test_results_comparisons import judged
from tests.unit.test_results_questions import questions as two_questions
from tests.unit.test_results_systems import planted

STUDY = {"slug": "s", "title": "S", "run": 7, "code_version": "x"}
CHECKS = [{"annotator": "A1", "answered": 2, "failed": 1, "stopped": False}]


def in_groups(questions, settings, comparisons=()):
    """The build as a fanned-out run makes it: the plan stores bytes, each group is computed
    from the bytes alone (through bytes again), the parts are assembled."""
    s = AnalysisSettings.coerce(settings)
    prepared = prepare_questions(questions, settings=s)
    head, records = document_head(prepared, s, STUDY, CHECKS)
    head = json.loads(json.dumps(head))  # the plan stores it as JSON
    stored = {q.key: question_bytes(q, p) for q, p in zip(questions, prepared, strict=True)}
    rows = rows_bytes(study_rows(prepared), CHECKS)
    judgments = [j.without_annotators(s.excluded_annotators) for j in comparisons]
    shared = judgments_bytes(judgments, mean_ratings(prepared)) if judgments else None
    parts = []
    for group in section_groups(questions, comparisons=bool(judgments)):
        q = question_from_bytes(stored[group.question or questions[0].key])
        study_rows_, checks = rows_from_bytes(rows)
        judged_, means = judgments_from_bytes(shared) if group.family == "comparisons" else ([], None)
        part = group_part(group, q, s, head["settings"], rows=study_rows_, checks=checks,
                          primary=q.key == questions[0].key, judged=judged_, mean_ratings=means)
        parts.append(part_from_bytes(part_bytes(part)))
    fresh = ItemRecords(records.item_ids, records.questions, records.simple)
    return assemble(head, parts, fresh)


def same(questions, settings, comparisons=()):
    expected, expected_records = build_results_split(questions, settings=settings, study=STUDY,
                                                     checks=CHECKS, comparisons=comparisons)
    document, records = in_groups(questions, settings, comparisons)
    assert document == expected
    # Types too (an int is not a float), as the stored JSON would show them.
    assert json.dumps(document, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert list(records.gap_rows()) == list(expected_records.gap_rows())
    assert list(records.label_rows()) == list(expected_records.label_rows())
    assert list(records.item_rows()) == list(expected_records.item_rows())
    return document


def test_two_questions_with_a_reduction_and_exclusions_give_the_same_document():
    doc = same(two_questions(), {"bootstrap_samples": 20, "excluded_annotators": ["A5"]})
    assert doc["alpha"] and doc["correlations"] and doc["competence"]
    assert doc["counts"]["excluded_annotators"] == 1


def test_systems_give_the_same_document():
    doc = same(planted(), {"bootstrap_samples": 20, "systems_bootstrap": 50,
                           "systems_permutations": 200})
    assert all(doc[section] for section in SYSTEM_SECTIONS)


def test_comparisons_give_the_same_document():
    doc = same(planted(), {"bootstrap_samples": 20, "systems_bootstrap": 50,
                           "systems_permutations": 200, "comparisons_bootstrap": 50},
               comparisons=[judged("bws")])
    assert doc["comparison_questions"][0]["kind"] == "bws"


def test_the_groups_name_every_family_in_document_order():
    names = [g.name for g in section_groups(two_questions())]
    assert names[0] == "study" and names[-1] == "filtering:relevance"
    assert names[1:6] == ["agreement:coherence:raw", "competence:coherence:raw:dawid_skene",
                          "competence:coherence:raw:mace", "spread:coherence:raw",
                          "systems:coherence:raw"]
    assert "agreement:relevance:reduced" in names and len(names) == 1 + 3 * 5 + 2


def test_a_group_part_changes_only_what_it_sets_in_the_settings():
    questions = two_questions()
    s = AnalysisSettings.coerce({"bootstrap_samples": 20})
    prepared = prepare_questions(questions, settings=s)
    head, _ = document_head(prepared, s, STUDY, ())
    groups = section_groups(questions)
    rows = study_rows(prepared)
    agreement = group_part(groups[1], prepared[0], s, head["settings"])
    assert agreement.settings == {} and agreement.sections["alpha"]
    filtering = group_part(groups[-2], prepared[0], s, head["settings"], rows=rows, primary=True)
    assert "correlations" in filtering.settings and filtering.entry
    other = group_part(groups[-1], prepared[1], s, head["settings"], rows=rows, primary=False)
    assert other.settings == {} and other.entry
    with pytest.raises(ValueError, match="rows"):
        group_part(groups[-1], prepared[1], s, head["settings"])


def test_bytes_hold_no_python_objects_and_keep_dtypes():
    q = two_questions()[0]
    prepared = prepare_questions([q], settings={})[0]
    back = question_from_bytes(question_bytes(q, prepared))
    for name in ("item", "annotator", "value", "duration_ms", "dup_first", "control"):
        a, b = getattr(prepared.data, name), getattr(back.data, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    assert back.data.annotators == prepared.data.annotators
    assert [v.name for v in back.views] == [v.name for v in prepared.views]
    assert np.array_equal(back.simple_rows, prepared.simple_rows)


def test_the_critical_path_is_the_longest_chain():
    tasks = {"plan": (2.0, []), "a": (5.0, ["plan"]), "b": (3.0, ["plan"]),
             "assemble": (1.0, ["a", "b"])}
    assert critical_path(tasks) == (8.0, ["plan", "a", "assemble"])
    assert critical_path({}) == (0.0, [])
    with pytest.raises(ValueError, match="cycle"):
        critical_path({"a": (1.0, ["b"]), "b": (1.0, ["a"])})
