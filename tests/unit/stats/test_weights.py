"""Error-type weights by OLS on z-scored features (Borovikova et al. 2022, tables 3–4).

statsmodels is the oracle here only: core/stats never imports it.
"""

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats.gaps import human_aggregate
from core.stats.scales import PRESETS, rescale01
from core.stats.weights import error_weights, fit_weights

nan = np.nan
RAW = PRESETS["likert-0-7-coref"]["values"]
NAMES = ["border", "type", "noise", "silence", "irrelevant", "absence"]


def zscore(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def random_study(seed, n_items=40, n_features=6):
    rng = np.random.default_rng(seed)
    x = rng.poisson(1.0, (n_items, n_features)).astype(float)
    y = np.clip(1 - x @ rng.uniform(0.02, 0.15, n_features) + rng.normal(0, 0.05, n_items), 0, 1)
    return x, y


def test_it_reproduces_the_docstring_example():
    w = fit_weights([1.0, 0.8, 0.6, 0.4], [[0], [1], [2], [3]], feature_names=["border"], target="t")
    assert w.coefficients["border"] == pytest.approx(-0.2 * np.std([0, 1, 2, 3]))
    assert w.intercept == pytest.approx(0.7)
    assert w.r2 == pytest.approx(1.0)
    assert w.n_items == 4 and w.reason is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_matches_statsmodels_ols_on_z_scored_features(seed):
    x, y = random_study(seed)
    w = fit_weights(y, x, feature_names=NAMES, target="human:mean")
    fit = sm.OLS(y, sm.add_constant(zscore(x))).fit()
    assert [w.intercept, *(w.coefficients[n] for n in NAMES)] == pytest.approx(fit.params, abs=1e-10)
    assert w.r2 == pytest.approx(fit.rsquared, abs=1e-10)


def test_it_matches_numpy_lstsq():
    x, y = random_study(3)
    beta = np.linalg.lstsq(np.column_stack([np.ones(len(y)), zscore(x)]), y, rcond=None)[0]
    w = fit_weights(y, x, feature_names=NAMES, target="t")
    assert [w.coefficients[n] for n in NAMES] == pytest.approx(beta[1:], abs=1e-12)


def test_it_drops_a_constant_feature():
    x, y = random_study(4)
    x[:, 2] = 1.0
    w = fit_weights(y, x, feature_names=NAMES, target="t")
    assert w.coefficients["noise"] is None and w.dropped == ("noise",)
    kept = [n for n in NAMES if n != "noise"]
    fit = sm.OLS(y, sm.add_constant(zscore(np.delete(x, 2, axis=1)))).fit()
    assert [w.coefficients[n] for n in kept] == pytest.approx(fit.params[1:], abs=1e-10)


def test_it_returns_none_with_too_few_items():
    x, y = random_study(5, n_items=7)  # 6 features + intercept = 7 parameters
    w = fit_weights(y, x, feature_names=NAMES, target="t")
    assert all(v is None for v in w.coefficients.values()) and w.r2 is None
    assert w.n_items == 7 and "too few items" in w.reason
    assert fit_weights(y[:3], x[:3, :1], feature_names=["border"], target="t").r2 is not None


def test_it_leaves_out_rows_with_a_missing_target_or_feature():
    x, y = random_study(6)
    y[0] = nan
    x[1, 3] = nan
    w = fit_weights(y, x, feature_names=NAMES, target="t")
    fit = sm.OLS(y[2:], sm.add_constant(zscore(x[2:]))).fit()
    assert w.n_items == 38
    assert [w.coefficients[n] for n in NAMES] == pytest.approx(fit.params[1:], abs=1e-10)


@pytest.mark.filterwarnings("ignore:The design matrix is rank-deficient")
def test_it_gives_minimum_norm_coefficients_for_collinear_features_like_statsmodels():
    x, y = random_study(7)
    x[:, 1] = 2 * x[:, 0]  # perfectly collinear after z-scoring
    w = fit_weights(y, x, feature_names=NAMES, target="t")
    fit = sm.OLS(y, sm.add_constant(zscore(x))).fit()  # pinv: the minimum-norm solution
    assert w.rank_deficient and "collinear" in w.reason
    assert [w.coefficients[n] for n in NAMES] == pytest.approx(fit.params[1:], abs=1e-8)
    assert w.coefficients["border"] == pytest.approx(w.coefficients["type"])


def test_it_returns_no_r2_for_a_constant_target():
    x, _ = random_study(8)
    w = fit_weights(np.full(40, 0.5), x, feature_names=NAMES, target="t")
    assert w.r2 is None and "constant target" in w.reason
    # Exactly the least-squares solution, not lstsq's rounding noise around it (which differs
    # with the CPU's BLAS kernels): every slope 0, the intercept the constant.
    assert all(v == 0.0 for v in w.coefficients.values())
    assert w.intercept == 0.5
    y = np.full(40, 2 / 7)  # a value no float sum reproduces exactly
    w = fit_weights(y, x * 1e3 + 0.1, feature_names=NAMES, target="t")
    assert all(v == 0.0 for v in w.coefficients.values()) and w.intercept == 2 / 7


def test_it_fits_one_model_per_annotator_aggregate_and_metric():
    x, _ = random_study(9, n_items=30)
    rng = np.random.default_rng(9)
    dense = rng.integers(0, 8, (3, 30)).astype(float)
    dense[0, :5] = nan  # annotator A1 skipped five items
    metric = rng.uniform(0, 1, 30)
    models = error_weights(
        dense, features=x, feature_names=NAMES, domain=RAW, scale="raw", metrics={"MUC_F1": metric}
    )
    assert [m.target for m in models] == [
        "annotator:A1", "annotator:A2", "annotator:A3", "human:mean", "human:mode", "metric:MUC_F1",
    ]  # fmt: skip
    a1 = fit_weights(rescale01(dense[0, 5:], RAW), x[5:], feature_names=NAMES, target="annotator:A1")
    assert models[0] == a1 and models[0].n_items == 25
    mean = fit_weights(
        rescale01(human_aggregate(dense, aggregate="mean"), RAW), x, feature_names=NAMES, target="human:mean"
    )
    assert models[3] == mean
    assert models[5] == fit_weights(metric, x, feature_names=NAMES, target="metric:MUC_F1")


def test_it_z_scores_over_the_items_of_each_model():
    x, y = random_study(10)
    sub = fit_weights(y[:20], x[:20], feature_names=NAMES, target="t")
    fit = sm.OLS(y[:20], sm.add_constant(zscore(x[:20]))).fit()
    assert [sub.coefficients[n] for n in NAMES] == pytest.approx(fit.params[1:], abs=1e-10)


def test_it_names_annotators_as_told():
    x, _ = random_study(11, n_items=10, n_features=1)
    dense = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 7, 7.0]])
    models = error_weights(
        dense, features=x, feature_names=["border"], domain=RAW, aggregates=(), annotator_names=["A7"]
    )
    assert [m.target for m in models] == ["annotator:A7"]


