"""Win rates of pairwise battles against a baseline.

LLM judges (every evaluator that is not a human study), counted two ways:
per_order (L-Eval): every verdict counts, in each presentation order.
consistent (MT-Bench): a pair is a win (loss) only if both orders say so;
orders that disagree make a tie. Win rate = (wins + ties / 2) / verdicts.

Human studies (evaluators of kind crowd_human or gold_human): each rater sees
a pair once, in one order (the orders balanced across raters), so the two
orders of a pair come from different people and are never paired up.
per_verdict: every rater's verdict counts once.
majority: one outcome per pair (response, opponent), the one most of its
raters gave; when outcomes share the top count (an even split) the pair is a
tie. Win rate = (wins + ties / 2) / n as above.

Outcomes are always those of the judged response: win, loss or tie.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

import pandas as pd

from judging.evaluators import JUDGE_COUNTINGS
from judging.models import HUMAN_KINDS, PairwiseVerdict, verdict_outcome

HUMAN_COUNTINGS = ("per_verdict", "majority")
COUNTINGS = JUDGE_COUNTINGS + HUMAN_COUNTINGS
OUTCOMES = ("win", "tie", "loss")
# an outcome's points to the judged response, as battles count them (Bradley-Terry, PPR)
OUTCOME_POINTS = {"win": 1.0, "tie": 0.5, "loss": 0.0}
PAIR = ["response_id", "opponent_id"]


def verdict_table(evaluator_ids=None, response_ids=None) -> pd.DataFrame:
    verdicts = PairwiseVerdict.objects.all()
    if evaluator_ids is not None:
        verdicts = verdicts.filter(evaluator_id__in=evaluator_ids)
    if response_ids is not None:
        verdicts = verdicts.filter(response_id__in=response_ids)
    rows = verdicts.values_list(
        "evaluator__name",
        "response_id",
        "opponent_id",
        "seed",
        "order",
        "winner",
        "response__run__system__name",
        "opponent__run__system__name",
        "rater",
        "evaluator__kind",
        "probability",
    )
    return pd.DataFrame(
        list(rows),
        columns=[
            "evaluator",
            "response_id",
            "opponent_id",
            "seed",
            "order",
            "winner",
            "system",
            "baseline",
            "rater",
            "evaluator_kind",
            "probability",
        ],
    )


def is_human(table: pd.DataFrame) -> pd.Series:
    """Rows of human studies (a table without evaluator_kind holds LLM judges only)."""
    if "evaluator_kind" not in table:
        return pd.Series(False, index=table.index)
    return table["evaluator_kind"].isin(HUMAN_KINDS)


def judge_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[~is_human(table)]


def human_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[is_human(table)]


def outcomes(table: pd.DataFrame) -> list[str]:
    """win, loss or tie of the judged response, one per verdict."""
    return [verdict_outcome(o, w) for o, w in zip(table["order"], table["winner"], strict=True)]


def majority_outcome(votes: Iterable[str]) -> str:
    """The outcome given most often; a tie when outcomes share the top count."""
    counts = Counter(votes).most_common()
    if not counts:
        raise ValueError("no votes")
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "tie"
    return counts[0][0]


def consistent_outcomes(table: pd.DataFrame) -> pd.DataFrame:
    """One row per pair and seed of the LLM judges: the consistent outcome (both
    orders agree, otherwise tie; a pair judged in one order only is a tie)."""
    rows = []
    table = judge_rows(table)
    for (evaluator, system, baseline), group in table.groupby(["evaluator", "system", "baseline"]):
        for (response, opponent, seed), pair in group.groupby([*PAIR, "seed"]):
            seen = set(outcomes(pair))
            outcome = seen.pop() if len(seen) == 1 and len(pair) == 2 else "tie"
            rows.append((evaluator, system, baseline, response, opponent, seed, outcome))
    return pd.DataFrame(rows, columns=["evaluator", "system", "baseline", *PAIR, "seed", "outcome"])


def judge_pair_outcomes(table: pd.DataFrame) -> pd.DataFrame:
    """One row per LLM judge and pair: the consistent outcome, or with several
    seeds the majority over the seeds' consistent outcomes."""
    per_seed = consistent_outcomes(table)
    if per_seed.empty:
        return per_seed.drop(columns="seed")
    keys = ["evaluator", "system", "baseline", *PAIR]
    return per_seed.groupby(keys, sort=True)["outcome"].agg(majority_outcome).reset_index()


