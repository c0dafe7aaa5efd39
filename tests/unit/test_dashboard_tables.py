"""The dashboard's reshaping of the results document (pure) and its number formatting."""

from hypothesis import given
from hypothesis import strategies as st

from analysis import dashboard as tables
from analysis.templatetags.dashboard import scale_value, seconds, signed_pct, stat


def alpha(scale, items, level, without, value, ci=(0.1, 0.9), n=10, reason=None):
    record = {"scale": scale, "items": items, "level": level, "without": without, "value": value,
              "n_items": n, "ci95": list(ci) if ci else None}
    if reason:
        record["reason"] = reason
    return record


def test_alpha_tables_put_all_before_simple_and_with_before_without_outliers():
    doc = {"scales": [{"name": "raw"}, {"name": "binary"}], "alpha": [
        alpha("raw", "simple", "nominal", ["A3"], 0.5),
        alpha("raw", "all", "nominal", [], 0.61, (0.5, 0.7), 12),
        alpha("raw", "all", "ratio", [], None, None, 0, "ratio alpha is undefined"),
        alpha("raw", "simple", "nominal", [], 0.4),
        alpha("raw", "all", "nominal", ["A3"], 0.7),
        alpha("binary", "all", "interval", [], 0.2),
    ]}
    raw, binary = tables.alpha_tables(doc)
    assert raw.scale == "raw" and binary.scale == "binary"
    assert [(r.items, r.without) for r in raw.rows] == [
        ("all", []), ("all", ["A3"]), ("simple", []), ("simple", ["A3"])]
    nominal, ordinal, interval, ratio = raw.rows[0].cells
    assert (nominal.value, nominal.low, nominal.high, nominal.n_items) == (0.61, 0.5, 0.7, 12)
    assert ordinal is None and interval is None
    assert ratio.value is None and ratio.reason == "ratio alpha is undefined"
    assert [c.value if c else None for c in binary.rows[0].cells] == [None, None, 0.2, None]


def test_trust_table_sorts_by_coefficient_and_marks_outliers():
    doc = {"trust": [{"scale": "raw", "items": "all", "level": "ordinal", "variant": "paper",
                      "method": "exact", "n_subsets": 4083,
                      "coefficients": {"A1": 0.9, "A2": None, "A3": 0.31, "A4": 1.0},
                      "outliers": ["A3"]}]}
    table = tables.trust_table(doc, scale="raw")
    assert [(a, out) for a, _, out in table.rows] == [
        ("A4", False), ("A1", False), ("A3", True), ("A2", False)]
    assert table.by_name["A3"] == 0.31 and table.outliers == ["A3"]
    assert tables.trust_table(doc, scale="raw", items="simple") is None


def test_trust_table_shows_a_sampled_coefficient_with_its_monte_carlo_error():
    doc = {"settings": {"trust_budget_s": 60.0},
           "trust": [{"scale": "raw", "items": "all", "level": "ordinal", "variant": "paper",
                      "method": "sampled", "n_subsets": 3000, "samples_wanted": 20000,
                      "coefficients": {"A1": 1.0, "A2": 0.8234, "A3": None, "A4": -0.00001},
                      "mc_error": {"A1": 0.0, "A2": 0.0123, "A3": None, "A4": 0.002},
                      "outliers": ["A4"]}]}
    table = tables.trust_table(doc, scale="raw")
    assert table.shown == {"A1": "1.000 ± 0.000", "A2": "0.823 ± 0.012", "A3": "—",
                           "A4": "0.000 ± 0.002"}
    assert table.reduced and table.budget_s == 60.0
    exact = {"trust": [{**doc["trust"][0], "method": "exact", "n_subsets": 11, "mc_error": None}]}
    exact["trust"][0].pop("samples_wanted")
    table = tables.trust_table(exact, scale="raw")
    assert table.shown["A2"] == "0.823" and not table.reduced


def test_correlation_table_starts_with_the_baseline_and_orders_combinations():
    def rec(rules, metric, pearson):
        return {"rules": rules, "removed": ["A1"] if rules else [], "metric": metric,
                "pearson": pearson, "spearman": pearson, "pearson_change": 0.0,
                "spearman_change": 0.0, "n_items": 5}

    doc = {"correlations": [rec(["slow", "disagreeable"], "bleu", 0.3), rec(["slow"], "chrf", 0.2),
                            rec([], "chrf", 0.1), rec([], "bleu", 0.15), rec(["slow"], "bleu", 0.25)]}
    table = tables.correlation_table(doc)
    assert table.metrics == ["bleu", "chrf"]
    assert [row["rules"] for row in table.rows] == [[], ["slow"], ["slow", "disagreeable"]]
    assert [c["pearson"] if c else None for c in table.rows[2]["ordered"]] == [0.3, None]


