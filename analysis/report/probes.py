"""The report's "Probes" part: each judge's scores of answers known to be bad
(generation.probes) beside its scores of the answers the reference rated
good. A judge that scores a probe as high as its typical good answer is
fooled by it.

A good answer is one the reference scored GOOD or more; a probe is "scored as
a good answer" when the judge gives it at least the median of its scores of
the good answers. The part is descriptive (counts, means and shares, without
intervals): a probe kind that fools a judge at all is worth reading.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.scope import Scope
from analysis.report.scores import runs_for
from generation.probes import PROBE_KINDS

GOOD = 8.0  # a good answer: the reference scored it this or more (1-10)


def not_computable(reason: str) -> dict:
    return {"computable": False, "reason": reason}


def probe_scores(scope: Scope) -> pd.DataFrame:
    """Per judge and probe answer: the judge's mean score and the probe's kind."""
    from judging.models import Judgment

    runs = runs_for(scope.selection, probes_only=True)
    rows = Judgment.objects.filter(
        response__run_id__in=runs, evaluator__name__in=list(scope.judges)
    ).values_list("evaluator__name", "response__run__system__config", "response_id", "score")
    table = pd.DataFrame.from_records(
        [(e, (c or {}).get("probe", ""), r, s) for e, c, r, s in rows],
        columns=["evaluator", "kind", "response_id", "score"],
    )
    if table.empty:
        return table
    return table.groupby(["evaluator", "kind", "response_id"], as_index=False)["score"].mean()


def probes_part(scope: Scope, rs: pd.DataFrame) -> dict:
    if not runs_for(scope.selection, probes_only=True):
        return not_computable(
            "no probe answers in this setting: make them under Judges, Probes, then judge the "
            "probe systems as any system"
        )
    reference = scope.reference
    if reference is None:
        return not_computable("no reference: a good answer is one a human scored 8 or more")
    scored = probe_scores(scope)
    good_ids = rs.loc[(rs["evaluator"] == reference) & (rs["score"] >= GOOD), "response_id"]
    out: dict[str, dict] = {}
    for judge in scope.judges:
        mine = scored[scored["evaluator"] == judge] if len(scored) else scored
        if mine.empty:
            out[judge] = not_computable(
                f"{judge} has not scored the probes: run it on the probe systems"
            )
            continue
        good = rs.loc[(rs["evaluator"] == judge) & rs["response_id"].isin(good_ids), "score"]
        if good.empty:
            out[judge] = not_computable(
                f"{judge} scored no answer that {reference} scored {GOOD:g} or more"
            )
            continue
        median = float(np.median(good.to_numpy(float)))
        kinds = {}
        for kind in PROBE_KINDS:
            values = mine.loc[mine["kind"] == kind, "score"].to_numpy(float)
            if len(values) == 0:
                continue
            as_good = int((values >= median).sum())
            kinds[kind] = {
                "n": int(len(values)),
                "mean": float(values.mean()),
                "as_good": as_good,
                "share_as_good": as_good / len(values),
            }
        out[judge] = {
            "good_answers": int(len(good)),
            "good_median": median,
            "good_mean": float(good.mean()),
            "kinds": kinds,
        }
    if not out:
        return not_computable("no judge in the selection")
    return out
