"""The statistics of an agreement report, on the tidy tables of analysis.report.scores.

Every function returns plain, JSON-ready values. Where a statistic cannot be
computed (too few data, a single rater, constant scores) it returns
`{"computable": False, "reason": ...}` instead of raising or a bare NaN.
Statistics come from scipy, pingouin and krippendorff; the one computed here
(ICC, in analysis.statistics.icc) is checked against pingouin.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats

from analysis.statistics.icc import icc_table, one_way_unbalanced
from analysis.statistics.ratings import individual_ratings

CORRELATION_METHODS = ("pearson", "spearman", "kendall")
MIN_PAIRS = 3


def not_computable(reason: str) -> dict:
    return {"computable": False, "reason": reason}


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


# --- Means ------------------------------------------------------------------------------------


def mean_scores(rs: pd.DataFrame) -> tuple[dict, dict]:
    """mean_scores[system][evaluator] and the number of responses behind each (Table 4)."""
    grouped = rs.groupby(["system", "evaluator"], observed=True)["score"]
    means, counts = grouped.mean(), grouped.size()
    out: dict = {}
    n: dict = {}
    for (system, evaluator), value in means.items():
        out.setdefault(system, {})[evaluator] = float(value)
        n.setdefault(system, {})[evaluator] = int(counts[(system, evaluator)])
    return out, n


def setting_means(rs: pd.DataFrame) -> dict:
    """Per evaluator and system, the mean in each setting mode/version/split, and
    per mode/version the mean of the split means (Table 2)."""
    out: dict = {}
    grouped = rs.groupby(
        ["evaluator", "system", "mode", "dataset_version", "split"], observed=True
    )["score"].mean()
    for (evaluator, system, mode, version, split), value in grouped.items():
        out.setdefault(evaluator, {}).setdefault(system, {})[f"{mode}/{version}/{split}"] = float(
            value
        )
    for systems in out.values():
        for settings in systems.values():
            by_pair: dict = {}
            for key, value in list(settings.items()):
                mode, version, _ = key.split("/")
                by_pair.setdefault(f"{mode}/{version}", []).append(value)
            for pair, values in by_pair.items():
                if len(values) > 1:
                    settings[f"{pair}/mean"] = float(np.mean(values))
    return out


def seed_summary(rs: pd.DataFrame) -> dict:
    """Over seeded runs of the same setting: mean and sample standard deviation
    of the run means (Table 8)."""
    seeded = rs[rs["run_seed"].notna()]
    if seeded.empty:
        return not_computable("no seeded runs in the selection (imported runs have no seed)")
    run_means = seeded.groupby(
        ["evaluator", "system", "mode", "dataset_version", "split", "run_seed"], observed=True
    )["score"].mean()
    out: dict = {}
    for (evaluator, system, mode, version, split), values in run_means.groupby(
        level=[0, 1, 2, 3, 4], observed=True
    ):
        key = f"{mode}/{version}/{split}"
        entry = {
            "seeds": sorted(int(s) for s in values.index.get_level_values(-1)),
            "mean": float(values.mean()),
        }
        entry["std"] = float(values.std(ddof=1)) if len(values) > 1 else None
        if len(values) < 2:
            entry["note"] = "one seed: no standard deviation"
        out.setdefault(evaluator, {}).setdefault(system, {})[key] = entry
    return out


# --- Correlations -----------------------------------------------------------------------------


def _pair_statistics(x: np.ndarray, y: np.ndarray, method: str, bootstrap: int, seed: int) -> dict:
    if len(x) < MIN_PAIRS:
        return not_computable(f"{len(x)} paired scores; at least {MIN_PAIRS} are needed")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return not_computable(
            "one of the evaluators gives the same score everywhere (zero variance)"
        )
    if method == "pearson":
        result = stats.pearsonr(x, y)
        ci = result.confidence_interval(0.95)  # Fisher z
        entry = {
            "r": float(result.statistic),
            "p": float(result.pvalue),
            "n": len(x),
            "ci95": [_finite(ci.low), _finite(ci.high)],
            "ci_method": "Fisher z",
        }
    elif method == "spearman":
        result = stats.spearmanr(x, y)
        entry = {"r": float(result.statistic), "p": float(result.pvalue), "n": len(x)}
    else:
        result = stats.kendalltau(x, y, variant="b")
        entry = {"r": float(result.statistic), "p": float(result.pvalue), "n": len(x)}
    if bootstrap:

        def statistic(a: np.ndarray, b: np.ndarray) -> float:
            if method == "pearson":
                return stats.pearsonr(a, b).statistic
            if method == "spearman":
                return stats.spearmanr(a, b).statistic
            return stats.kendalltau(a, b, variant="b").statistic

        boot = stats.bootstrap(
            (x, y),
            statistic,
            paired=True,
            vectorized=False,
            n_resamples=bootstrap,
            rng=np.random.default_rng(seed),
            method="percentile",
        )
        entry["bootstrap_ci95"] = [
            _finite(boot.confidence_interval.low),
            _finite(boot.confidence_interval.high),
        ]
        entry["bootstrap_resamples"] = bootstrap
    return entry


def correlations(wide: pd.DataFrame, bootstrap: int = 0, seed: int = 0) -> dict:
    """Every pair of columns of `wide` (rows: responses or systems; columns:
    evaluators), on the rows both scored. Returns [method][a][b] -> entry."""
    out: dict = {method: {} for method in CORRELATION_METHODS}
    columns = list(wide.columns)
    for a, b in itertools.combinations(columns, 2):
        both = wide[[a, b]].dropna()
        x, y = both[a].to_numpy(float), both[b].to_numpy(float)
        for method in CORRELATION_METHODS:
            entry = _pair_statistics(x, y, method, bootstrap, seed)
            out[method].setdefault(a, {})[b] = entry
            out[method].setdefault(b, {})[a] = entry
    for method in CORRELATION_METHODS:
        for a in columns:
            out[method].setdefault(a, {})[a] = {"r": 1.0, "n": int(wide[a].notna().sum())}
    return out


def correlation_values(detailed: dict) -> dict:
    """correlations[method][a][b] -> r (None where not computable)."""
    return {
        method: {a: {b: entry.get("r") for b, entry in row.items()} for a, row in table.items()}
        for method, table in detailed.items()
    }


# --- Agreement between raters -----------------------------------------------------------------


def rater_agreement(table: pd.DataFrame, ratings: dict | None = None) -> dict:
    """ICC per meeting and overall, and Krippendorff's alpha, for evaluators
    with individual raters (human studies, or imported per-rater scores).

    Vectorised with numpy: one sort, then slices per meeting, so that a
    million ratings take about a second."""
    # one rating per rater and response (a rater's repeated judgments: their mean)
    ratings = individual_ratings(table) if ratings is None else ratings
    out: dict = {}
    for evaluator in sorted(str(e) for e in table["evaluator"].unique()):
        rows = ratings.get(evaluator)
        if rows is None:
            out[evaluator] = not_computable(
                "one score per response (no individual raters): nothing to measure agreement on"
            )
            continue
        out[evaluator] = {
            "per_meeting": _per_meeting_icc(rows),
            "overall": _overall_icc(rows),
            "krippendorff_alpha_interval": _alpha(rows),
        }
    return out


def _local_index(meeting: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by meeting: the index of each row's key among its
    meeting's distinct keys (0, 1, ... in order of appearance), and how many
    distinct keys each meeting has. Hashing, no sort: the (meeting, key) pairs
    of a meeting get consecutive numbers, so a key's local index is its
    pair's number minus the meeting's first."""
    key = pd.factorize(key)[0].astype(np.int64)
    pair = pd.factorize(meeting.astype(np.int64) * (int(key.max()) + 1) + key)[0]
    starts = np.r_[0, np.flatnonzero(meeting[1:] != meeting[:-1]) + 1]
    first = np.repeat(pair[starts], np.diff(np.r_[starts, len(meeting)]))
    local = pair - first
    per_meeting = np.zeros(int(meeting.max()) + 1, dtype=np.int64)
    np.maximum.at(per_meeting, meeting, local + 1)
    return local, per_meeting


