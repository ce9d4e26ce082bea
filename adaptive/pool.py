"""The pool an adaptive study draws from, fixed when it is planned: every
response of the chosen systems' runs, the judge's score of each, and the
probability a draw of it is sent to a human.

The probability rises with the disagreement between the judge and the
uncertainty judge (without one: the spread of the judge's own repeated
scores, when it scored with several seeds; else uniform), or, when the
researcher asks for it (`defer_at`), with what the report's deferring judge
leaves to humans (analysis.report.deferral: 1 for a response it defers at
that target agreement, 0 for one it keeps), and never falls below a uniform
floor
(analysis.planning.items_for_humans.inclusion_probabilities, the rule "Select items
for humans" records); per system it averages `send_rate`. It is recorded on
every draw before any label of it is seen, which is what keeps the
inverse-probability weighted estimate unbiased (Zrnic & Candes 2024)."""

from __future__ import annotations

import pandas as pd
from django.db.models import Avg

from adaptive.errors import AdaptiveError
from analysis.planning.items_for_humans import inclusion_probabilities
from corpus.models import Dataset
from generation.models import GenerationRun, Response, System
from judging.models import Evaluator, Judgment


def judge_means(evaluator: Evaluator, response_ids: list[int]) -> dict[int, float]:
    """The evaluator's mean score (common 1-10 scale) per response it scored."""
    return {
        rid: float(score)
        for rid, score in Judgment.objects.filter(evaluator=evaluator, response_id__in=response_ids)
        .values("response_id")
        .annotate(mean=Avg("score"))
        .values_list("response_id", "mean")
    }


def self_consistency(judge: Evaluator, ids: list[int]) -> pd.Series:
    """The spread of the judge's own repeated scores of each response (a judging
    run with several seeds at temperature > 0); 1 everywhere (uniform) when it
    scored each response once."""
    spread = (
        pd.DataFrame(
            Judgment.objects.filter(evaluator=judge, response_id__in=ids).values_list(
                "response_id", "score"
            ),
            columns=["response_id", "score"],
        )
        .groupby("response_id")["score"]
        .std(ddof=0)
        .reindex(ids)
        .fillna(0.0)
    )
    return spread if spread.max() > 0 else pd.Series(1.0, index=ids)


def deferral_spread(
    dataset: Dataset,
    mode: str,
    systems: list[System],
    judge: Evaluator,
    defer_at: float,
    project_id: int | None,
    ids: list[int],
) -> pd.Series:
    """Per response of `ids`: 1 where `judge`, as the report's deferring judge
    on these systems' responses (against the report's reference, its
    threshold for agreement 1 - defer_at), defers it to a human; 0 where it
    keeps it; 1 everywhere (uniform) when it keeps them all. Raises
    AdaptiveError with the report's reason when the judge cannot defer (no
    confidence signal, too few labelled meetings)."""
    from analysis.report.deferral import deferred_spreads
    from analysis.report.scope import resolve
    from analysis.report.scores import response_scores
    from analysis.report.selection import Selection
    from users.models import Project

    selection = Selection(
        project=Project.objects.get(pk=project_id).slug if project_id is not None else None,
        dataset_version=dataset.version,
        split=dataset.split,
        mode=mode,
        language=dataset.language,
        benchmark=dataset.benchmark.slug,
        systems=tuple(sorted(s.name for s in systems)),
        judges=(judge.name,),
    )
    try:
        scope = resolve(selection)
        rs = response_scores(scope.table)
        wide = rs.pivot(index="response_id", columns="evaluator", values="score")
        wide.columns = [str(c) for c in wide.columns]
        deferred = deferred_spreads(scope, rs, wide, judge.name, defer_at)
    except ValueError as error:  # a SelectionError too
        raise AdaptiveError(f"{judge.name} cannot defer: {error}") from None
    spread = pd.Series(0.0, index=ids)
    spread[spread.index.isin(deferred.index)] = 1.0
    return spread if spread.max() > 0 else pd.Series(1.0, index=ids)


def build_pool(
    dataset: Dataset,
    mode: str,
    systems: list[System],
    judge: Evaluator,
    uncertainty_judge: Evaluator | None,
    send_rate: float,
    floor: float,
    project_id: int | None = None,
    defer_at: float | None = None,
) -> dict[str, list]:
    """Per response id (a string, as JSON keeps it): [system id, judge score,
    probability]. Refuses systems without a run, and a judge that has not
    scored every response (the increments need the judge's score on every draw)."""
    if len(systems) < 1:
        raise AdaptiveError("Choose at least one system.")
    if not 0 < send_rate <= 1 or not 0 < floor <= 1:
        raise AdaptiveError("The send rate and the floor are in (0, 1].")
    runs = {
        run.system_id: run
        for run in GenerationRun.objects.filter(
            dataset=dataset, mode=mode, system__in=systems, seed__isnull=True
        ).filter(**({"project": project_id} if project_id is not None else {}))
    }
    missing = [s.name for s in systems if s.pk not in runs]
    if missing:
        raise AdaptiveError(
            f"No {mode} run on {dataset} (without a seed) for: {', '.join(missing)}."
        )
    responses = dict(
        Response.objects.filter(run__in=runs.values()).values_list("pk", "run__system_id")
    )
    ids = sorted(responses)
    scores = judge_means(judge, ids)
    unscored = [rid for rid in ids if rid not in scores]
    if unscored:
        raise AdaptiveError(
            f"{judge.name} has not scored {len(unscored)} of the {len(ids)} responses of these "
            "systems: the loop needs the judge's score on every response it may draw. "
            "Run the judge on them first."
        )
    if defer_at is not None:
        spread = deferral_spread(dataset, mode, systems, judge, defer_at, project_id, ids)
    elif uncertainty_judge is not None:
        other = judge_means(uncertainty_judge, ids)
        spread = pd.Series(
            {rid: abs(scores[rid] - other[rid]) if rid in other else 0.0 for rid in ids}
        )
    else:
        spread = self_consistency(judge, ids)
    pool: dict[str, list] = {}
    for system_id in sorted({responses[rid] for rid in ids}):
        mine = [rid for rid in ids if responses[rid] == system_id]
        probability = inclusion_probabilities(
            spread.loc[mine],
            count=send_rate * len(mine),
            floor=floor,
        )
        for rid in mine:
            pool[str(rid)] = [system_id, scores[rid], max(float(probability[rid]), 1e-6)]
    return pool
