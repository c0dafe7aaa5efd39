"""Scales, reductions and presets (Borovikova et al. 2022, §3.3 and §4; Solomon et al. 2021)."""

import numpy as np
import pytest

from core.stats.scales import (
    LEVELS,
    PRESETS,
    Scale,
    reduce_values,
    reduced_scale,
    rescale01,
)

LIKERT = PRESETS["likert-0-7-coref"]


def test_it_lists_the_four_levels_of_measurement():
    assert LEVELS == ("nominal", "ordinal", "interval", "ratio")


def test_it_defines_the_coref_likert_reduced_mapping_of_borovikova_2022():
    # Borovikova et al. 2022, §4: 0 -> 0, 1 and 2 -> 1, 3 and 4 -> 2, 5 and 6 -> 3, 7 -> 4.
    assert LIKERT["reductions"]["reduced"] == {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4}


def test_it_maps_gravity_by_significance_of_the_worst_error():
    # 0-2 significant errors, 3-6 insignificant errors, 7 none (Borovikova et al. 2022, §3.3).
    gravity = LIKERT["reductions"]["gravity"]
    assert [gravity[v] for v in range(8)] == [0, 0, 0, 1, 1, 1, 1, 2]


def test_it_maps_importance_by_kind_of_element():
    # 0, 3, 4 are errors on key elements; 1, 2, 5, 6 on peripheral ones; 7 has none.
    importance = LIKERT["reductions"]["importance"]
    assert [importance[v] for v in range(8)] == [0, 1, 1, 0, 0, 1, 1, 2]


def test_it_labels_every_likert_value_with_the_rubric():
    assert sorted(LIKERT["labels"]) == LIKERT["values"] == list(range(8))
    assert LIKERT["labels"][0] == "significant errors on key elements"
    assert LIKERT["labels"][7] == "no errors"


def test_it_defines_the_similarity_reduction_of_solomon_2021():
    similarity = PRESETS["similarity-1-5"]
    assert similarity["values"] == [1, 2, 3, 4, 5]
    assert similarity["reductions"]["reduced"] == {1: -1, 2: -1, 3: 0, 4: 1, 5: 1}
    assert similarity["labels"][1] == "dissimilar"
    assert similarity["labels"][5] == "identical"


def test_it_maps_every_preset_value_in_every_reduction():
    for spec in PRESETS.values():
        for mapping in spec["reductions"].values():
            assert set(mapping) == set(spec["values"])


def test_it_reduces_values_and_keeps_blanks():
    out = reduce_values(np.array([[0, 2, np.nan], [7, 5, 3]]), LIKERT["reductions"]["reduced"])
    np.testing.assert_array_equal(out, [[0, 1, np.nan], [4, 3, 2]])


def test_it_names_a_value_missing_from_the_mapping():
    with pytest.raises(ValueError, match="8"):
        reduce_values(np.array([1.0, 8.0]), LIKERT["reductions"]["reduced"])


def test_it_builds_the_reduced_scale_domain_from_sorted_distinct_codes():
    raw = Scale("raw", (1, 2, 3, 4, 5))
    scale = reduced_scale(raw, "reduced", {5: 1, 4: 1, 3: 0, 2: -1, 1: -1})
    assert scale == Scale("reduced", (-1.0, 0.0, 1.0))


def test_it_refuses_a_reduction_that_leaves_a_raw_value_unmapped():
    with pytest.raises(ValueError, match="does not map value 7"):
        reduced_scale(Scale("raw", tuple(range(8))), "bad", {v: 0 for v in range(7)})


def test_it_builds_preset_scales():
    assert Scale.from_preset("likert-0-7-coref").domain == tuple(float(v) for v in range(8))
    assert Scale.from_preset("likert-0-7-coref", "gravity").domain == (0.0, 1.0, 2.0)
    assert Scale.from_preset("similarity-1-5", "reduced").domain == (-1.0, 0.0, 1.0)


def test_it_rejects_a_domain_listing_a_value_twice():
    with pytest.raises(ValueError, match="twice"):
        Scale("raw", (1, 2, 2))


def test_it_rescales_to_the_unit_interval_by_the_domain_extremes():
    out = rescale01(np.array([0, 3.5, 7, np.nan]), range(8))
    np.testing.assert_allclose(out, [0, 0.5, 1, np.nan])


def test_it_rescales_a_reduction_with_negative_codes():
    np.testing.assert_allclose(rescale01(np.array([-1, 0, 1]), (-1, 0, 1)), [0, 0.5, 1])


def test_it_refuses_to_rescale_on_a_single_value_domain():
    with pytest.raises(ValueError, match="single value"):
        rescale01(np.array([1.0]), (1,))
