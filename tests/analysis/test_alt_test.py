"""The alternative annotator test against a direct transcription of the
authors' reference procedure (nitaytech/AltTest, alt_test_example.ipynb:
`by_procedure`, `accuracy`, `neg_rmse`, `ttest`, `alt_test`), run on the same
data. The transcription below loops over raters and items exactly as the
reference does; it never calls analysis.statistics.alt_test."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, ttest_1samp

from analysis.statistics.alt_test import alt_test, benjamini_yekutieli

# --- The reference procedure, transcribed ---------------------------------------------------


def by_procedure(p_values, q):
    p_values = np.array(p_values, dtype=float)
    m = len(p_values)
    sorted_indices = np.argsort(p_values)
    sorted_pvals = p_values[sorted_indices]
    H_m = np.sum(1.0 / np.arange(1, m + 1))  # noqa: N806 (the reference's name)
    by_thresholds = (np.arange(1, m + 1) / m) * (q / H_m)
    max_i = -1
    for i in range(m):
        if sorted_pvals[i] <= by_thresholds[i]:
            max_i = i
    if max_i == -1:
        return []
    return list(sorted_indices[: max_i + 1])


def accuracy(pred, annotations):
    return float(np.mean([pred == ann for ann in annotations]))


def neg_rmse(pred, annotations):
    return -1 * float(np.sqrt(np.mean([(pred - ann) ** 2 for ann in annotations])))


def neg_mae(pred, annotations):  # the absolute-distance variant, written the same way
    return -1 * float(np.mean([abs(pred - ann) for ann in annotations]))


def reference_alt_test(
    llm_annotations,
    humans_annotations,
    scoring_function,
    epsilon,
    q_fdr=0.05,
    min_humans_per_instance=2,
    min_instances_per_human=30,
):
    i_set, h_set = {}, {}
    for h, anns in humans_annotations.items():
        i_set[h] = list(anns.keys())
        for i in anns:
            h_set.setdefault(i, []).append(h)
    instances_to_keep = {
        i for i in h_set if len(h_set[i]) >= min_humans_per_instance and i in llm_annotations
    }
    i_set = {h: [i for i in i_set[h] if i in instances_to_keep] for h in i_set}
    h_set = {i: h_set[i] for i in h_set if i in instances_to_keep}

    p_values, advantage_probs, humans = [], [], []
    for excluded_h in humans_annotations:
        llm_indicators = []
        excluded_indicators = []
        instances = [i for i in i_set[excluded_h] if i in llm_annotations]
        if len(instances) < min_instances_per_human:
            continue
        for i in instances:
            human_ann = humans_annotations[excluded_h][i]
            llm_ann = llm_annotations[i]
            remaining_anns = [humans_annotations[h][i] for h in h_set[i] if h != excluded_h]
            human_score = scoring_function(human_ann, remaining_anns)
            llm_score = scoring_function(llm_ann, remaining_anns)
            llm_indicators.append(1 if llm_score >= human_score else 0)
            excluded_indicators.append(1 if human_score >= llm_score else 0)
        diff_indicators = [e - m for e, m in zip(excluded_indicators, llm_indicators, strict=True)]
        p_values.append(ttest_1samp(diff_indicators, epsilon, alternative="less").pvalue)
        advantage_probs.append(float(np.mean(llm_indicators)))
        humans.append(excluded_h)
    rejected_indices = by_procedure(p_values, q_fdr)
    winning_rate = len(rejected_indices) / len(humans)
    return winning_rate, float(np.mean(advantage_probs)), dict(zip(humans, p_values, strict=True))


def ranked(annotations: dict) -> dict:
    """The FAQ's rank variant: an annotator's scores replaced by their ranks
    (lowest = 1, ties averaged), here divided by the number ranked."""
    keys = list(annotations)
    ranks = rankdata([annotations[k] for k in keys])
    return {k: r / len(keys) for k, r in zip(keys, ranks, strict=True)}


def reference_rank_alt_test(llm, humans, epsilon):
    """Rank each annotator and the LLM over the instances the test keeps
    (2+ annotators and an LLM score), then the reference with neg_rmse."""
    counts = {}
    for anns in humans.values():
        for i in anns:
            counts[i] = counts.get(i, 0) + 1
    keep = {i for i, c in counts.items() if c >= 2 and i in llm}
    humans_kept = {h: {i: s for i, s in anns.items() if i in keep} for h, anns in humans.items()}
    humans_ranked = {h: ranked(anns) for h, anns in humans_kept.items() if anns}
    llm_ranked = ranked({i: llm[i] for i in keep})
    return reference_alt_test(llm_ranked, humans_ranked, neg_rmse, epsilon)


# --- Data -------------------------------------------------------------------------------------


def crowd_like(seed: int, judge_noise: float, raters_per_block=(4, 3, 5), items_per_block=45):
    """Blocks of items (meetings), each rated by its own raters on 1-10; some
    ratings missing, one rater with too few items, a few items with one rater."""
    rng = np.random.default_rng(seed)
    humans: dict[str, dict[int, int]] = {}
    llm: dict[int, int] = {}
    item = 0
    for block, raters in enumerate(raters_per_block):
        for _ in range(items_per_block):
            quality = rng.normal(6, 2.2)
            llm[item] = int(np.clip(round(quality + rng.normal(0, judge_noise)), 1, 10))
            for r in range(raters):
                if rng.random() < 0.1:
                    continue  # a missing rating
                score = int(np.clip(round(quality + rng.normal(0, 1.3)), 1, 10))
                humans.setdefault(f"b{block}-r{r}", {})[item] = score
            item += 1
    humans["late-joiner"] = {i: llm[i] for i in range(5)}  # 5 items: skipped
    del llm[item - 1]  # one item the judge did not score
    return llm, humans


def as_frames(llm, humans):
    rows = [(i, h, s) for h, anns in humans.items() for i, s in anns.items()]
    return pd.DataFrame(rows, columns=["item", "rater", "score"]), pd.Series(llm, dtype=float)


# --- Tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("judge_noise", [0.6, 1.5, 3.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.15, 0.2])
@pytest.mark.parametrize(
    ("alignment", "function"),
    [("neg_rmse", neg_rmse), ("neg_mae", neg_mae), ("accuracy", accuracy)],
)
def test_alt_test_matches_the_reference_procedure(seed, judge_noise, epsilon, alignment, function):
    llm, humans = crowd_like(seed, judge_noise)
    expected_wr, expected_ap, expected_p = reference_alt_test(llm, humans, function, epsilon)
    frame, judge = as_frames(llm, humans)
    result = alt_test(frame, judge, epsilon=epsilon, alignment=alignment)
    assert result["winning_rate"] == pytest.approx(expected_wr, abs=1e-12)
    assert result["advantage_probability"] == pytest.approx(expected_ap, abs=1e-12)
    assert result["passed"] == (expected_wr >= 0.5)
    got_p = {r["rater"]: r["p"] for r in result["raters"]}
    assert set(got_p) == set(expected_p)  # the same raters tested, the late joiner left out
    for rater, p in expected_p.items():
        if np.isnan(p):
            assert got_p[rater] is None
        else:
            assert got_p[rater] == pytest.approx(p, rel=1e-9, abs=1e-300)
    assert result["raters_skipped"] == 1


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("epsilon", [0.1, 0.2])
def test_rank_variant_matches_the_reference_on_ranks(seed, epsilon):
    llm, humans = crowd_like(seed, 1.0, raters_per_block=(3, 3), items_per_block=60)
    del humans["late-joiner"]
    expected_wr, expected_ap, expected_p = reference_rank_alt_test(llm, humans, epsilon)
    frame, judge = as_frames(llm, humans)
    result = alt_test(frame, judge, epsilon=epsilon, alignment="rank")
    assert result["winning_rate"] == pytest.approx(expected_wr, abs=1e-12)
    assert result["advantage_probability"] == pytest.approx(expected_ap, abs=1e-12)
    for rater in expected_p:
        got = next(r["p"] for r in result["raters"] if r["rater"] == rater)
        assert got == pytest.approx(expected_p[rater], rel=1e-9)


def test_a_judge_equal_to_a_rater_passes_and_a_random_judge_fails():
    rng = np.random.default_rng(7)
    quality = rng.normal(6, 2, 80)
    humans = {
        f"r{r}": {
            i: int(np.clip(round(q + rng.normal(0, 1)), 1, 10)) for i, q in enumerate(quality)
        }
        for r in range(4)
    }
    good = {i: int(np.clip(round(q), 1, 10)) for i, q in enumerate(quality)}  # the consensus
    bad = {i: int(rng.integers(1, 11)) for i in range(80)}
    frame, _ = as_frames(good, humans)
    assert alt_test(frame, pd.Series(good, dtype=float), epsilon=0.2)["passed"] is True
    assert alt_test(frame, pd.Series(bad, dtype=float), epsilon=0.2)["passed"] is False
    assert reference_alt_test(good, humans, neg_rmse, 0.2)[0] >= 0.5
    assert reference_alt_test(bad, humans, neg_rmse, 0.2)[0] < 0.5


def test_not_computable_with_one_rater_per_item_or_too_few_items():
    frame = pd.DataFrame({"item": range(50), "rater": "gold", "score": 5.0})
    judge = pd.Series(5.0, index=range(50))
    result = alt_test(frame, judge, epsilon=0.2)
    assert result["computable"] is False
    assert "fewer than 2 human raters" in result["reason"]
    two = pd.concat([frame, frame.assign(rater="other")]).query("item < 20")
    result = alt_test(two, judge, epsilon=0.2)
    assert "fewer than 30 items per human rater (at most 20)" in result["reason"]


def test_two_raters_warn():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "item": np.tile(np.arange(40), 2),
            "rater": np.repeat(["a", "b"], 40),
            "score": rng.integers(1, 11, 80).astype(float),
        }
    )
    result = alt_test(frame, pd.Series(rng.integers(1, 11, 40), dtype=float), epsilon=0.2)
    assert any("recommend 3 or more" in w for w in result["warnings"])


def test_benjamini_yekutieli_against_the_reference():
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = rng.uniform(0, 0.03, size=rng.integers(1, 12))
        if rng.random() < 0.3:
            p[0] = np.nan
        expected = set(int(i) for i in by_procedure(p, 0.05))
        assert set(np.flatnonzero(benjamini_yekutieli(p, 0.05)).tolist()) == expected
