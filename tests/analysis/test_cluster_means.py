"""The mean over clusters with its betting interval
(analysis.statistics.cluster_means) against the authors' own code (the
`confseq` package's `betting_ci`, tests/data/confseq) on 120 generated
samples: binary, skewed, constant, at the scale's ends, from 2 to 400
observations; and what a report reads from it. Its coverage is the harness's
(benchmarks/coverage/rows_cluster_means.py; docs/coverage-cluster-means.md)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from analysis.statistics.cluster_means import betting_interval, clustered_mean

CONFSEQ = Path(__file__).resolve().parents[1] / "data" / "confseq"


@pytest.fixture(scope="module")
def betting_ci():
    with pytest.MonkeyPatch.context() as patch:
        # used only for its parallel option, which stays off
        patch.setitem(sys.modules, "multiprocess", types.ModuleType("multiprocess"))
        patch.setattr(np, "float_", np.float64, raising=False)  # its type hints' NumPy 1 name
        patch.syspath_prepend(str(CONFSEQ))
        from confseq.betting import betting_ci

        yield betting_ci


def samples():
    rng = np.random.default_rng(11)
    for case in range(120):
        n = int(rng.choice([2, 3, 5, 8, 13, 30, 100, 400]))
        kind = case % 6
        if kind == 0:
            x = rng.integers(0, 2, n).astype(float)  # RULER's items: right or wrong
        elif kind == 1:
            x = rng.beta(8, 1, n)  # a mean near the ceiling
        elif kind == 2:
            x = np.full(n, rng.uniform())  # no spread
        elif kind == 3:
            x = rng.choice([0.0, 1.0], n, p=[0.05, 0.95])
        elif kind == 4:
            x = np.round(rng.uniform(size=n) * 9) / 9  # a 1-10 scale's steps
        else:
            x = np.where(rng.uniform(size=n) < 0.2, 1.0, rng.uniform(0, 0.3, n))
        yield x


def test_the_interval_is_confseqs_betting_ci(betting_ci):
    largest = 0.0
    for x in samples():
        expected = betting_ci(x, alpha=0.05)
        found = betting_interval(x)
        largest = max(largest, abs(found[0] - expected[0]), abs(found[1] - expected[1]))
    assert largest < 1e-12


def test_the_mean_is_over_clusters_on_the_scale_and_the_interval_holds_it():
    values = np.array([9.0, 9.0, 9.0, 3.0, 5.0, 7.0, 7.0])
    clusters = np.array(["a", "a", "a", "b", "c", "c", "d"])
    found = clustered_mean(values, clusters, (1, 10))
    # each meeting weighs the same: (9 + 3 + 6 + 7) / 4
    assert found["mean"] == pytest.approx(6.25)
    assert (found["n"], found["clusters"]) == (7, 4)
    low, high = found["ci95"]
    assert 1 <= low < 6.25 < high <= 10
    # NaN (not scored) items are left out; one cluster gives no interval, and says why
    alone = clustered_mean(np.array([4.0, np.nan, 6.0]), np.array([1, 1, 1]), (1, 10))
    assert alone["mean"] == 5.0 and alone["ci95"] == [None, None]
    assert "1 cluster" in alone["ci_note"]
    assert clustered_mean(np.array([np.nan]), np.array([1]), (0, 1))["computable"] is False
    with pytest.raises(ValueError, match="outside the scale"):
        clustered_mean(np.array([11.0, 2.0]), np.array([1, 2]), (1, 10))


def test_many_documents_give_a_narrow_interval_few_give_a_wide_one():
    rng = np.random.default_rng(3)
    right = rng.uniform(size=500) < 0.8  # 500 RULER lines, one a document
    many = clustered_mean(right.astype(float), np.arange(500), (0, 1))
    assert many["ci95"][1] - many["ci95"][0] < 0.16
    assert many["ci95"][0] < many["mean"] < many["ci95"][1]
    few = clustered_mean(right[:3].astype(float), np.arange(3), (0, 1))
    assert few["ci95"] == [0.0, 1.0]  # three documents say nothing at 95%
