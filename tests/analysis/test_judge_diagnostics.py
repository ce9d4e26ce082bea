"""Judge diagnostics against independent computations: isotonic calibration
against scikit-learn's IsotonicRegression, self-consistency ICCs against
pingouin, the partial correlation against pingouin.partial_corr and a
residual regression by hand, reliability per category against pandas."""

import numpy as np
import pandas as pd
import pingouin
import pytest
from scipy import stats
from sklearn.isotonic import IsotonicRegression

from analysis.statistics.icc import pingouin_icc
from analysis.statistics.judge_diagnostics import (
    calibration,
    length_bias,
    partial_correlation,
    reliability_by,
    self_consistency,
)


def judged(seed=0, n=300):
    rng = np.random.default_rng(seed)
    gold = np.clip(np.round(rng.normal(6, 2.5, n)), 1, 10)
    # a judge that is too generous at the top and too harsh below: not calibrated
    judge = np.clip(np.round(1.4 * gold - 2 + rng.normal(0, 1.3, n)), 1, 10)
    length = 200 + 25 * gold + 40 * judge + rng.normal(0, 80, n)
    return judge, gold, length


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_calibration_map_is_scikit_learns_isotonic_regression(seed):
    judge, gold, _ = judged(seed)
    result = calibration(judge, gold)
    levels = np.array([row["judge_score"] for row in result["map"]])
    reference = IsotonicRegression(increasing=True).fit(judge, gold)
    np.testing.assert_allclose(
        [row["calibrated"] for row in result["map"]], reference.predict(levels), atol=1e-12
    )
    assert result["rmse_calibrated"] == pytest.approx(
        np.sqrt(np.mean((gold - reference.predict(judge)) ** 2)), abs=1e-12
    )
    frame = pd.DataFrame({"judge": judge, "gold": gold})
    means = frame.groupby("judge")["gold"].agg(["mean", "size"])
    assert [row["mean_gold"] for row in result["map"]] == pytest.approx(list(means["mean"]))
    expected_error = np.sum(means["size"] * np.abs(means["mean"] - means.index)) / len(judge)
    assert result["calibration_error"] == pytest.approx(expected_error)
    assert result["rmse_calibrated"] <= result["rmse_raw"]  # least squares, in-sample
    cell = result["map"][3]
    values = gold[judge == cell["judge_score"]]
    low, high = stats.t.interval(0.95, len(values) - 1, values.mean(), stats.sem(values))
    assert cell["ci95"] == pytest.approx([low, high])


def test_a_calibrated_judge_has_no_calibration_error():
    gold = np.repeat([2.0, 5.0, 9.0], 20)
    result = calibration(gold.copy(), gold)
    assert result["calibration_error"] == 0 and result["rmse_raw"] == 0
    assert calibration(np.full(10, 5.0), gold[:10])["computable"] is False


def test_partial_correlation_matches_pingouin_and_residuals():
    judge, gold, length = judged(4)
    frame = pd.DataFrame({"judge": judge, "gold": gold, "length": length})
    previous = pingouin.options.get("round.column.CI95")
    pingouin.options["round.column.CI95"] = None  # pingouin rounds it to 2 decimals
    try:
        reference = pingouin.partial_corr(frame, x="judge", y="length", covar="gold")
    finally:
        pingouin.options["round.column.CI95"] = previous
    result = length_bias(judge, gold, length)
    assert result["r"] == pytest.approx(float(reference["r"].iloc[0]), abs=1e-12)
    assert result["p"] == pytest.approx(float(reference["p_val"].iloc[0]), rel=1e-9)
    assert result["ci95"] == pytest.approx(
        list(reference["CI95"].iloc[0]), abs=1e-6
    )  # compute_esci: 6 decimals

    # by hand: correlate the residuals of both regressed on gold
    def residual(v):
        slope, intercept = np.polyfit(gold, v, 1)
        return v - (slope * gold + intercept)

    assert result["r"] == pytest.approx(np.corrcoef(residual(judge), residual(length))[0, 1])
    assert result["r"] > 0.3  # this judge rewards length beyond quality
    assert partial_correlation(judge[:4], length[:4], gold[:4])["computable"] is False


