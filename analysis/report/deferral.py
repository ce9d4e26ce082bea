"""The report's deferring judges (analysis.statistics.deferral): for each judge
with a confidence signal, the threshold that guarantees its agreement with the
reference on the responses it keeps, checked on meetings it was not chosen on.

A judge's confidence in a response is minus the spread of its scores: the
standard deviation of its repeated samples (a judging run with several seeds
at temperature > 0, as the items-for-humans planner reads it), or, for a
judge panel, of its members' scores; for a judge run with token
log-probabilities, 1 minus the probability its tokens gave its score
(judging.token_probability). It agrees with the reference on a
response when its score is within TOLERANCE points of the reference's.

The labelled responses are split by meeting: the meetings in sorted order,
every other one to choose the threshold on (calibration), the rest held out.
Humans label meetings, so each of the threshold's tests is also a clustered
score test over the calibration meetings (analysis.statistics.deferral;
without clustering the coverage harness finds the guarantee broken on
MT-bench and SummEval).
The report shows, per target agreement 1 - alpha, the threshold, the share of
held-out responses the judge keeps, its agreement on them (with a
Clopper-Pearson 95% interval), and how many responses of the selection it
defers: those are the ones a human should rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.planning.spreads import sample_spread, spread_by_response
from analysis.report.panels import PANEL_KIND
from analysis.report.scope import Scope
from analysis.report.selection import DEFERRAL_ALPHAS
from analysis.statistics import deferral

# points of the 1-10 scale: on the paper's test2 responses the crowd's mean
# score is within 2 points of the expert's on 81% of them, within 1 on 54%
TOLERANCE = 2.0
DELTA = 0.05
ALPHAS = DEFERRAL_ALPHAS


def not_computable(reason: str) -> dict:
    return {"computable": False, "reason": reason}


TOKEN_SIGNAL = (
    "the probability its tokens gave the score it wrote (the server's token log-probabilities; "
    "the mean over its samples); its spread is 1 minus that"
)


def token_spread(table: pd.DataFrame, judge: str) -> pd.Series | None:
    """Per response, 1 - the mean probability the judge's tokens gave its
    scores (judging.token_probability), when every judgment of the judge in
    the table has one; None otherwise (a judge run without logprobs, or a
    server that gave none for some answers: a signal for some responses only
    would defer the others for want of it)."""
    if "judgment_probability" not in table:
        return None
    mine = table[(table["evaluator"] == judge).to_numpy()]
    probability = mine["judgment_probability"].to_numpy(float)
    if len(mine) == 0 or not np.isfinite(probability).all():
        return None
    means = pd.Series(probability, index=mine["response_id"].to_numpy()).groupby(level=0).mean()
    return 1.0 - means


def confidence_signal(
    scope: Scope, judge: str, rs_wide: pd.DataFrame, seeded: pd.DataFrame
) -> tuple[pd.Series, str]:
    """Per response, minus the judge's spread, and the signal in words.
    `seeded`: the table's judgments with a seed (the only ones that can
    spread over samples). A judge run with token log-probabilities defers by
    them (they exist with one sample at temperature 0, where seeds do not
    spread); a panel by its members' spread; other judges by their seeds'."""
    info = scope.info.get(judge)
    if info is not None and info.kind == PANEL_KIND and judge in scope.panels:
        members = scope.panels[judge]["members"]
        spread = spread_by_response(rs_wide.reindex(columns=members), members)
        return -spread, f"the spread (SD) of its members' scores ({', '.join(members)})"
    tokens = token_spread(scope.table, judge)
    if tokens is not None:
        return -tokens, TOKEN_SIGNAL
    spread = sample_spread(seeded, [judge]) if len(seeded) else pd.Series(dtype=float)
    return -spread, "the spread (SD) of its repeated samples (seeds)"


def deferral_part(scope: Scope, rs: pd.DataFrame, wide: pd.DataFrame) -> dict:
    """`wide`: the report's responses x evaluators table of scores."""
    reference = scope.reference
    if reference is None:
        return not_computable("no reference: a deferring judge is checked against human scores")
    meetings = rs.drop_duplicates("response_id").set_index("response_id")["meeting"].astype(str)
    table = scope.table
    seeded = table[table["judgment_seed"].notna().to_numpy()]
    out = {}
    for judge in scope.judges:
        if judge not in wide.columns:
            continue
        confidence, signal = confidence_signal(scope, judge, wide, seeded)
        out[judge] = one_judge(wide, meetings, judge, reference, confidence, signal)
    if not out:
        return not_computable("no judge scores the selection")
    return out


