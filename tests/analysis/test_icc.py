"""ICC and Krippendorff's alpha against published reference values."""

import numpy as np
import pandas as pd
import pytest

from analysis.statistics.icc import icc_table, one_way_unbalanced, pingouin_icc
from analysis.statistics.stats import rater_agreement

# Shrout & Fleiss (1979), Psychological Bulletin 86(2), Table 2: 6 targets x 4 judges,
# and their Table 4 of ICC estimates.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
)
SHROUT_FLEISS_PUBLISHED = {
    "ICC(1,1)": 0.17,
    "ICC(A,1)": 0.29,
    "ICC(C,1)": 0.71,
    "ICC(1,k)": 0.44,
    "ICC(A,k)": 0.62,
    "ICC(C,k)": 0.91,
}

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example
# with missing values: 4 observers x 12 units; alpha interval = 0.849.
KRIPPENDORFF = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def long_table(matrix: np.ndarray) -> pd.DataFrame:
    n, k = matrix.shape
    return pd.DataFrame(
        [(t, j, float(matrix[t, j])) for t in range(n) for j in range(k)],
        columns=["target", "rater", "score"],
    )


def test_shrout_fleiss_published_values():
    rows = {r.form: r for r in icc_table(SHROUT_FLEISS)}
    assert {form: round(r.icc, 2) for form, r in rows.items()} == SHROUT_FLEISS_PUBLISHED
    assert rows["ICC(1,1)"].f == pytest.approx(1.795, abs=1e-3)  # published F = 1.79
    assert rows["ICC(C,1)"].f == pytest.approx(11.03, abs=1e-2)  # published F = 11.03


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_pingouin_to_1e_9(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(5, 60), rng.integers(2, 12)
    matrix = np.clip(
        np.round(rng.normal(6, 2, size=(n, 1)) + rng.normal(0, 1.5, size=(n, k))), 1, 10
    )
    mine, reference = (
        icc_table(matrix),
        pingouin_icc(long_table(matrix), "target", "rater", "score"),
    )
    assert [r.form for r in mine] == [r.form for r in reference]
    for a, b in zip(mine, reference, strict=True):
        for field in ("icc", "f", "df1", "df2", "p", "ci_low", "ci_high"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), abs=1e-9), (a.form, field)


def test_unbalanced_one_way_equals_balanced_when_balanced():
    result = one_way_unbalanced(SHROUT_FLEISS.ravel(), np.repeat(np.arange(6), 4))
    balanced = {r.form: r for r in icc_table(SHROUT_FLEISS)}
    assert result["k0"] == pytest.approx(4)
    assert result["ICC(1,1)"]["icc"] == pytest.approx(balanced["ICC(1,1)"].icc, abs=1e-12)
    assert result["ICC(1,k)"]["icc"] == pytest.approx(balanced["ICC(1,k)"].icc, abs=1e-12)
    assert result["ICC(1,1)"]["ci95"] == pytest.approx(
        [balanced["ICC(1,1)"].ci_low, balanced["ICC(1,1)"].ci_high], abs=1e-12
    )


@pytest.mark.parametrize(
    "bad",
    [
        np.ones((5, 3)),
        np.array([[1.0, 2.0]]),
        np.array([[1.0], [2.0]]),
        np.array([[1.0, np.nan], [2.0, 3.0]]),
    ],
)
def test_icc_refuses_what_it_cannot_compute(bad):
    with pytest.raises(ValueError, match="zero variance|at least 2|complete"):
        icc_table(bad)


def tidy_ratings(matrix: list[list], meeting="m1", evaluator="crowd") -> pd.DataFrame:
    rows = []
    for rater, scores in enumerate(matrix):
        for unit, score in enumerate(scores):
            if score is not None:
                rows.append(
                    {
                        "evaluator": evaluator,
                        "rater": f"r{rater}",
                        "response_id": unit,
                        "meeting": meeting,
                        "score": float(score),
                    }
                )
    table = pd.DataFrame(rows)
    table["evaluator"] = table["evaluator"].astype("category")
    return table