def test_self_consistency_icc_matches_pingouin_and_spread_pandas():
    rng = np.random.default_rng(2)
    rows = []
    for response in range(60):
        quality = rng.normal(6, 2)
        seeds = 3 if response < 50 else 2
        for seed in range(seeds):
            rows.append(
                {
                    "response_id": response,
                    "evaluator": "sampled judge",
                    "rater": "",
                    "judgment_seed": 2023 + seed,
                    "score": float(np.clip(round(quality + rng.normal(0, 1)), 1, 10)),
                }
            )
        rows.append(
            {
                "response_id": response,
                "evaluator": "greedy judge",
                "rater": "",
                "judgment_seed": 2023,
                "score": 5.0,
            }
        )
    table = pd.DataFrame(rows)
    result = self_consistency(table)
    assert set(result) == {"sampled judge"}  # one sample per response: left out
    entry = result["sampled judge"]
    sampled = table[table["evaluator"] == "sampled judge"]
    spread = sampled.groupby("response_id")["score"].std(ddof=1)
    assert entry["mean_spread"] == pytest.approx(spread.mean())
    assert entry["share_differing"] == pytest.approx((spread > 0).mean())
    assert entry["samples_per_response"] == [2, 3]
    three = sampled[sampled["response_id"] < 50]
    reference = {r.form: r for r in pingouin_icc(three, "response_id", "judgment_seed", "score")}
    forms = {f["form"]: f for f in entry["icc"]["forms"]}
    assert entry["icc"]["responses"] == 50 and entry["icc"]["samples"] == 3
    for form in ("ICC(1,1)", "ICC(1,k)"):
        assert forms[form]["icc"] == pytest.approx(reference[form].icc, abs=1e-9)
        assert forms[form]["ci95"] == pytest.approx(
            [reference[form].ci_low, reference[form].ci_high], abs=1e-9
        )
    only_greedy = self_consistency(table[table["evaluator"] == "greedy judge"])
    assert "several seeds" in only_greedy["reason"]


def test_reliability_by_question_type_and_position():
    judge, gold, _ = judged(6, n=120)
    frame = pd.DataFrame(
        {
            "judge": judge,
            "gold": gold,
            "question_type": np.array(["who", "what", "when", "howmany"])[np.arange(120) % 4],
            "answer_position": np.array(["B", "M", "E"])[np.arange(120) % 3],
        }
    )
    result = reliability_by(frame, "judge", "gold")
    who = frame[frame["question_type"] == "who"]
    assert result["question_type"]["who"]["n"] == 30
    assert result["question_type"]["who"]["r"] == pytest.approx(
        stats.pearsonr(who["judge"], who["gold"]).statistic
    )
    middle = frame[frame["answer_position"] == "M"]
    assert result["answer_position"]["M"]["mae"] == pytest.approx(
        (middle["judge"] - middle["gold"]).abs().mean()
    )
    assert result["answer_position"]["M"]["bias"] == pytest.approx(
        (middle["judge"] - middle["gold"]).mean()
    )


def test_reliability_by_answer_and_input_length_in_thirds():
    """Answers in thirds of their length (cut at the 1/3 and 2/3 quantiles),
    meetings in thirds of their transcripts' length: each third's statistics
    are the plain ones on its responses."""
    judge, gold, _ = judged(8, n=180)
    rng = np.random.default_rng(2)
    meetings = np.array([f"m{i}" for i in range(9)])[np.arange(180) % 9]
    words = {f"m{i}": 1000 * (i + 1) for i in range(9)}
    frame = pd.DataFrame(
        {
            "judge": judge,
            "gold": gold,
            "question_type": "who",
            "answer_position": "B",
            "response_chars": rng.integers(10, 900, 180),
            "meeting": meetings,
        }
    )
    result = reliability_by(frame, "judge", "gold", words)
    low, high = np.quantile(frame["response_chars"], [1 / 3, 2 / 3])
    assert list(result["answer_length"]) == [
        f"short (up to {low:,.0f} chars)",
        f"middle ({low:,.0f}-{high:,.0f} chars)",
        f"long (over {high:,.0f} chars)",
    ]
    long = frame[frame["response_chars"] > high]
    entry = result["answer_length"][f"long (over {high:,.0f} chars)"]
    assert entry["n"] == len(long)
    assert entry["bias"] == pytest.approx((long["judge"] - long["gold"]).mean())
    # nine meetings of 1,000 to 9,000 words: three in each third
    thirds = result["input_length"]
    assert [c["n"] for c in thirds.values()] == [60, 60, 60]
    shortest = frame[frame["meeting"].isin(["m0", "m1", "m2"])]
    first = next(iter(thirds.values()))
    assert first["r"] == pytest.approx(
        stats.pearsonr(shortest["judge"], shortest["gold"]).statistic
    )
