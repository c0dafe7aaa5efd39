"""Write the crowd-kit test vectors of test_competence.py (run by hand; crowd-kit is not a dependency).

crowd-kit (Apache-2.0) pulls pandas, scikit-learn, pyarrow, nltk and transformers, so Concord does
not install it (docs/statistics/competence.md). Its outputs on the two data sets of the tests are
frozen in ``data/crowdkit_1_4_2.json`` by this script, and test_competence.py compares our
implementation with them on every run. To regenerate (or to check against another version),
install crowd-kit somewhere outside the project's environment and put it on the path, e.g.::

    pip install --target /tmp/crowdkit crowd-kit==1.4.2
    CROWDKIT_PATH=/tmp/crowdkit .venv/bin/python -m tests.unit.stats.crowdkit_vectors

The path is appended (not prepended) so the project's own numpy/pandas win over the copies the
target directory holds.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats as sps

from tests.unit.stats.competence_data import DS_1979, planted_crowd

OUT = Path(__file__).with_name("data") / "crowdkit_1_4_2.json"


def _frame(rows: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"task": rows[:, 0], "worker": rows[:, 1], "label": rows[:, 2]})


def _probas(model, n_items: int, labels: list[int]) -> list[list[float]]:
    return model.probas_.reindex(index=range(n_items), columns=labels).to_numpy().tolist()


def main() -> int:
    if "CROWDKIT_PATH" not in os.environ:
        print("set CROWDKIT_PATH to the directory crowd-kit was installed into", file=sys.stderr)
        return 2
    sys.path.append(os.environ["CROWDKIT_PATH"])
    # Imported here: crowd-kit is importable only once its directory is on the path.
    import crowdkit
    from crowdkit.aggregation import MACE, DawidSkene

    planted = planted_crowd()
    cases: dict[str, object] = {}
    out: dict[str, object] = {
        "crowdkit_version": crowdkit.__version__,
        # The data are stored too, so the vectors never depend on numpy's random streams.
        "planted": {"rows": planted["rows"].tolist(), "truth": planted["truth"].tolist(),
                    "n_items": planted["n_items"], "n_annotators": planted["n_annotators"],
                    "k": planted["k"]},
        "cases": cases,
    }
    k = planted["k"]
    labels = list(range(k))
    data = _frame(planted["rows"])
    for n_iter in (1, 5, 100):
        ds = DawidSkene(n_iter=n_iter, tol=-np.inf).fit(data)  # -inf: exactly n_iter rounds
        errors = np.zeros((planted["n_annotators"], k, k))
        for (worker, answer), row in ds.errors_.iterrows():
            errors[worker, :, answer] = row.reindex(labels).to_numpy()
        cases[f"ds_planted_{n_iter}"] = {
            "n_iter": n_iter,
            "probas": _probas(ds, planted["n_items"], labels),
            "labels": ds.labels_.reindex(range(planted["n_items"])).tolist(),
            "priors": ds.priors_.reindex(labels).tolist(),
            "errors": errors.tolist(),  # [worker][true][answer]; 0 where crowd-kit has no row
        }
    # crowd-kit's MACE indexes its start by first appearance of worker and label but stores its
    # counts in sorted order; the planted rows are sorted so that both orders agree.
    assert list(pd.unique(data.worker)) == sorted(pd.unique(data.worker))
    assert list(pd.unique(data.label)) == labels
    n_ann = planted["n_annotators"]
    start_spam = sps.uniform(1, 1.5).rvs(size=(n_ann, 2), random_state=0)
    start_xi = sps.uniform(1, 1.5).rvs(size=(n_ann, k), random_state=0)
    for method in ("em", "vb"):
        for n_iter in (1, 50):
            mace = MACE(n_restarts=1, n_iter=n_iter, method=method, random_state=0).fit(data)
            cases[f"mace_{method}_{n_iter}"] = {
                "method": method,
                "n_iter": n_iter,
                "start_spamming": (start_spam / start_spam.sum(1, keepdims=True)).tolist(),
                "start_strategy": (start_xi / start_xi.sum(1, keepdims=True)).tolist(),
                "probas": _probas(mace, planted["n_items"], labels),
                "labels": mace.labels_.reindex(range(planted["n_items"])).tolist(),
                "spamming": mace.spamming_.tolist(),
                "strategy": mace.thetas_.tolist(),
            }

    paper = _frame(DS_1979)
    ds = DawidSkene(n_iter=100, tol=-np.inf).fit(paper)
    cases["ds_1979_100"] = {
        "n_iter": 100,
        "probas": _probas(ds, 45, [1, 2, 3, 4]),
        "labels": ds.labels_.reindex(range(45)).tolist(),
        "priors": ds.priors_.reindex([1, 2, 3, 4]).tolist(),
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