def rater_outcomes(table: pd.DataFrame) -> pd.DataFrame:
    """One row per human evaluator, pair and rater: the rater's outcome (a
    rater who saw both orders: the consistent rule over their two verdicts)."""
    table = human_rows(table).assign(outcome=lambda t: outcomes(t) if len(t) else [])
    keys = ["evaluator", "system", "baseline", *PAIR, "rater"]
    columns = [*keys, "outcome"]
    if table.empty:
        return pd.DataFrame(columns=columns)
    return (
        table.groupby(keys, sort=True)["outcome"]
        .agg(lambda seen: seen.iloc[0] if seen.nunique() == 1 else "tie")
        .reset_index()[columns]
    )


def majority_outcomes(table: pd.DataFrame) -> pd.DataFrame:
    """One row per human evaluator and pair: the majority outcome over its
    raters, how many raters judged it and whether they all agree."""
    per_rater = rater_outcomes(table)
    keys = ["evaluator", "system", "baseline", *PAIR]
    if per_rater.empty:
        return pd.DataFrame(columns=[*keys, "outcome", "raters", "unanimous"])
    grouped = per_rater.groupby(keys, sort=True)["outcome"]
    return pd.concat(
        [
            grouped.agg(majority_outcome).rename("outcome"),
            grouped.size().rename("raters"),
            (grouped.nunique() == 1).rename("unanimous"),
        ],
        axis=1,
    ).reset_index()


def study_with_most_pairs(majorities: pd.DataFrame) -> str:
    """The human study that judged the most pairs (`majority_outcomes`' rows;
    the first by name among equals): the reference pairwise judges answer to."""
    counts = majorities.groupby("evaluator").size()
    return str(counts[counts == counts.max()].sort_index().index[0])


def _summary(tally: dict[str, int], baseline: str, counting: str) -> dict:
    n = sum(tally.values())
    return {
        "against": baseline,
        "wins": tally["win"],
        "ties": tally["tie"],
        "losses": tally["loss"],
        "n": n,
        "counting": counting,
        "win_rate": (tally["win"] + tally["tie"] / 2) / n if n else None,
    }


def win_rates(table: pd.DataFrame, counting: str = "consistent") -> dict:
    """{evaluator: {system: {"against", "wins", "ties", "losses", "n", "counting",
    "win_rate"}}}: consistent and per_order count the LLM judges of the table,
    per_verdict and majority its human studies."""
    if counting not in COUNTINGS:
        raise ValueError(f"counting is one of {', '.join(repr(c) for c in COUNTINGS)}.")
    if counting in ("consistent", "majority"):
        per_pair = (
            consistent_outcomes(table) if counting == "consistent" else majority_outcomes(table)
        )
        groups = (
            (key, group["outcome"])
            for key, group in per_pair.groupby(["evaluator", "system", "baseline"])
        )
    else:
        rows = judge_rows(table) if counting == "per_order" else human_rows(table)
        groups = (
            (key, outcomes(group))
            for key, group in rows.groupby(["evaluator", "system", "baseline"])
        )
    out: dict = {}
    for (evaluator, system, baseline), seen in groups:
        tally: dict[str, int] = defaultdict(int)
        for outcome in seen:
            tally[outcome] += 1
        out.setdefault(evaluator, {})[system] = _summary(tally, baseline, counting)
    return out


def battles_for_diagnostics(table: pd.DataFrame) -> pd.DataFrame:
    """The layout analysis.statistics.stats.pairwise_diagnostics reads (one rater's pairs:
    the rater is part of the pair, so two raters' orders are never paired)."""
    raters = table["rater"] if "rater" in table else [""] * len(table)
    return pd.DataFrame(
        {
            "pair": list(
                zip(
                    table["evaluator"],
                    table["response_id"],
                    table["opponent_id"],
                    table["seed"],
                    raters,
                    strict=True,
                )
            ),
            "order": table["order"],
            "winner": table["winner"],
        }
    )
