"""Competence models: Dawid and Skene 1979, MACE (Hovy et al. 2013), checked against crowd-kit.

crowd-kit 1.4.2's outputs are frozen in data/crowdkit_1_4_2.json (crowdkit_vectors.py writes
them). Tolerances: crowd-kit's DawidSkene clips the returned posteriors at 1e-10 (its ELBO clips
them in place), so posteriors agree to 1e-10 plus rounding; everything else is the same arithmetic
in another order and agrees to about 1e-15, which the tests bound by 1e-9.
"""

import doctest
import json
from pathlib import Path

import numpy as np
import pytest

import core.stats.competence
from core.stats import _competence_compiled
from core.stats._types import LongRatings
from core.stats.competence import _ByItem, _mace_run, _prepare, dawid_skene, mace
from tests.unit.stats.competence_data import as_long, ds_1979_ratings, planted_crowd

nan = np.nan
VECTORS = json.loads((Path(__file__).with_name("data") / "crowdkit_1_4_2.json").read_text())
PLANTED = VECTORS["planted"]
K = PLANTED["k"]
# Both engines are checked against crowd-kit: numpy (the reference) and the compiled E-steps.
ENGINES = ["numpy", "compiled"] if _competence_compiled.AVAILABLE else ["numpy"]


def planted_ratings():
    return as_long(np.array(PLANTED["rows"]), PLANTED["n_items"], PLANTED["n_annotators"])


def labels(result):
    return [i.label for i in result.items]


def competences(result):
    return [a.competence for a in result.annotators]


