"""Pairwise judges that defer (analysis.report.deferral's guarantee, on pairs).

A pairwise judge's outcome on a pair (a response against the baseline's) is
its consistent outcome (both orders agree, else a tie; several seeds: their
majority), as the report counts it. Its confidence is how united the votes
behind that outcome are; the "spread" is the share of them that differ from it:
- an LLM pairwise judge's votes are its verdicts, each order and seed (both
  orders agree: spread 0; a flip: 1);
- a panel of pairwise judges' votes are its members' own outcomes on the pair.
A judge run with token log-probabilities (every verdict has one) weighs each
vote by the probability its tokens gave it: the spread is 1 minus the mean,
over its votes, of that probability for a vote that agrees with the outcome
and 0 for one that does not. A flip still counts as full dissent (each order
may be sure of itself); of two consistent pairs, the one the tokens were
surer of is kept first.
The judge agrees with the humans on a pair when its outcome (win, tie or
loss) is the majority outcome of the human pairwise study with the most pairs
in the selection. The threshold is chosen on half of the labelled meetings
and checked on the others, exactly as for judges of scores; the coverage
harness replays it (rows_deferral, "pairwise").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.deferral import guarantee, not_computable
from analysis.report.panels import PANEL_KIND

PAIR = ["response_id", "opponent_id"]
TOKEN_SIGNAL = (
    "the probability its tokens gave each verdict (the server's token log-probabilities), "
    "counted for the verdicts that agree with its consistent outcome (a flip counts 0); "
    "its spread is 1 minus their mean over orders and seeds"
)


def dissent(
    verdicts: pd.DataFrame, outcomes: pd.DataFrame, members: dict[str, list[str]]
) -> tuple[pd.Series, set[str]]:
    """Per judge and pair: the share of its votes that differ from its outcome
    (`outcomes`: analysis.statistics.pairwise.judge_pair_outcomes), weighed by
    the votes' token probabilities for the judges that have them all; and
    the names of those judges."""
    from analysis.statistics.pairwise import judge_rows
    from analysis.statistics.pairwise import outcomes as verdict_outcomes

    judges = judge_rows(verdicts)
    own = judges[judges["evaluator_kind"].astype(str) != PANEL_KIND]
    if "probability" not in own:
        own = own.assign(probability=np.nan)
    votes = [
        own.assign(vote=verdict_outcomes(own) if len(own) else [])[
            ["evaluator", *PAIR, "vote", "probability"]
        ]
    ]
    by_member = outcomes.set_index("evaluator")
    for panel, names in members.items():
        present = [m for m in names if m in by_member.index]
        if not present:
            continue
        rows = by_member.loc[present, [*PAIR, "outcome"]].rename(columns={"outcome": "vote"})
        votes.append(rows.reset_index(drop=True).assign(evaluator=panel, probability=np.nan))
    voted = pd.concat(votes, ignore_index=True).merge(
        outcomes[["evaluator", *PAIR, "outcome"]], on=["evaluator", *PAIR]
    )
    agrees = (voted["vote"] == voted["outcome"]).to_numpy()
    probability = pd.to_numeric(voted["probability"], errors="coerce").to_numpy(float)
    complete = pd.Series(np.isfinite(probability)).groupby(voted["evaluator"].to_numpy()).all()
    # a judge with a probability for some verdicts only keeps the plain share: a
    # signal for some pairs only would defer the others for want of it
    by_tokens = {str(name) for name, whole in complete.items() if whole and name not in members}
    weighed = voted["evaluator"].astype(str).isin(by_tokens).to_numpy()
    voted["support"] = np.where(weighed, np.where(agrees, probability, 0.0), agrees)
    return 1.0 - voted.groupby(["evaluator", *PAIR])["support"].mean(), by_tokens


def pairwise_deferral(
    verdicts: pd.DataFrame, rs: pd.DataFrame, members: dict[str, list[str]]
) -> dict[str, dict]:
    """Per pairwise judge (and panel of them, `members` by panel): the deferring
    judge's thresholds and their check against the human pairwise study with
    the most pairs; {} without a human pairwise study."""
    from analysis.statistics.pairwise import (
        judge_pair_outcomes,
        majority_outcomes,
        study_with_most_pairs,
    )

    if verdicts.empty:
        return {}
    humans = majority_outcomes(verdicts)
    if humans.empty:
        return {}
    study = study_with_most_pairs(humans)
    labels = humans[humans["evaluator"] == study].set_index(PAIR)["outcome"]
    outcomes = judge_pair_outcomes(verdicts)
    if outcomes.empty:
        return {}
    spreads, by_tokens = dissent(verdicts, outcomes, members)
    meetings = rs.drop_duplicates("response_id").set_index("response_id")["meeting"].astype(str)
    out: dict[str, dict] = {}
    for judge, group in outcomes.groupby("evaluator"):
        judge = str(judge)
        mine = group.set_index(PAIR)["outcome"]
        spread = spreads.loc[judge].reindex(mine.index)
        labelled = mine.index.isin(labels.index)
        if not labelled.any():
            out[judge] = not_computable(f"{judge}: no pair it judged has a verdict of {study}")
            continue
        ids = mine.index[labelled]
        disagrees = mine.loc[ids].to_numpy() != labels.reindex(ids).to_numpy()
        their_meetings = meetings.reindex(ids.get_level_values("response_id")).to_numpy()
        if pd.isna(their_meetings).any():  # a pair outside the report's responses
            keep = ~pd.isna(their_meetings)
            ids, disagrees, their_meetings = ids[keep], disagrees[keep], their_meetings[keep]
        found = guarantee(
            judge,
            -spread.loc[ids].to_numpy(float),
            disagrees,
            their_meetings.astype(str),
            -spread.to_numpy(float),
        )
        if found.get("computable") is False:
            out[judge] = found
            continue
        signal = (
            f"the share of its members ({', '.join(members[judge])}) whose outcome differs "
            "from the panel's"
            if judge in members
            else TOKEN_SIGNAL
            if judge in by_tokens
            else "the share of its verdicts (orders and seeds) whose outcome differs from its "
            "consistent outcome"
        )
        out[judge] = {
            "signal": signal,
            "tolerance": None,
            "compared_with": study,
            "spread": "tokens" if judge in by_tokens else "dissent",
        } | found
    return out


def deferral_with_pairwise(scored: dict, pairwise: dict) -> dict:
    """The report's `deferral`: the judges of scores, then the pairwise ones; a
    reason only when neither has any."""
    if not pairwise:
        return scored
    if scored.get("computable") is False:
        return pairwise
    return scored | {name: found for name, found in pairwise.items() if name not in scored}
