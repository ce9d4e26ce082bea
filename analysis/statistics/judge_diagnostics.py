"""Judge diagnostics beyond correlation: calibration against gold,
self-consistency over repeated samples, length bias controlling for quality,
and reliability per question type and answer position.

Each function returns JSON-ready values or analysis.statistics.stats.not_computable.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats
from scipy.optimize import isotonic_regression

from analysis.statistics.icc import icc_table
from analysis.statistics.stats import _finite, _mean_ci, not_computable

MIN_PAIRS = 3


def calibration(judge: np.ndarray, gold: np.ndarray) -> dict:
    """The isotonic map from judge score to expected gold score (pool adjacent
    violators over the judge's distinct scores, weighted by how many responses
    got each, as scikit-learn's IsotonicRegression), with the reliability
    table behind the plot: per judge score, N, the mean gold score and its 95%
    t-interval. `calibration_error` is the N-weighted mean distance between a
    judge score and the mean gold score of the responses that got it (on the
    1-10 scale; 0 for a judge whose score is the expected gold score);
    `rmse_raw` and `rmse_calibrated` compare the judge's scores and the mapped
    ones with gold, response by response (in-sample: the map minimises the
    squared error on these very responses, so it is optimistic)."""
    judge, gold = np.asarray(judge, float), np.asarray(gold, float)
    if len(judge) < MIN_PAIRS:
        return not_computable(f"{len(judge)} responses scored by both; at least 3 are needed")
    levels, index, counts = np.unique(judge, return_inverse=True, return_counts=True)
    if len(levels) < 2:
        return not_computable("the judge gives one score everywhere: nothing to map")
    means = np.bincount(index, weights=gold) / counts
    fitted = isotonic_regression(means, weights=counts.astype(float), increasing=True).x
    table = []
    for level, n, fit in zip(levels, counts, fitted, strict=True):
        cell = _mean_ci(gold[judge == level])
        table.append(
            {
                "judge_score": float(level),
                "n": int(n),
                "mean_gold": cell["mean"],
                "ci95": cell.get("ci95"),
                "calibrated": float(fit),
            }
        )
    return {
        "n": int(len(judge)),
        "map": table,
        "calibration_error": float(np.sum(counts * np.abs(means - levels)) / len(judge)),
        "rmse_raw": float(np.sqrt(np.mean((gold - judge) ** 2))),
        "rmse_calibrated": float(np.sqrt(np.mean((gold - fitted[index]) ** 2))),
    }


def self_consistency(table: pd.DataFrame) -> dict:
    """For evaluators scored with several seeds (a judging run with k samples
    at temperature > 0): per response, the spread of its samples (sample
    standard deviation); the share of responses whose samples differ; and the
    agreement of the judge with itself as one-way ICCs over the responses with
    the most common number of samples (samples are exchangeable, so the
    one-way forms: ICC(1,1) for one sample, ICC(1,k) for the mean of k)."""
    seeded = (table["rater"].to_numpy() == "") & table["judgment_seed"].notna().to_numpy()
    judged = table.loc[seeded, ["evaluator", "response_id", "judgment_seed", "score"]]
    out: dict = {}
    for evaluator in sorted(str(e) for e in judged["evaluator"].unique()):
        rows = judged[judged["evaluator"] == evaluator]
        if rows.empty:
            continue
        samples = (
            rows.groupby(["response_id", "judgment_seed"], observed=True, sort=True)["score"]
            .mean()
            .reset_index()
        )
        per_response = samples.groupby("response_id")["score"]
        k = per_response.size()
        repeated = k[k >= 2]
        if repeated.empty:
            continue
        spread = per_response.std(ddof=1)[repeated.index]
        k_common = int(repeated.mode().max())
        complete = samples[samples["response_id"].isin(repeated.index[repeated == k_common])]
        matrix = complete["score"].to_numpy(float).reshape(-1, k_common)
        entry: dict = {
            "responses": int(len(repeated)),
            "samples_per_response": [int(repeated.min()), int(repeated.max())],
            "mean_spread": float(spread.mean()),
            "max_spread": float(spread.max()),
            "share_differing": float((spread > 0).mean()),
        }
        try:
            forms = {row.form: row.as_dict() for row in icc_table(matrix)}
            entry["icc"] = {
                "responses": int(matrix.shape[0]),
                "samples": k_common,
                "forms": [forms["ICC(1,1)"], forms["ICC(1,k)"]],
            }
        except ValueError as error:
            entry["icc"] = not_computable(str(error))
        out[evaluator] = entry
    if not out:
        return not_computable(
            "one sample per response: a judging run with several seeds at temperature > 0 "
            "gives repeated samples"
        )
    return out


def partial_correlation(x: np.ndarray, y: np.ndarray, covariate: np.ndarray) -> dict:
    """Pearson correlation of x and y with the covariate partialled out of both,
    its two-sided p-value (t with n - 3 degrees of freedom) and its Fisher-z 95%
    interval (standard error 1 / sqrt(n - 4)), as pingouin.partial_corr."""
    x, y, c = (np.asarray(v, float) for v in (x, y, covariate))
    n = len(x)
    if n < 5:
        return not_computable(f"{n} responses; at least 5 are needed")
    if min(np.ptp(x), np.ptp(y), np.ptp(c)) == 0:
        return not_computable("a variable is constant (zero variance)")
    r_xy, r_xc, r_yc = (np.corrcoef(a, b)[0, 1] for a, b in ((x, y), (x, c), (y, c)))
    denominator = np.sqrt((1 - r_xc**2) * (1 - r_yc**2))
    if denominator == 0:
        return not_computable("the covariate explains one of the variables entirely")
    r = float(np.clip((r_xy - r_xc * r_yc) / denominator, -1, 1))
    dof = n - 3
    if np.isclose(r**2, 1):
        p = 0.0
    else:
        t = r * np.sqrt(dof / (1 - r**2))
        p = float(2 * special.stdtr(dof, -abs(t)))
    z, se = np.arctanh(r), 1 / np.sqrt(n - 1 - 3)
    return {
        "r": r,
        "p": _finite(p),
        "n": n,
        "ci95": [
            _finite(np.tanh(z - 1.959963984540054 * se)),
            _finite(np.tanh(z + 1.959963984540054 * se)),
        ],
    }


def length_bias(judge: np.ndarray, gold: np.ndarray, length: np.ndarray) -> dict:
    """Does the judge reward longer answers beyond their quality? The partial
    correlation of the judge's score with the answer's length in characters,
    controlling for the gold score (0: no length bias)."""
    return partial_correlation(judge, length, gold)


def _category(x: np.ndarray, y: np.ndarray) -> dict:
    """N, Pearson r, mean absolute error and mean bias of judge x against gold y."""
    entry: dict = {
        "n": int(len(x)),
        "mae": float(np.mean(np.abs(x - y))),
        "bias": float(np.mean(x - y)),
    }
    if len(x) >= MIN_PAIRS and np.ptp(x) > 0 and np.ptp(y) > 0:
        entry["r"] = float(stats.pearsonr(x, y).statistic)
    else:
        entry["r"] = None
    return entry


def thirds(values: np.ndarray, unit: str) -> tuple[np.ndarray, list[str]]:
    """Each value's third ("short", "middle", "long": 0, 1, 2) and the thirds'
    names with their ranges: the cuts at the 1/3 and 2/3 quantiles of the
    values (a third may be empty where values tie)."""
    values = np.asarray(values, dtype=float)
    low, high = np.quantile(values, [1 / 3, 2 / 3])
    names = [
        f"short (up to {low:,.0f} {unit})",
        f"middle ({low:,.0f}-{high:,.0f} {unit})",
        f"long (over {high:,.0f} {unit})",
    ]
    return np.where(values <= low, 0, np.where(values <= high, 1, 2)), names


def _by_code(codes: np.ndarray, names: list[str], x: np.ndarray, y: np.ndarray) -> dict:
    out = {}
    for code, name in enumerate(names):
        mask = codes == code
        if mask.any():
            out[name or "(none)"] = _category(x[mask], y[mask])
    return out


def reliability_by(
    frame: pd.DataFrame, judge: str, gold: str, input_words: dict[str, int] | None = None
) -> dict:
    """Per question type and per answer position (the paper's long-context
    axes), per third of answer length (characters) and, given each meeting's
    length in words, per third of input length (the meetings in three groups):
    N, Pearson r with gold, mean absolute error and mean bias (judge - gold)
    of the judge on the responses of that kind."""
    both = frame[[judge, gold]].notna().all(axis=1).to_numpy()
    scored = frame[both]
    x, y = scored[judge].to_numpy(float), scored[gold].to_numpy(float)
    out: dict = {}
    for column in ("question_type", "answer_position"):
        series = scored[column]
        if isinstance(series.dtype, pd.CategoricalDtype):  # the report's table: codes at hand
            codes = series.cat.codes.to_numpy()
            names = [str(c) for c in series.cat.categories]
        else:
            found, codes = np.unique(series.astype(str).to_numpy(), return_inverse=True)
            names = [str(n) for n in found]
        out[column] = _by_code(codes, names, x, y)
    if len(scored) and "response_chars" in scored:
        codes, names = thirds(scored["response_chars"].to_numpy(float), "chars")
        out["answer_length"] = _by_code(codes, names, x, y)
    if input_words and len(scored) and "meeting" in scored:
        meetings = scored["meeting"].astype(str).to_numpy()
        present = sorted(m for m in set(meetings) if m in input_words)
        if present:
            third_of, names = thirds(np.array([input_words[m] for m in present]), "words")
            lookup = dict(zip(present, third_of.tolist(), strict=True))
            codes = np.array([lookup.get(m, -1) for m in meetings])
            out["input_length"] = _by_code(codes, names, x, y)
    return out
