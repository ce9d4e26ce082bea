"""The meeting-clustered bootstrap against a direct loop: for every resample,
the rows of the drawn meetings concatenated (a meeting drawn twice appears
twice) and the statistic recomputed with scipy and pandas."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.bootstrap import ClusterBootstrap, clustered_correlation, ranking_agreement


def responses(seed=0, meetings=8):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(meetings):
        difficulty = rng.normal(0, 1)
        for _question in range(rng.integers(4, 19)):
            for s, system in enumerate(("GPT-4", "Vicuna", "LongAlpaca")):
                quality = 6 + 1.2 * (1 - s) + difficulty + rng.normal(0, 2)
                rows.append(
                    {
                        "meeting": f"m{m}",
                        "system": system,
                        "gold": float(np.clip(round(quality), 1, 10)),
                        "judge": float(np.clip(round(quality + rng.normal(0.5, 1.5)), 1, 10)),
                        "weak": float(np.clip(round(5 + rng.normal(0, 2)), 1, 10)),
                    }
                )
    return pd.DataFrame(rows)


def resample_frames(frame, boot, meetings):
    """The direct loop: one concatenated frame per resample."""
    by_meeting = {m: group for m, group in frame.groupby("meeting_code")}
    for draw in boot.draws:
        yield pd.concat([by_meeting[m] for m in draw if m in by_meeting], ignore_index=True)


def coded(frame):
    meetings = sorted(frame["meeting"].unique())
    frame = frame.assign(meeting_code=frame["meeting"].map({m: i for i, m in enumerate(meetings)}))
    return frame, len(meetings)


@pytest.mark.parametrize("seed", [0, 1])
def test_pearson_resamples_match_a_direct_loop(seed):
    frame, meetings = coded(responses(seed))
    boot = ClusterBootstrap(frame["meeting_code"].to_numpy(), meetings, resamples=300, seed=seed)
    mine = boot.pearson(frame["judge"].to_numpy(), frame["gold"].to_numpy())
    loop = np.array(
        [
            stats.pearsonr(f["judge"], f["gold"]).statistic
            for f in resample_frames(frame, boot, meetings)
        ]
    )
    np.testing.assert_allclose(mine[:-1], loop, rtol=0, atol=1e-10)
    assert mine[-1] == pytest.approx(
        stats.pearsonr(frame["judge"], frame["gold"]).statistic, abs=1e-12
    )
    result = clustered_correlation(boot, frame["judge"].to_numpy(), frame["gold"].to_numpy())
    assert result["ci95"] == pytest.approx(list(np.percentile(loop, [2.5, 97.5])), abs=1e-10)
    assert result["clusters"] == meetings and result["undefined_resamples"] == 0


def test_resamples_draw_meetings_not_responses():
    frame, meetings = coded(responses(3))
    boot = ClusterBootstrap(frame["meeting_code"].to_numpy(), meetings, resamples=50, seed=3)
    sizes = frame.groupby("meeting_code").size()
    totals = boot.sums(np.ones(len(frame)))[:-1, 0]
    assert list(totals) == [sizes.reindex(d).sum() for d in boot.draws]
    # a response-level bootstrap would keep the size fixed; meetings differ in size
    assert len(set(totals)) > 1


def test_undefined_resamples_are_left_out_and_counted():
    frame = pd.DataFrame(
        {
            "meeting": ["a"] * 5 + ["b"] * 5,
            "judge": [3.0] * 5 + [1, 2, 3, 4, 5],
            "gold": [4.0, 5, 6, 7, 8] + [2, 2, 4, 4, 5],
        }
    )
    frame, meetings = coded(frame)
    boot = ClusterBootstrap(frame["meeting_code"].to_numpy(), meetings, resamples=200, seed=1)
    mine = boot.pearson(frame["judge"].to_numpy(), frame["gold"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = np.array(
            [
                stats.pearsonr(f["judge"], f["gold"]).statistic
                for f in resample_frames(frame, boot, 2)
            ]
        )
    np.testing.assert_array_equal(np.isnan(mine[:-1]), np.isnan(loop))
    np.testing.assert_allclose(mine[:-1][~np.isnan(loop)], loop[~np.isnan(loop)], atol=1e-10)
    result = clustered_correlation(boot, frame["judge"].to_numpy(), frame["gold"].to_numpy())
    assert result["undefined_resamples"] == int(np.isnan(loop).sum()) > 0


@pytest.mark.parametrize(("judge", "seed"), [("judge", 0), ("weak", 1), ("weak", 4)])
def test_ranking_agreement_matches_a_direct_loop(judge, seed):
    frame, meetings = coded(responses(seed))
    names = sorted(frame["system"].unique())
    codes = frame["system"].map({n: i for i, n in enumerate(names)}).to_numpy()
    boot = ClusterBootstrap(frame["meeting_code"].to_numpy(), meetings, resamples=300, seed=seed)
    result = ranking_agreement(
        boot, frame[judge].to_numpy(), frame["gold"].to_numpy(), codes, names
    )
    taus, tops = [], []
    for f in resample_frames(frame, boot, meetings):
        means = f.groupby("system")[[judge, "gold"]].mean().reindex(names)
        taus.append(stats.kendalltau(means[judge], means["gold"], variant="b").statistic)
        # a top shared by two systems is no "same top" (there is no top system)
        tied = any((m >= m.max() - 1e-9).sum() > 1 for m in (means[judge], means["gold"]))
        tops.append(not tied and means[judge].idxmax() == means["gold"].idxmax())
    taus = np.array(taus)
    full = frame.groupby("system")[[judge, "gold"]].mean().reindex(names)
    expected_tau = stats.kendalltau(full[judge], full["gold"], variant="b").statistic
    assert result["kendall_tau"] == pytest.approx(expected_tau, abs=1e-12)
    finite = taus[np.isfinite(taus)]
    assert result["ci95"] == pytest.approx(list(np.percentile(finite, [2.5, 97.5])), abs=1e-12)
    assert result["top_same_probability"] == pytest.approx(np.mean(tops), abs=1e-12)
    assert result["judge_ranking"] == list(full[judge].sort_values(ascending=False).index)
    assert result["human_ranking"] == list(full["gold"].sort_values(ascending=False).index)


def test_missing_scores_are_left_out_as_a_direct_loop_drops_them():
    frame, meetings = coded(responses(6))
    rng = np.random.default_rng(6)
    frame.loc[rng.random(len(frame)) < 0.2, "judge"] = np.nan
    boot = ClusterBootstrap(frame["meeting_code"].to_numpy(), meetings, resamples=100, seed=6)
    mine = boot.pearson(frame["judge"].to_numpy(), frame["gold"].to_numpy())
    loop = [
        stats.pearsonr(*f[["judge", "gold"]].dropna().to_numpy().T).statistic
        for f in resample_frames(frame, boot, meetings)
    ]
    np.testing.assert_allclose(mine[:-1], loop, atol=1e-10)
    names = sorted(frame["system"].unique())
    codes = frame["system"].map({n: i for i, n in enumerate(names)}).to_numpy()
    result = ranking_agreement(
        boot, frame["judge"].to_numpy(), frame["gold"].to_numpy(), codes, names
    )
    both = frame.dropna(subset=["judge"]).groupby("system")[["judge", "gold"]].mean()
    expected = stats.kendalltau(both["judge"], both["gold"], variant="b").statistic
    assert result["kendall_tau"] == pytest.approx(expected)