def _per_meeting_icc(rows: pd.DataFrame) -> dict:
    """Rows sorted by meeting. Items and raters are numbered within each
    meeting for all meetings at once; each meeting's matrix is then a slice."""
    meeting, names = pd.factorize(rows["meeting"].to_numpy())  # in order: rows are sorted
    item_index, items = _local_index(meeting, rows["response_id"].to_numpy())
    rater_index, raters = _local_index(meeting, rows["rater"].to_numpy())
    scores = rows["score"].to_numpy(float)
    bounds = np.flatnonzero(meeting[1:] != meeting[:-1]) + 1
    out = {}
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(rows)], strict=True):
        m = meeting[start]
        matrix = np.full((items[m], raters[m]), np.nan)
        matrix[item_index[start:stop], rater_index[start:stop]] = scores[start:stop]
        out[str(names[m])] = _meeting_icc(matrix)
    return out


def _meeting_icc(matrix: np.ndarray) -> dict:
    method = "two-way ANOVA, all raters of the meeting"
    if matrix.shape[1] < 2:
        return not_computable("a single rater")
    incomplete = np.isnan(matrix).any(axis=0)
    if incomplete.any():
        matrix = matrix[:, ~incomplete]
        method += f"; left out {int(incomplete.sum())} rater(s) who did not rate every item"
        if matrix.shape[1] < 2:
            return not_computable("fewer than 2 raters rated every item of the meeting")
    try:
        forms = icc_table(matrix)
    except ValueError as error:
        return not_computable(str(error))
    return {
        "method": method,
        "items": int(matrix.shape[0]),
        "raters": int(matrix.shape[1]),
        "forms": [r.as_dict() for r in forms],
    }