def test_largest_gaps_rank_by_absolute_gap_and_skip_nulls():
    gaps = [{"item": f"i{n}", "scale": "raw", "aggregate": "mean", "metric": "m",
             "human": 0.5, "metric_value": 0.5 + g if g is not None else None, "gap": g}
            for n, g in enumerate([0.1, -0.6, None, 0.3, -0.05])]
    doc = {"item_gaps": gaps}
    assert [g["item"] for g in tables.largest_gaps(doc, scale="raw", limit=3)] == ["i1", "i3", "i0"]
    assert tables.largest_gaps(doc, scale="other") == []


def test_flag_rows_follow_the_annotator_order_and_count_flags():
    doc = {"annotators": ["A1", "A2"], "heuristics": [
        {"rule": "slow", "annotator": "A2", "value": 400.0, "threshold": 300.0, "flagged": True},
        {"rule": "low_variance", "annotator": "A1", "value": 0.1, "threshold": 0.5, "flagged": True},
        {"rule": "low_variance", "annotator": "A2", "value": 0.9, "threshold": 0.5, "flagged": False},
    ], "styles": [{"annotator": "A1", "style": "radical"}]}
    rules, rows = tables.flag_rows(doc)
    assert rules == ["slow", "low_variance"]
    assert [(r.annotator, r.n_flags, r.style) for r in rows] == [("A1", 1, "radical"), ("A2", 1, "")]
    assert rows[0].cells[0] is None and rows[1].cells[0]["value"] == 400.0


def test_timing_rows_separate_the_pooled_record_and_sort_annotators_numerically():
    doc = {"timing": [{"annotator": "A10"}, {"annotator": "all"}, {"annotator": "A2"}]}
    pooled, rows = tables.timing_rows(doc)
    assert pooled == {"annotator": "all"} and [r["annotator"] for r in rows] == ["A2", "A10"]


def test_number_formatting():
    assert stat(None) == "—" and stat(0.71234) == "0.712" and stat(-0.0001) == "0.000"
    assert stat(-0.25, 2) == "-0.25" and stat(7) == "7"
    assert signed_pct(0.125) == "+12.5 %" and signed_pct(-0.5) == "-50.0 %" and signed_pct(None) == "—"
    assert seconds(12.34) == "12.3 s" and seconds(600) == "10.0 min" and seconds(None) == "—"
    assert scale_value(5.0) == "5" and scale_value(0.5) == "0.5" and scale_value(None) == "—"
    assert scale_value(-1.0) == "-1" and scale_value(2.25) == "2.25" and scale_value(2.001) == "2"


@given(st.dictionaries(st.sampled_from(["alpha", "trust", "correlations", "item_gaps", "heuristics",
                                        "timing", "noise", "error_weights", "duplicates"]),
                       st.just([])))
def test_empty_sections_give_empty_tables(doc):
    doc = {"scales": [{"name": "raw"}], "annotators": [], **doc}
    assert tables.alpha_tables(doc)[0].rows == []
    assert tables.trust_table(doc, scale="raw") is None
    assert tables.correlation_table(doc).rows == []
    assert tables.largest_gaps(doc, scale="raw") == []
    assert tables.flag_rows(doc) == ([], [])
    assert tables.timing_rows(doc) == (None, [])


def test_a_page_of_some_annotators_keeps_their_records_and_the_pooled_ones():
    from analysis.dashboard import shown_annotators, with_annotators

    doc = {"annotators": ["A1", "A2", "A3", "A4"],
           "heuristics": [{"annotator": a, "rule": "slow", "flagged": a == "A4"}
                          for a in ("A1", "A2", "A3", "A4")],
           "timing": [{"annotator": "all"}, {"annotator": "A1"}, {"annotator": "A3"}],
           "trust": [{"coefficients": {"A1": 1.0, "A2": 0.4, "A4": 0.2}, "outliers": ["A2"]}],
           "error_weights": [{"target": "annotator:A2"}, {"target": "annotator:A3"},
                             {"target": "human:mean"}],
           "alpha": [{"scale": "raw", "value": 0.5}]}
    keep = shown_annotators(doc, limit=2)
    assert keep == ["A2", "A4"]  # the flagged (a rule, a trust outlier) first
    assert shown_annotators(doc, limit=4) is None and shown_annotators(doc, limit=None) is None
    view = with_annotators(doc, keep)
    assert view["annotators"] == ["A2", "A4"]
    assert [h["annotator"] for h in view["heuristics"]] == ["A2", "A4"]
    assert view["timing"] == [{"annotator": "all"}]
    assert view["trust"] == [{"coefficients": {"A2": 0.4, "A4": 0.2}, "outliers": ["A2"]}]
    assert view["error_weights"] == [{"target": "annotator:A2"}, {"target": "human:mean"}]
    assert view["alpha"] == doc["alpha"] and doc["annotators"] == ["A1", "A2", "A3", "A4"]
