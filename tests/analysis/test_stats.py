"""Statistics against direct scipy calls on the same data, and the explained
'not computable' cases."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from analysis.statistics import stats


@pytest.fixture
def responses():
    """A response-level table: 3 systems x 40 questions x 3 evaluators."""
    rng = np.random.default_rng(3)
    rows = []
    positions = ["B", "M", "E", "S"]
    types = ["who", "what", "when", "howmany"]
    for s, system in enumerate(("A", "B", "C")):
        for q in range(40):
            quality = np.clip(rng.normal(4 + 2 * s, 2), 1, 10)
            gold = float(np.clip(round(quality), 1, 10))
            for evaluator, noise in (("gold", 0), ("judge", 1.5), ("crowd", 1.0)):
                score = (
                    gold if noise == 0 else float(np.clip(quality + rng.normal(0, noise), 1, 10))
                )
                rows.append(
                    {
                        "response_id": s * 100 + q,
                        "evaluator": evaluator,
                        "score": score,
                        "system": system,
                        "mode": "st",
                        "dataset_version": "qa",
                        "split": "test2",
                        "run_seed": None,
                        "question_pk": q,
                        "question_type": types[q % 4],
                        "answer_position": positions[q % 4],
                        "response_chars": 100 + 10 * q,
                    }
                )
    table = pd.DataFrame(rows)
    for column in ("evaluator", "system"):
        table[column] = table[column].astype("category")
    return table


def wide(table):
    out = table.pivot(index="response_id", columns="evaluator", values="score")
    out.columns = [str(c) for c in out.columns]
    return out


def test_correlations_match_scipy(responses):
    w = wide(responses)
    result = stats.correlations(w, bootstrap=200)
    x, y = w["judge"].to_numpy(), w["crowd"].to_numpy()
    pearson = sp.pearsonr(x, y)
    entry = result["pearson"]["judge"]["crowd"]
    assert entry["r"] == pytest.approx(pearson.statistic, abs=1e-12)
    assert entry["p"] == pytest.approx(pearson.pvalue, rel=1e-9)
    ci = pearson.confidence_interval()
    assert entry["ci95"] == pytest.approx([ci.low, ci.high], abs=1e-12)
    assert entry["bootstrap_ci95"][0] < entry["r"] < entry["bootstrap_ci95"][1]
    assert result["spearman"]["judge"]["crowd"]["r"] == pytest.approx(sp.spearmanr(x, y).statistic)
    assert result["kendall"]["crowd"]["judge"]["r"] == pytest.approx(
        sp.kendalltau(x, y, variant="b").statistic
    )
    assert stats.correlation_values(result)["pearson"]["gold"]["gold"] == 1.0


def test_correlation_not_computable(responses):
    w = wide(responses)
    w["constant"] = 5.0
    result = stats.correlations(w.head(2).assign(other=[1.0, 2.0]))
    assert "at least 3" in result["pearson"]["judge"]["crowd"]["reason"]
    result = stats.correlations(w)
    assert "zero variance" in result["pearson"]["constant"]["judge"]["reason"]
    assert stats.correlation_values(result)["pearson"]["constant"]["judge"] is None


def test_welch_matches_scipy(responses):
    result = stats.middle_position_welch(responses)
    group = responses[(responses["evaluator"] == "judge") & (responses["system"] == "B")]
    expected = sp.ttest_ind(
        group.loc[group.answer_position == "M", "score"],
        group.loc[group.answer_position != "M", "score"],
        equal_var=False,
        alternative="less",
    )
    assert result["judge"]["B"]["p"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert result["judge"]["B"]["t"] == pytest.approx(expected.statistic, rel=1e-12)
    assert (result["judge"]["B"]["n_middle"], result["judge"]["B"]["n_other"]) == (10, 30)


def test_welch_not_computable():
    table = pd.DataFrame(
        {
            "evaluator": ["e"] * 3,
            "system": ["s"] * 3,
            "score": [5.0, 5, 5],
            "answer_position": ["M", "B", "B"],
        }
    )
    assert "at least 2 of each" in stats.middle_position_welch(table)["e"]["s"]["reason"]
    table = pd.DataFrame(
        {
            "evaluator": ["e"] * 4,
            "system": ["s"] * 4,
            "score": [5.0] * 4,
            "answer_position": ["M", "M", "B", "B"],
        }
    )
    assert "zero variance" in stats.middle_position_welch(table)["e"]["s"]["reason"]


def test_gold_bins_match_scipy(responses):
    w = wide(responses)
    result = stats.gold_bins(w, "gold")
    total = sum(b["n"] for b in result["bins"].values())
    assert total == len(w)
    level = next(int(b) for b, e in result["bins"].items() if e["n"] >= 3)
    values = w.loc[w["gold"] == level, "judge"].to_numpy()
    low, high = sp.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=sp.sem(values))
    entry = result["bins"][str(level)]["evaluators"]["judge"]
    assert entry["mean"] == pytest.approx(values.mean())
    assert entry["ci95"] == pytest.approx([low, high])
    assert result["levels"]["crowd"]["levels"] >= 2
    empty = next((e for e in result["bins"].values() if e["n"] == 0), None)
    if empty:
        assert empty["evaluators"]["judge"]["reason"] == "no responses in this bin"
    assert stats.gold_bins(w, "nobody")["computable"] is False


def test_breakdown_matches_pandas(responses):
    result = stats.breakdown(responses)
    subset = responses[(responses.evaluator == "crowd") & (responses.system == "C")]
    assert result["question_type"]["crowd"]["C"]["who"]["mean"] == pytest.approx(
        subset.loc[subset.question_type == "who", "score"].mean()
    )
    assert result["answer_position"]["crowd"]["C"]["M"]["n"] == 10


def test_seed_summary():
    rows = []
    for seed, mean in ((2023, 6.0), (2024, 7.0), (2025, 8.0)):
        for q in range(4):
            rows.append(
                {
                    "evaluator": "judge",
                    "system": "A",
                    "mode": "st",
                    "dataset_version": "qa",
                    "split": "test2",
                    "run_seed": seed,
                    "score": mean + (q - 1.5) * 0.1,
                }
            )
    table = pd.DataFrame(rows)
    result = stats.seed_summary(table)["judge"]["A"]["st/qa/test2"]
    assert result["seeds"] == [2023, 2024, 2025]
    assert result["mean"] == pytest.approx(7.0)
    assert result["std"] == pytest.approx(np.std([6.0, 7.0, 8.0], ddof=1))
    unseeded = table.assign(run_seed=None)
    assert "no seeded runs" in stats.seed_summary(unseeded)["reason"]


def test_length_correlation(responses):
    result = stats.length_correlation(responses)
    subset = responses[responses.evaluator == "judge"]
    assert result["judge"]["r"] == pytest.approx(
        sp.pearsonr(subset["response_chars"], subset["score"]).statistic
    )


def test_pairwise_diagnostics():
    battles = pd.DataFrame(
        [
            # pair 1: consistent (the same answer wins in both orders)
            {"pair": 1, "order": 0, "winner": "first"},
            {"pair": 1, "order": 1, "winner": "second"},
            # pair 2: position bias (the first shown wins both times): a flip
            {"pair": 2, "order": 0, "winner": "first"},
            {"pair": 2, "order": 1, "winner": "first"},
            # pair 3: a tie both times: consistent
            {"pair": 3, "order": 0, "winner": "tie"},
            {"pair": 3, "order": 1, "winner": "tie"},
            # pair 4: judged in one order only
            {"pair": 4, "order": 0, "winner": "second"},
        ]
    )
    result = stats.pairwise_diagnostics(battles)
    assert result["pairs"] == 3
    assert result["flip_rate"] == pytest.approx(1 / 3)
    assert result["first_position_win_rate"] == pytest.approx(3 / 5)
    assert stats.pairwise_diagnostics(battles.iloc[:0])["computable"] is False