def one_judge(
    wide: pd.DataFrame,
    meetings: pd.Series,
    judge: str,
    reference: str,
    confidence: pd.Series,
    signal: str,
) -> dict:
    scored = wide[judge].dropna()
    confidence = confidence.reindex(scored.index).dropna()
    if confidence.empty:
        return not_computable(
            f"{judge}: no confidence signal (run it with several seeds at a temperature above "
            "0, or with token log-probabilities (logprobs), or make it part of a panel)"
        )
    labels = wide[reference].reindex(confidence.index)
    labelled = labels.notna()
    ids = confidence.index[labelled.to_numpy()]
    if len(ids) == 0:
        return not_computable(
            f"{judge}: no response with both a confidence and a {reference} score"
        )
    disagrees = (
        np.abs(scored.reindex(ids).to_numpy() - labels[labelled].to_numpy()) > TOLERANCE + 1e-9
    )
    found = guarantee(
        judge,
        confidence.reindex(ids).to_numpy(),
        disagrees,
        meetings.reindex(ids).to_numpy(),
        confidence.to_numpy(),
        unsignalled=int(len(scored) - len(confidence)),
    )
    if found.get("computable") is False:
        return found
    spread = "tokens" if signal == TOKEN_SIGNAL else "sd"
    return {"signal": signal, "tolerance": TOLERANCE, "spread": spread} | found


def guarantee(
    judge: str,
    values: np.ndarray,
    disagrees: np.ndarray,
    their_meetings: np.ndarray,
    all_confidence: np.ndarray,
    unsignalled: int = 0,
) -> dict:
    """The thresholds and their check, from the labelled responses' (or
    pairs') confidence, disagreement and meeting; `all_confidence`: every one
    the judge has a signal for (what it defers is counted there), and
    `unsignalled` how many it judged without a signal (always deferred)."""
    names = np.unique(their_meetings)
    if len(names) < 2:
        return not_computable(
            f"{judge}: labels on {len(names)} meeting(s): choosing a threshold on some meetings "
            "and checking it on others takes 2 or more"
        )
    fewest = deferral.fewest_meetings(DELTA)
    if len(names[::2]) < fewest:
        return not_computable(
            f"{judge}: labels on {len(names)} meetings, {len(names[::2])} to choose the "
            f"threshold on: a guarantee that holds when people label whole meetings needs "
            f"{fewest} or more there ({2 * fewest - 1} labelled meetings); with fewer, no "
            "threshold can pass, however well the judge agrees"
        )
    calibration = np.isin(their_meetings, names[::2])
    held = ~calibration
    codes = np.searchsorted(names, their_meetings)[calibration]
    levels = []
    for alpha in ALPHAS:
        chosen = deferral.choose_threshold(
            values[calibration], disagrees[calibration], alpha, DELTA, clusters=codes
        )
        keep = deferral.kept(values[held], chosen.threshold)
        agreeing = int((~disagrees[held][keep]).sum())
        low, high = deferral.clopper_pearson(agreeing, int(keep.sum()))
        deferred_with_signal = int((~deferral.kept(all_confidence, chosen.threshold)).sum())
        levels.append(
            {
                "alpha": alpha,
                "agreement_guaranteed": 1 - alpha,
                "max_spread_kept": None if chosen.threshold is None else -chosen.threshold,
                "calibration_kept": chosen.kept,
                "calibration_bound": chosen.bound,
                "held_out_kept_share": float(keep.mean()),
                "held_out_agreement": agreeing / int(keep.sum()) if keep.any() else None,
                "held_out_ci95": [low, high] if keep.any() else None,
                # the judge's responses without a signal are deferred too
                "deferred": deferred_with_signal + unsignalled,
            }
        )
    return {
        "delta": DELTA,
        "calibration_responses": int(calibration.sum()),
        "calibration_meetings": int(len(names[::2])),
        "held_out_responses": int(held.sum()),
        "held_out_meetings": int(len(names) - len(names[::2])),
        "held_out_agreement_without_deferral": float(1 - disagrees[held].mean()),
        "responses": int(len(all_confidence) + unsignalled),
        "levels": levels,
    }


def deferred_spreads(
    scope: Scope, rs: pd.DataFrame, wide: pd.DataFrame, judge: str, alpha: float
) -> pd.Series:
    """The responses of the selection `judge` defers at target agreement
    1 - alpha (the report's threshold), each with its spread (infinite where
    it has no confidence signal): what it leaves to humans. Raises ValueError
    with the reason when the judge cannot defer."""
    if alpha not in ALPHAS:
        raise ValueError(f"alpha {alpha}: choose from {', '.join(map(str, ALPHAS))}.")
    if judge not in scope.judges or judge not in wide.columns:
        raise ValueError(
            f"judge {judge!r}: choose one of the selection's judges "
            f"({', '.join(scope.judges) or 'none'})."
        )
    part = deferral_part(scope, rs, wide)
    if part.get("computable") is False:
        raise ValueError(part["reason"])
    found = part[judge]
    if found.get("computable") is False:
        raise ValueError(found["reason"])
    level = next(entry for entry in found["levels"] if entry["alpha"] == alpha)
    table = scope.table
    seeded = table[table["judgment_seed"].notna().to_numpy()]
    confidence, _ = confidence_signal(scope, judge, wide, seeded)
    scored = wide[judge].dropna().index
    spread = (-confidence).reindex(scored).fillna(np.inf)
    limit = level["max_spread_kept"]
    return spread if limit is None else spread[spread > limit + 1e-12]
