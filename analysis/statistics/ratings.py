"""One rating per rater and response, per evaluator with individual raters:
the table that rater agreement (ICC, Krippendorff's alpha) and the judge-trust
tests (alt-test) read, made from the report's tidy score table
(analysis.report.scores)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def individual_ratings(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per evaluator with individual raters: one rating per (response, rater)
    (a rater's repeated judgments of a response, e.g. over seeds: their mean),
    columns meeting, response_id, rater, score, sorted by meeting and response.

    Integer codes and one stable sort, never a groupby on strings, unless some
    rater judged a response twice: 10^6 ratings in a fraction of a second."""
    if table.empty:
        return {}
    evaluators = table["evaluator"].astype("category")
    raters = table["rater"].astype("category")
    meetings = table["meeting"].astype("category")
    rated = raters.to_numpy() != ""
    rater_codes = raters.cat.codes.to_numpy()
    meeting_codes = meetings.cat.codes.to_numpy()
    evaluator_codes = evaluators.cat.codes.to_numpy()
    response = table["response_id"].to_numpy()
    score = table["score"].to_numpy(float)
    out = {}
    for code, name in enumerate(evaluators.cat.categories):
        rows = np.flatnonzero(rated & (evaluator_codes == code))
        if not len(rows):
            continue
        r, k, m, s = response[rows], rater_codes[rows], meeting_codes[rows], score[rows]
        key = r.astype(np.int64) * (len(raters.cat.categories) + 1) + k
        if pd.Index(key).has_duplicates:
            means = pd.DataFrame({"key": key, "m": m, "r": r, "k": k, "s": s}).groupby(
                "key", sort=False
            )
            first = means[["m", "r", "k"]].first()
            r, k, m = first["r"].to_numpy(), first["k"].to_numpy(), first["m"].to_numpy()
            s = means["s"].mean().to_numpy()
        order = np.lexsort((k, r, m))
        out[str(name)] = pd.DataFrame(
            {
                "meeting": pd.Categorical.from_codes(m[order], meetings.cat.categories),
                "response_id": r[order],
                "rater": pd.Categorical.from_codes(k[order], raters.cat.categories),
                "score": s[order],
            }
        )
    return out