def test_krippendorff_published_example():
    result = rater_agreement(tidy_ratings(KRIPPENDORFF))["crowd"]
    assert round(result["krippendorff_alpha_interval"]["alpha"], 3) == 0.849
    assert result["krippendorff_alpha_interval"]["raters"] == 4


def test_agreement_per_meeting_and_overall_with_different_raters():
    rng = np.random.default_rng(7)
    tables = []
    for meeting in ("m1", "m2"):
        truth = rng.integers(1, 11, size=8)
        matrix = np.clip(truth + rng.integers(-1, 2, size=(5, 8)), 1, 10)
        table = tidy_ratings(matrix.tolist(), meeting=meeting)
        table["rater"] = meeting + table["rater"]  # different raters per meeting
        table["response_id"] += 100 if meeting == "m2" else 0
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    table["evaluator"] = table["evaluator"].astype("category")
    result = rater_agreement(table)["crowd"]
    m1 = result["per_meeting"]["m1"]
    assert (m1["items"], m1["raters"]) == (8, 5)
    assert [f["form"] for f in m1["forms"]] == [
        "ICC(1,1)",
        "ICC(A,1)",
        "ICC(C,1)",
        "ICC(1,k)",
        "ICC(A,k)",
        "ICC(C,k)",
    ]
    assert result["overall"]["method"].startswith("one-way ANOVA")
    assert [f["form"] for f in result["overall"]["forms"]] == ["ICC(1,1)", "ICC(1,k)"]
    assert result["overall"]["items"] == 16
    # drop one rating: the meeting leaves that rater out and says so
    table = table.drop(index=table.index[0])
    result = rater_agreement(table)["crowd"]
    assert "left out 1 rater" in result["per_meeting"]["m1"]["method"]
    assert "unbalanced" in result["overall"]["method"]


def test_single_rater_and_constant_scores_are_explained():
    single = rater_agreement(tidy_ratings([[1, 2, 3]]))["crowd"]
    assert single["per_meeting"]["m1"] == {"computable": False, "reason": "a single rater"}
    assert single["overall"]["computable"] is False
    constant = rater_agreement(tidy_ratings([[5, 5, 5], [5, 5, 5]]))["crowd"]
    assert "zero variance" in constant["per_meeting"]["m1"]["reason"]
    assert "zero variance" in constant["krippendorff_alpha_interval"]["reason"]


def test_unbalanced_one_way_f_matches_scipy_anova():
    from scipy.stats import f_oneway

    rng = np.random.default_rng(11)
    groups = [rng.integers(1, 11, size=rng.integers(2, 9)).astype(float) + i % 3 for i in range(25)]
    scores = np.concatenate(groups)
    codes = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    result = one_way_unbalanced(scores, codes)
    anova = f_oneway(*groups)
    assert result["ICC(1,1)"]["F"] == pytest.approx(anova.statistic, rel=1e-12)
    assert result["ICC(1,1)"]["p"] == pytest.approx(anova.pvalue, rel=1e-9)
    msb_over_msw = anova.statistic
    assert result["ICC(1,k)"]["icc"] == pytest.approx(1 - 1 / msb_over_msw, rel=1e-12)


def test_interval_alpha_matches_the_krippendorff_package():
    import krippendorff

    from analysis.statistics.stats import interval_alpha

    rng = np.random.default_rng(3)
    for _ in range(20):
        raters, units = rng.integers(2, 7), rng.integers(5, 60)
        truth = rng.integers(1, 11, size=units)
        data = np.clip(truth + rng.integers(-2, 3, size=(raters, units)), 1, 10).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan  # missing ratings, some units unpairable
        values = np.unique(data[~np.isnan(data)])
        counts = np.stack([(data == v).sum(axis=0) for v in values], axis=1)
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
        assert interval_alpha(counts, values) == pytest.approx(expected, abs=1e-12)
