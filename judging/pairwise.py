"""Win rates of pairwise battles against a baseline, counted two ways.

per_order (L-Eval): every verdict counts, in each presentation order.
consistent (MT-Bench): a pair is a win (loss) only if both orders say so;
orders that disagree make a tie. Win rate = (wins + ties / 2) / verdicts.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from judging.models import PairwiseVerdict, verdict_outcome


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
        ],
    )


def win_rates(table: pd.DataFrame, counting: str = "consistent") -> dict:
    """{evaluator: {system: {"against", "wins", "ties", "losses", "n", "win_rate"}}}"""
    if counting not in ("consistent", "per_order"):
        raise ValueError("counting is 'consistent' or 'per_order'.")
    out: dict = {}
    for (evaluator, system, baseline), group in table.groupby(["evaluator", "system", "baseline"]):
        tally: dict[str, int] = defaultdict(int)
        if counting == "per_order":
            for order, winner in zip(group["order"], group["winner"], strict=True):
                tally[verdict_outcome(order, winner)] += 1
        else:
            for _, pair in group.groupby(["response_id", "opponent_id", "seed"]):
                outcomes = {
                    verdict_outcome(o, w)
                    for o, w in zip(pair["order"], pair["winner"], strict=True)
                }
                tally[outcomes.pop() if len(outcomes) == 1 and len(pair) == 2 else "tie"] += 1
        n = sum(tally.values())
        out.setdefault(evaluator, {})[system] = {
            "against": baseline,
            "wins": tally["win"],
            "ties": tally["tie"],
            "losses": tally["loss"],
            "n": n,
            "counting": counting,
            "win_rate": (tally["win"] + tally["tie"] / 2) / n if n else None,
        }
    return out


def battles_for_diagnostics(table: pd.DataFrame) -> pd.DataFrame:
    """The layout analysis.stats.pairwise_diagnostics reads."""
    return pd.DataFrame(
        {
            "pair": list(
                zip(
                    table["evaluator"],
                    table["response_id"],
                    table["opponent_id"],
                    table["seed"],
                    strict=True,
                )
            ),
            "order": table["order"],
            "winner": table["winner"],
        }
    )
