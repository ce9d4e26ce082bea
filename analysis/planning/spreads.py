"""How unsure the judges are of each response: the spread of several
judges' scores, or of one judge's repeated samples. Read by the planner's
"select items for humans" and by the deferring judge."""

from __future__ import annotations

import pandas as pd


def spread_by_response(frame: pd.DataFrame, judges: list[str]) -> pd.Series:
    """Per response, the standard deviation (ddof 0) of the judges' scores,
    over responses with 2 or more of them."""
    scores = frame[judges]
    known = scores.notna().sum(axis=1)
    return scores.std(axis=1, ddof=0)[known >= 2]


def sample_spread(table: pd.DataFrame, judges: list[str]) -> pd.Series:
    """Per response, the mean over judges of the standard deviation (ddof 1)
    of the judge's repeated samples (seeds), over responses with a judge
    sampled twice or more."""
    rows = table[table["evaluator"].isin(judges) & (table["rater"] == "")]
    rows = rows[rows["judgment_seed"].notna()]
    samples = (
        rows.groupby(["response_id", "evaluator", "judgment_seed"], observed=True)["score"]
        .mean()
        .reset_index()
    )
    spread = samples.groupby(["response_id", "evaluator"], observed=True)["score"].std(ddof=1)
    return spread.dropna().groupby(level=0).mean()