# --------------------------------------------------------------------------- against crowd-kit


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("n_iter", [1, 5, 100])
def test_it_matches_crowdkit_dawid_skene_on_a_planted_crowd(n_iter, engine):
    case = VECTORS["cases"][f"ds_planted_{n_iter}"]
    got = dawid_skene(planted_ratings(), domain=range(K), max_iter=n_iter, tol=0.0, smoothing=0.0,
                      engine=engine)
    assert got.iterations == n_iter
    assert labels(got) == [float(v) for v in case["labels"]]
    np.testing.assert_allclose(got.posterior, case["probas"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.class_prior, case["priors"], rtol=0, atol=1e-12)
    errors = np.array(case["errors"])
    seen = errors > 0  # crowd-kit keeps no row for an answer a worker never gave
    np.testing.assert_allclose(got.confusion[seen], errors[seen], rtol=0, atol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("n_iter", [1, 50])
def test_it_matches_crowdkit_mace_from_the_same_start(method, n_iter, engine):
    case = VECTORS["cases"][f"mace_{method}_{n_iter}"]
    rows = _prepare(planted_ratings(), range(K), ())
    fit = _mace_run(
        rows, np.array(case["start_spamming"]), np.array(case["start_strategy"]),
        method=method, max_iter=n_iter, tol=0.0, smoothing=0.01 / K,
        prior_guessing=0.5, prior_knowing=0.5, prior_strategy=10.0,
        grouped=_ByItem.of(rows) if engine == "compiled" else None,
    )
    assert fit.iterations == n_iter
    np.testing.assert_allclose(fit.posterior, case["probas"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.spamming, case["spamming"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(fit.strategy, case["strategy"], rtol=0, atol=1e-9)
    assert list(np.argmax(fit.posterior, axis=1)) == case["labels"]


@pytest.mark.parametrize("engine", ENGINES)
def test_it_matches_crowdkit_on_dawid_and_skene_1979_with_repeated_assessments(engine):
    case = VECTORS["cases"]["ds_1979_100"]
    first, repeats = ds_1979_ratings()
    got = dawid_skene(first, domain=[1, 2, 3, 4], repeats=repeats, engine=engine, max_iter=100,
                      tol=0.0,
                      smoothing=0.0)
    assert labels(got) == [float(v) for v in case["labels"]]
    np.testing.assert_allclose(got.posterior, case["probas"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.class_prior, case["priors"], rtol=0, atol=1e-9)


# --------------------------------------------------------------------------- the 1979 paper


def naive_dawid_skene(counts, n_iter):
    """Transcribe Dawid and Skene 1979, eq. 2.3-2.5, with loops over a dense count tensor.

    ``counts[i, k, a]`` = how often observer k answered a for patient i; start T from the
    proportions of answers (§3), then M-step (2.3, 2.4) and E-step (2.5) ``n_iter`` times.
    """
    n_pat, n_obs, n_cls = counts.shape
    t = counts.sum(axis=1) / counts.sum(axis=(1, 2))[:, None]
    for _ in range(n_iter):
        p = t.sum(axis=0) / n_pat
        pi = np.zeros((n_obs, n_cls, n_cls))
        for k in range(n_obs):
            for j in range(n_cls):
                for a in range(n_cls):
                    pi[k, j, a] = sum(t[i, j] * counts[i, k, a] for i in range(n_pat))
                pi[k, j] /= pi[k, j].sum()
        pi = np.maximum(pi, 1e-10)  # the floor of our implementation (and crowd-kit's)
        pi /= pi.sum(axis=2, keepdims=True)
        new = np.zeros((n_pat, n_cls))
        for i in range(n_pat):
            for j in range(n_cls):
                new[i, j] = np.log(p[j]) + sum(
                    counts[i, k, a] * np.log(pi[k, j, a]) for k in range(n_obs) for a in range(n_cls)
                )
            new[i] = np.exp(new[i] - new[i].max())
            new[i] /= new[i].sum()
        t = new
    return t


def test_it_equals_a_naive_transcription_of_the_papers_equations_on_its_table_1():
    first, repeats = ds_1979_ratings()
    counts = np.zeros((45, 5, 4))
    for part in (first, *repeats):
        np.add.at(counts, (part.item, part.annotator, part.value.astype(int) - 1), 1)
    got = dawid_skene(first, domain=[1, 2, 3, 4], repeats=repeats, max_iter=20, tol=0.0,
                      smoothing=0.0)
    np.testing.assert_allclose(got.posterior, naive_dawid_skene(counts, 20), rtol=0, atol=1e-9)


def test_it_labels_the_unanimous_patients_of_table_1_with_certainty():
    first, repeats = ds_1979_ratings()
    got = dawid_skene(first, domain=[1, 2, 3, 4], repeats=repeats)
    assert got.converged and got.iterations < 100
    # Patients 1, 11 and 45 (1-based): all seven assessments are 1, 4 and 2 respectively.
    for patient, value in ((0, 1.0), (10, 4.0), (44, 2.0)):
        item = got.items[patient]
        assert item.label == value and item.probability > 0.99 and item.n == 7
    assert sum(a.n for a in got.annotators) == 315
    assert got.annotators[0].n == 135  # observer 1, three times 45


# --------------------------------------------------------------------------- planted annotators


def test_it_ranks_the_planted_spammer_and_adversary_lowest_with_both_models():
    ratings = planted_ratings()
    for result in (dawid_skene(ratings, domain=range(K)), mace(ratings, domain=range(K))):
        ranking = result.ranking()
        assert set(ranking[-2:]) == {6, 7}, result.method
        honest = [competences(result)[j] for j in range(6)]
        assert min(honest) > max(competences(result)[6], competences(result)[7])
        assert np.mean(np.array(labels(result)) == np.array(PLANTED["truth"])) >= 0.9


def test_it_gives_the_systematic_adversary_no_competence_but_uses_it_for_the_labels():
    got = dawid_skene(planted_ratings(), domain=range(K))
    adversary = got.confusion[7]
    # Its answers are the mirror of the truth: Dawid-Skene learns the permutation.
    assert all(adversary[t, K - 1 - t] > 0.8 for t in range(K))
    assert got.annotators[7].competence < 0.25  # only the middle value is its own mirror


def random_clicker_study(seed):
    """The issue's case: 39 items on 0-7, 12 honest annotators, one answering uniformly."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 8, 39)
    honest = np.clip(np.rint(truth + rng.normal(0, 0.7, (12, 39))), 0, 7)
    clicker = rng.integers(0, 8, (1, 39)).astype(float)
    return LongRatings.from_dense(np.vstack([honest, clicker]))


@pytest.mark.parametrize("seed", range(5))
def test_it_ranks_a_random_clicker_last_among_twelve_honest_annotators(seed):
    ratings = random_clicker_study(seed)
    assert dawid_skene(ratings, domain=range(8)).ranking()[-1] == 12
    assert mace(ratings, domain=range(8)).ranking()[-1] == 12


# --------------------------------------------------------------------------- properties


@pytest.mark.skipif(not _competence_compiled.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("fit", [dawid_skene, mace])
def test_it_fits_many_answers_with_the_compiled_engine_as_numpy_does(fit):
    crowd = planted_crowd(seed=5, n_items=3000)  # 20 000 answers or so: "auto" compiles
    ratings = as_long(np.array(crowd["rows"]), crowd["n_items"], crowd["n_annotators"])
    ratings.value[::97] = nan  # blanks are ignored by both
    base = fit(ratings, domain=range(crowd["k"]), engine="numpy")
    fast = fit(ratings, domain=range(crowd["k"]), engine="compiled")
    np.testing.assert_allclose(fast.posterior, base.posterior, rtol=0, atol=1e-9)
    np.testing.assert_allclose(competences(fast), competences(base), rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.labels.entropy, base.labels.entropy, rtol=0, atol=1e-9)
    assert fast.iterations == base.iterations and labels(fast) == labels(base)


def test_it_permutes_its_outputs_when_items_and_annotators_are_permuted():
    ratings = planted_ratings()
    dense = ratings.to_dense()
    rng = np.random.default_rng(3)
    pa, pi = rng.permutation(dense.shape[0]), rng.permutation(dense.shape[1])
    base = dawid_skene(ratings, domain=range(K))
    perm = dawid_skene(dense[pa][:, pi], domain=range(K))
    np.testing.assert_allclose(perm.posterior, base.posterior[pi], atol=1e-9)
    np.testing.assert_allclose(competences(perm), np.array(competences(base))[pa], atol=1e-9)
    assert perm.iterations == base.iterations


def test_it_permutes_mace_outputs_when_items_are_permuted():
    ratings = planted_ratings()
    dense = ratings.to_dense()
    pi = np.random.default_rng(4).permutation(dense.shape[1])
    base = mace(ratings, domain=range(K), rng=np.random.default_rng(1))
    perm = mace(dense[:, pi], domain=range(K), rng=np.random.default_rng(1))
    np.testing.assert_allclose(perm.posterior, base.posterior[pi], atol=1e-9)
    np.testing.assert_allclose(competences(perm), competences(base), atol=1e-9)


def test_it_keeps_mace_labels_and_ranking_when_annotators_are_permuted():
    # Restarts draw the start per annotator row, so a permutation changes the starts; on data
    # with a clear optimum every start reaches it.
    ratings = planted_ratings()
    dense = ratings.to_dense()
    pa = np.random.default_rng(5).permutation(dense.shape[0])
    base = mace(ratings, domain=range(K))
    perm = mace(dense[pa], domain=range(K))
    assert labels(perm) == labels(base)
    np.testing.assert_allclose(competences(perm), np.array(competences(base))[pa], atol=1e-4)


@pytest.mark.parametrize("fit", [dawid_skene, mace])
def test_it_trusts_annotators_who_all_agree_and_labels_the_agreed_value(fit):
    values = np.tile(np.array([0, 1, 2, 3, 4, 0, 2, 4, 1, 3, 3, 2.0]), (4, 1))
    got = fit(values, domain=range(5))
    assert labels(got) == list(values[0])
    assert all(i.probability > 0.99 for i in got.items)
    assert min(competences(got)) > 0.85


@pytest.mark.parametrize("fit", [dawid_skene, mace])
def test_it_reports_unanswered_items_and_silent_annotators_as_undefined(fit):
    dense = np.array([[0, 1, nan, 1, 0], [0, 1, nan, 1, 1], [nan] * 5, [0, 1, nan, 0, 0.0]])
    got = fit(dense, domain=[0, 1])
    assert got.items[2].label is None and got.items[2].reason == "no answers"
    assert np.isnan(got.posterior[2]).all()
    assert got.annotators[2].competence is None and got.annotators[2].n == 0
    assert got.ranking()[-1] == 2
    assert got.items[0].to_record() == {"item": 0, "label": 0.0, "probability": pytest.approx(
        got.items[0].probability), "entropy": pytest.approx(got.items[0].entropy), "n": 3}


def test_it_rejects_a_value_outside_the_domain():
    with pytest.raises(ValueError, match="not in the domain"):
        dawid_skene(np.array([[1.0, 5.0]]), domain=[1, 2, 3])
    with pytest.raises(ValueError, match="at least two values"):
        mace(np.array([[1.0, 1.0]]), domain=[1])


def test_it_is_deterministic():
    ratings = planted_ratings()
    a, b = mace(ratings, domain=range(K)), mace(ratings, domain=range(K))
    np.testing.assert_array_equal(a.posterior, b.posterior)
    assert a.params == b.params and a.params["restart"] in range(10)
    c, d = dawid_skene(ratings, domain=range(K)), dawid_skene(ratings, domain=range(K))
    np.testing.assert_array_equal(c.posterior, d.posterior)


def test_it_stops_at_the_tolerance_and_says_so():
    ratings = planted_ratings()
    got = dawid_skene(ratings, domain=range(K))
    assert got.converged and got.iterations < 100
    short = dawid_skene(ratings, domain=range(K), max_iter=2, tol=0.0)
    assert not short.converged and short.iterations == 2
    m = mace(ratings, domain=range(K))
    assert m.converged and m.iterations <= 50


def test_it_increases_the_likelihood_at_every_em_step():
    ratings = planted_ratings()
    lls = [dawid_skene(ratings, domain=range(K), max_iter=n, tol=0.0, smoothing=0.0).log_likelihood
           for n in range(1, 12)]
    assert all(b >= a - 1e-9 for a, b in zip(lls, lls[1:], strict=False))


def test_it_computes_entropy_in_nats():
    got = dawid_skene(np.array([[0.0], [1.0]]), domain=[0, 1], smoothing=0.0, max_iter=1, tol=0.0)
    p = got.posterior[0]
    assert got.items[0].entropy == pytest.approx(-(p * np.log(p)).sum())


def test_it_passes_its_doctest():
    assert doctest.testmod(core.stats.competence).failed == 0


def test_it_generates_the_planted_crowd_it_froze():
    # The frozen rows came from planted_crowd(); if numpy's streams change, the tests still use
    # the frozen rows, and this test says the generator no longer reproduces them.
    fresh = planted_crowd()
    assert fresh["rows"].tolist() == PLANTED["rows"]
