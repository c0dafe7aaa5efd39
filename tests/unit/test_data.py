"""StudyData without some annotators: their answers go, everyone keeps their pseudonym."""

import numpy as np
import pytest

from core.data import StudyData
from tests.arrays import dense_of


def data() -> StudyData:
    # A1 rates items 0 and 1, A2 item 0, A3 items 1 and 2 (and repeats item 1).
    return StudyData(
        annotators=["A1", "A2", "A3"], item_ids=["i0", "i1", "i2"],
        item=np.array([0, 1, 0, 1, 2]), annotator=np.array([0, 0, 1, 2, 2]),
        value=np.array([1.0, 2.0, 3.0, 4.0, np.nan]),
        duration_ms=np.array([10.0, 20.0, 30.0, 40.0, 50.0]),
        dup_item=np.array([1]), dup_annotator=np.array([2]), dup_first=np.array([4.0]),
        dup_repeat=np.array([5.0]), control=np.zeros(3, bool), metrics={}, features={},
        sentiment_a=None, sentiment_b=None, sentiment_source="imported",
    )


def test_it_drops_the_answers_of_the_excluded_and_keeps_every_pseudonym():
    kept = data().without_annotators(["A2"])
    assert kept.annotators == ["A1", "A3"] and kept.item_ids == ["i0", "i1", "i2"]
    assert kept.annotator.tolist() == [0, 0, 1, 1] and kept.item.tolist() == [0, 1, 1, 2]
    assert kept.duration_ms.tolist() == [10.0, 20.0, 40.0, 50.0]
    assert kept.dup_annotator.tolist() == [1] and kept.dup_repeat.tolist() == [5.0]
    expected = np.delete(dense_of(data()), 1, axis=0)
    assert np.array_equal(dense_of(kept), expected, equal_nan=True)


def test_it_drops_duplicate_pairs_with_their_annotator():
    kept = data().without_annotators(["A3", "A1"])
    assert kept.annotators == ["A2"] and kept.value.tolist() == [3.0]
    assert kept.dup_item.size == kept.dup_annotator.size == kept.dup_first.size == 0


def test_nobody_excluded_is_the_same_data():
    original = data()
    assert original.without_annotators([]) is original


def test_an_unknown_pseudonym_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"excluded_annotators: A4 is not an annotator .*A1–A3"):
        data().without_annotators(["A4", "A1"])


def test_item_columns_read_in_chunks_join_into_those_of_all_the_items_at_once():
    from core.data import concat_item_columns, item_columns

    ids = [f"i{n}" for n in range(7)]
    control = [n % 3 == 0 for n in range(7)]
    metrics = [{"bleu": 0.1 * n} if n < 4 else {"chrf": "0.5", "bleu": "n/a"} for n in range(7)]
    features = [{} if n % 2 else {"errors": n} for n in range(7)]
    meta = [{"sentiment_a": 0.1, "sentiment_b": -0.2}] * 7
    texts = ["a b", "c", "", "d e f", "g", "h i", "j"]
    whole = item_columns(ids, control, metrics, features, meta, texts=texts)
    parts = [item_columns(ids[a:b], control[a:b], metrics[a:b], features[a:b], meta[a:b],
                          texts=texts[a:b]) for a, b in ((0, 3), (3, 4), (4, 7))]
    joined = concat_item_columns(parts)
    assert joined.ids == whole.ids and joined.meta == whole.meta
    assert np.array_equal(joined.control, whole.control)
    assert np.array_equal(joined.words, whole.words)
    for table in ("metrics", "features"):
        assert sorted(getattr(joined, table)) == sorted(getattr(whole, table))
        for name, values in getattr(whole, table).items():
            np.testing.assert_array_equal(getattr(joined, table)[name], values)
    assert concat_item_columns([]).ids == []


def test_it_keeps_a_third_presentation_out_of_the_answers_and_the_pairs():
    from core.data import item_columns, study_data_from_answers

    items = item_columns(["i0", "i1"], [False, False], [{}, {}], [{}, {}], [{}, {}])
    # Participant 7 is shown i0 three times (7, 5, 1), i1 once; participant 8 i0 twice.
    built = study_data_from_answers(
        items, participant=[7, 7, 7, 7, 8, 8], item=[0, 0, 1, 0, 0, 0],
        presentation=[1, 2, 1, 3, 1, 2], value=[7.0, 5.0, 2.0, 1.0, 3.0, 3.0],
        active_ms=[1.0] * 6)
    assert built.item.tolist() == [0, 1, 0] and built.value.tolist() == [7.0, 2.0, 3.0]
    assert built.dup_annotator.tolist() == [0, 1]
    assert built.dup_first.tolist() == [7.0, 3.0] and built.dup_repeat.tolist() == [5.0, 3.0]
    assert built.later_annotator.tolist() == [0]
    assert built.without_annotators(["A2"]).later_annotator.tolist() == [0]
    assert built.without_annotators(["A1"]).later_annotator.size == 0