def _overall_icc(rows: pd.DataFrame) -> dict:
    """Raters differ between meetings: relabel them as slots within each item.
    Only the one-way forms are valid then."""
    order = np.argsort(rows["response_id"].to_numpy(), kind="stable")
    _, groups, sizes = np.unique(
        rows["response_id"].to_numpy()[order], return_inverse=True, return_counts=True
    )
    scores = rows["score"].to_numpy(float)[order]
    if sizes.max() < 2:
        return not_computable("a single rater per item")
    try:
        if sizes.min() == sizes.max():
            forms = [
                r.as_dict()
                for r in icc_table(scores.reshape(len(sizes), sizes[0]))
                if r.form in ("ICC(1,1)", "ICC(1,k)")
            ]
            return {
                "method": "one-way ANOVA, raters relabelled as slots within each item",
                "items": int(len(sizes)),
                "raters_per_item": int(sizes[0]),
                "forms": forms,
            }
        result = one_way_unbalanced(scores, groups)
    except ValueError as error:
        return not_computable(str(error))
    forms = [{"form": form, **result[form]} for form in ("ICC(1,1)", "ICC(1,k)")]
    return {
        "method": "one-way ANOVA for unbalanced data (k0 = "
        f"{result['k0']:.3f}), raters relabelled as slots within each item",
        "items": int(len(sizes)),
        "raters_per_item": [int(sizes.min()), int(sizes.max())],
        "forms": forms,
    }


def interval_alpha(counts: np.ndarray, values: np.ndarray) -> float:
    """Krippendorff's alpha (interval metric) from the units x values count
    matrix: the coincidence matrix is sum over units of
    (n_u n_u' - diag(n_u)) / (m_u - 1), over units with 2 or more values, one
    (values x units) @ (units x values) product. The krippendorff package's
    value_counts path builds a units x values x values array for the same
    matrix (0.7 s at 10^5 units); tests check the two agree."""
    counts = np.asarray(counts, float)
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2]
    weights = 1.0 / (counts.sum(axis=1) - 1)
    coincidences = (counts * weights[:, None]).T @ counts
    coincidences -= np.diag((counts * weights[:, None]).sum(axis=0))
    per_value = coincidences.sum(axis=1)
    total = per_value.sum()
    distance = (values[:, None] - values[None, :]) ** 2
    expected = (per_value[:, None] * per_value[None, :] * distance).sum()
    if total <= 1 or expected == 0:
        raise ValueError("no pairable values, or no variation among them")
    return float(1 - (total - 1) * (coincidences * distance).sum() / expected)


def _alpha(rows: pd.DataFrame) -> dict:
    """Krippendorff's alpha (interval) from the units x values count matrix,
    which needs no raters x units matrix (that one would hold a cell for every
    rater of every meeting)."""
    raters = int(pd.unique(rows["rater"]).size)
    if raters < 2:
        return not_computable("a single rater")
    value_index, values = pd.factorize(rows["score"].to_numpy(float), sort=True)
    if len(values) == 1:
        return not_computable("every rating is the same (zero variance)")
    unit_index, units = pd.factorize(rows["response_id"].to_numpy())
    counts = np.bincount(
        unit_index * len(values) + value_index, minlength=len(units) * len(values)
    ).reshape(len(units), len(values))
    try:
        alpha = interval_alpha(counts, np.asarray(values, float))
    except ValueError as error:
        return not_computable(str(error))
    return {"alpha": _finite(alpha), "raters": raters, "units": int(len(units))}


