"""The install step that compiles the numba kernels into their cache (``make kernels``)."""

import pytest

from core.stats import _bootstrap_compiled, _competence_compiled, _subsets_compiled
from core.stats.kernels import compile_kernels


@pytest.mark.skipif(not (_competence_compiled.AVAILABLE and _bootstrap_compiled.AVAILABLE
                         and _subsets_compiled.AVAILABLE), reason="numba is not installed")
def test_it_compiles_every_kernel_family_through_its_engine():
    assert set(compile_kernels()) == {"competence", "correlation_intervals", "trust"}