def test_it_returns_the_record_shape_of_product_md():
    x, y = random_study(12)
    rec = fit_weights(y, x, feature_names=NAMES, target="human:mean", scale="gravity").to_record()
    assert list(rec) == ["target", "scale", "coefficients", "r2", "n_items"]
    assert list(rec["coefficients"]) == NAMES and rec["scale"] == "gravity"


def test_it_rejects_mismatched_feature_names():
    with pytest.raises(ValueError, match="feature names"):
        fit_weights([1.0, 2.0], [[1.0], [2.0]], feature_names=["a", "b"], target="t")


def test_it_rejects_a_target_of_the_wrong_length():
    with pytest.raises(ValueError, match="one value per feature row"):
        fit_weights([1.0], [[1.0], [2.0]], feature_names=["a"], target="t")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_it_is_unchanged_by_permuting_items(seed, rnd):
    x, y = random_study(seed, n_items=25)
    order = list(range(25))
    rnd.shuffle(order)
    a = fit_weights(y, x, feature_names=NAMES, target="t")
    b = fit_weights(y[order], x[order], feature_names=NAMES, target="t")
    for n in NAMES:
        u, v = a.coefficients[n], b.coefficients[n]
        assert (u is None and v is None) or u == pytest.approx(v, abs=1e-9)
    assert (a.r2 is None and b.r2 is None) or a.r2 == pytest.approx(b.r2, abs=1e-9)