# --- Score bins against gold ------------------------------------------------------------------


def gold_bins(wide: pd.DataFrame, gold: str) -> dict:
    """For each gold score bin 1-10: its size and, for every other evaluator,
    the mean and 95% t-interval of their scores on the bin's responses (Fig. 2a)."""
    if gold not in wide.columns:
        return not_computable(f"no {gold} scores in the selection")
    bins = wide[gold].round().clip(1, 10)
    out: dict = {"gold": gold, "bins": {}}
    for level in range(1, 11):
        in_bin = wide[bins == level]
        entry: dict = {"n": int(len(in_bin)), "evaluators": {}}
        for evaluator in wide.columns:
            if evaluator == gold:
                continue
            values = in_bin[evaluator].dropna().to_numpy(float)
            entry["evaluators"][evaluator] = _mean_ci(values)
        out["bins"][str(level)] = entry
    out["levels"] = {
        evaluator: distinct_levels(wide[[gold, evaluator]].dropna(), gold, evaluator)
        for evaluator in wide.columns
        if evaluator != gold
    }
    return out


def _mean_ci(values: np.ndarray) -> dict:
    if len(values) == 0:
        return not_computable("no responses in this bin")
    mean = float(values.mean())
    if len(values) < 2:
        return {"n": 1, "mean": mean, "ci95": None, "note": "one response: no interval"}
    sem = stats.sem(values)
    if sem == 0:
        return {"n": len(values), "mean": mean, "ci95": [mean, mean]}
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=sem)
    return {"n": len(values), "mean": mean, "ci95": [float(low), float(high)]}


def distinct_levels(
    pairs: pd.DataFrame, gold: str, judge: str, alpha: float = 0.05, min_step: float = 1.0
) -> dict:
    """How many quality levels a judge separates along the gold scale.

    Walking up the gold bins, a bin starts a new level when the judge scores it
    at least `min_step` points (one step of the 10-point rubric) higher than the
    current level's bins pooled, and significantly so (one-tailed Welch t-test,
    p < alpha); otherwise it joins the level. The step keeps large bins from
    splitting on differences of a few tenths that no reader would call a level.
    On the paper's data this finds GPT-4's three clusters, gold [1,2], [3,5]
    and [6,10] (Section 6.2)."""
    bins = pairs[gold].round().clip(1, 10)
    groups = [(b, pairs.loc[bins == b, judge].to_numpy(float)) for b in range(1, 11)]
    groups = [(b, v) for b, v in groups if len(v)]
    if len(groups) < 2:
        return not_computable("fewer than two gold bins with responses")
    levels = [[groups[0]]]
    for level_bin, values in groups[1:]:
        pooled = np.concatenate([v for _, v in levels[-1]])
        step = values.mean() - pooled.mean()
        if len(values) < 2 or len(pooled) < 2:
            p = 1.0  # one response cannot make a level
        elif np.ptp(values) == 0 and np.ptp(pooled) == 0:
            p = 0.0 if step > 0 else 1.0  # no spread at all: the means say everything
        else:
            p = stats.ttest_ind(values, pooled, equal_var=False, alternative="greater").pvalue
        if step >= min_step and p < alpha:
            levels.append([(level_bin, values)])
        else:
            levels[-1].append((level_bin, values))
    return {
        "levels": len(levels),
        "gold_ranges": [[int(group[0][0]), int(group[-1][0])] for group in levels],
        "method": f"adjacent gold bins merged unless the judge scores the next one at least "
        f"{min_step:g} point higher than the current level (one-tailed Welch "
        f"t-test, p < {alpha:g})",
    }


# --- Question type and answer position --------------------------------------------------------


def breakdown(rs: pd.DataFrame) -> dict:
    """Mean per evaluator, system and question type / answer position (Tables 3, 9)."""
    out: dict = {}
    for column in ("question_type", "answer_position"):
        grouped = rs.groupby(["evaluator", "system", column], observed=True)["score"]
        means, counts = grouped.mean(), grouped.size()
        table: dict = {}
        for (evaluator, system, value), mean in means.items():
            table.setdefault(evaluator, {}).setdefault(system, {})[value or "(none)"] = {
                "mean": float(mean),
                "n": int(counts[(evaluator, system, value)]),
            }
        out[column] = table
    return out


