"""The thread cap of the compiled kernels (``CONCORD_ANALYSIS_THREADS``)."""

import numpy as np
import pytest

from core.stats import _threads
from core.stats.competence import mace
from tests.unit.stats.competence_data import as_long, planted_crowd


@pytest.fixture
def restore():
    yield
    _threads.limit_threads(0)


def test_it_caps_the_threads_and_refuses_a_negative_cap(restore):
    every = _threads.available_threads()
    _threads.limit_threads(1)
    assert _threads.available_threads() == 1
    _threads.limit_threads(0)
    assert _threads.available_threads() == every >= 1
    with pytest.raises(ValueError, match=">= 0"):
        _threads.limit_threads(-1)


def test_it_fits_the_same_model_with_one_thread_or_many(restore):
    crowd = planted_crowd(seed=2, n_items=3000)
    ratings = as_long(np.array(crowd["rows"]), crowd["n_items"], crowd["n_annotators"])
    _threads.limit_threads(1)
    alone = mace(ratings, domain=range(crowd["k"]), n_restarts=4, engine="auto")
    _threads.limit_threads(0)
    together = mace(ratings, domain=range(crowd["k"]), n_restarts=4, engine="auto")
    assert np.array_equal(alone.posterior, together.posterior)
    assert alone.params == together.params
