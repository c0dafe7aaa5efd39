"""Split-antecedent LEA (Dobrovolskii et al. 2022, §3.1; RuCoCo-2023 evaluate.py), by hand."""

import pytest

from core.metrics.coref import (
    SPLIT_LEA_METRICS,
    child_mentions,
    coref_metrics,
    split_antecedent_lea,
)
from core.metrics.formats import Document, Mention

# Character spans of a made-up text; only identities matter here.
T1, T2, S1, S2, A1, THEY1, THEY2, ALL1 = (Mention(0, 10 * i, 10 * i + 5) for i in range(8))


def rucoco(entities, includes):
    return Document(
        name="d", entities=tuple(tuple(sorted(e)) for e in entities),
        includes=tuple(tuple(i) for i in includes), format="rucoco-json", text="x" * 100,
    )


# Tom (E0), Sid (E1), Ann (E2, a singleton); "they" = Tom and Sid (E3); "all of them" = they
# and Ann (E4): plural anaphors nested two levels deep.
GOLD = rucoco(
    [{T1, T2}, {S1, S2}, {A1}, {THEY1, THEY2}, {ALL1}],
    [[], [], [], [0, 1], [3, 2]],
)
# The system links "they" to Tom only.
SYSTEM = rucoco(
    [{T1, T2}, {S1, S2}, {A1}, {THEY1, THEY2}, {ALL1}],
    [[], [], [], [0], [3, 2]],
)


def test_it_collects_child_mentions_through_two_levels():
    assert child_mentions(GOLD, 3) == {T1, T2, S1, S2}
    assert child_mentions(GOLD, 4) == {THEY1, THEY2, A1, T1, T2, S1, S2}


def test_it_skips_a_non_leaf_grandchild_like_evaluate_py():
    # E5 includes E4; E4's child E3 includes entities, so E3's own mentions are not E5's
    # children (only E4's mentions and the leaves Tom, Sid, Ann are).
    doc = rucoco([*GOLD.entities, {Mention(0, 90, 95)}], [*GOLD.includes, [4]])
    assert child_mentions(doc, 5) == {ALL1, T1, T2, S1, S2, A1}


def test_it_gives_one_on_identical_annotations():
    assert split_antecedent_lea(GOLD, GOLD) == (1.0, 1.0, 1.0)


def test_it_scores_a_missed_split_antecedent():
    # Recall terms (importance × resolution): Tom 2·1, Sid 2·1, they 2·1 (Ann and "all" are
    # singletons: not scored); they→{T1,T2,S1,S2}: 4 · (4 of 8 (mention, child) pairs) = 2;
    # all→{they1,they2,A1,T1,T2,S1,S2}: 7 · 5/7 = 5. R = 13/17.
    # Precision: same identity terms 6; they→{T1,T2}: 2·1; all→5 children, all found: 5 → 13/13.
    r, p, f = split_antecedent_lea(GOLD, SYSTEM)
    assert r == pytest.approx(13 / 17, abs=1e-12)
    assert p == pytest.approx(1.0, abs=1e-12)
    assert f == pytest.approx(13 / 15, abs=1e-12)


def test_it_does_not_score_singletons():
    gold = rucoco([{T1, T2}, {A1}], [[], []])
    system = rucoco([{T1, T2}], [[]])
    assert split_antecedent_lea(gold, system) == (1.0, 1.0, 1.0)


def test_it_gives_zero_when_nothing_is_scorable():
    gold = rucoco([{A1}], [[]])
    assert split_antecedent_lea(gold, gold) == (0.0, 0.0, 0.0)


def test_it_adds_split_lea_to_the_metrics_of_rucoco_items():
    got = coref_metrics(GOLD, SYSTEM)
    assert set(SPLIT_LEA_METRICS) <= set(got)
    assert got["LEA_split_R"] == pytest.approx(13 / 17)


def test_it_scores_rucoco_files_read_from_json():
    import json

    from core.metrics.formats import read_gold_and_system

    text = "At half-past nine, that night, Tom and Sid were sent to bed. They slept, and Sid too.\n"
    gold = {"text": text, "entities": [[[31, 34]], [[39, 42], [77, 80]], [[61, 65]]],
            "includes": [[], [], [0, 1]]}
    system = dict(gold, includes=[[], [], [1]])
    ((g, s),) = read_gold_and_system(json.dumps(gold), json.dumps(system), format="rucoco-json")
    got = coref_metrics(g, s)
    # gold: Sid 2·1 + They→{Tom, Sid, Sid}: 3 · 2/3; system: Sid 2·1 + They→{Sid, Sid}: 2 · 1
    assert got["LEA_split_R"] == pytest.approx((2 + 2) / (2 + 3))
    assert got["LEA_split_P"] == pytest.approx(1.0)
    assert got["LEA_F1"] == pytest.approx(1.0)