def middle_position_welch(rs: pd.DataFrame) -> dict:
    """One-tailed Welch t-test per evaluator and system: do middle-position
    answers score lower than the others? (Table 10)"""
    out: dict = {}
    for (evaluator, system), group in rs.groupby(["evaluator", "system"], observed=True):
        middle = group.loc[group["answer_position"] == "M", "score"].to_numpy(float)
        other = group.loc[group["answer_position"] != "M", "score"].to_numpy(float)
        if len(middle) < 2 or len(other) < 2:
            entry = not_computable(
                f"{len(middle)} middle and {len(other)} other answers; "
                "at least 2 of each are needed"
            )
        elif np.ptp(np.concatenate([middle, other])) == 0:
            entry = not_computable("all scores are equal (zero variance)")
        elif np.ptp(middle) == 0 and np.ptp(other) == 0:
            entry = not_computable(
                "no variance within either group: the t statistic is "
                "undefined (compare the two means directly)"
            )
        else:
            test = stats.ttest_ind(middle, other, equal_var=False, alternative="less")
            entry = {
                "t": float(test.statistic),
                "p": float(test.pvalue),
                "mean_middle": float(middle.mean()),
                "mean_other": float(other.mean()),
                "n_middle": len(middle),
                "n_other": len(other),
            }
        out.setdefault(evaluator, {})[system] = entry
    return out


def differentiating_questions(rs: pd.DataFrame, question_pks: set[int]) -> dict:
    """The QA/Conv differentiating questions in single-turn QA, multi-turn QA and
    multi-turn Conv: the mean of the per-split means (Fig. 1)."""
    if not question_pks:
        return not_computable("no question differs between the QA and Conv versions here")
    subset = rs[rs["question_pk"].isin(question_pks)]
    if subset.empty:
        return not_computable("no response to a differentiating question in the selection")
    out: dict = {}
    per_split = subset.groupby(
        ["evaluator", "system", "mode", "dataset_version", "split"], observed=True
    )["score"].agg(["mean", "size"])
    for (evaluator, system, mode, version), group in per_split.groupby(
        level=[0, 1, 2, 3], observed=True
    ):
        out.setdefault(evaluator, {}).setdefault(system, {})[f"{mode}/{version}"] = {
            "mean_of_splits": float(group["mean"].mean()),
            "splits": {
                idx[-1]: {"mean": float(row["mean"]), "n": int(row["size"])}
                for idx, row in group.iterrows()
            },
        }
    return out


# --- Judge diagnostics ------------------------------------------------------------------------


def length_correlation(rs: pd.DataFrame) -> dict:
    """Does a judge reward longer answers? Pearson r of score and response length."""
    out = {}
    for evaluator, group in rs.groupby("evaluator", observed=True):
        x = group["response_chars"].to_numpy(float)
        y = group["score"].to_numpy(float)
        out[evaluator] = _pair_statistics(x, y, "pearson", 0, 0)
    return out


def pairwise_diagnostics(battles: pd.DataFrame) -> dict:
    """For pairwise judges, from one row per judged order: columns `pair`
    (the two responses, whatever the order), `order` (0 or 1) and `winner`
    ("first", "second" or "tie", by position). Flip rate: the share of pairs
    whose verdict changes with the order; first-position win rate: the share of
    verdicts won by the answer shown first."""
    if battles.empty:
        return not_computable("no pairwise judgments in the selection")
    decided = battles[battles["winner"] != "tie"]
    first_rate = float((decided["winner"] == "first").mean()) if len(decided) else None
    both = battles.pivot_table(index="pair", columns="order", values="winner", aggfunc="first")
    both = both.dropna()
    if both.empty or len(both.columns) < 2:
        return {
            "first_position_win_rate": first_rate,
            "flip_rate": not_computable("no pair was judged in both orders"),
        }
    # The same verdict in both orders means the winner moved with its answer:
    # "first" then "second". A flip is a verdict that sticks to the position.
    consistent = (
        ((both[0] == "first") & (both[1] == "second"))
        | ((both[0] == "second") & (both[1] == "first"))
        | ((both[0] == "tie") & (both[1] == "tie"))
    )
    return {
        "pairs": int(len(both)),
        "flip_rate": float(1 - consistent.mean()),
        "first_position_win_rate": first_rate,
        "verdicts": int(len(battles)),
    }
