"""Each participant's estimated reliability in a study's quality-control
table: Dawid-Skene's chance that they give an item's true rubric level
(analysis.statistics.rater_models, crowd-kit), estimated from the study's
ratings themselves, on the items two raters or more rated.

The study monitor polls every 5 seconds and the model takes up to seconds
on thousands of ratings, so a fit is kept in the cache for the state of the
study's ratings it was made from (their count and newest id): the next fit
comes with the next rating."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count, Max

from annotator.models import Item, Rating, Study

CACHE_SECONDS = 24 * 3600
DESCRIPTION = (
    "Dawid-Skene: the estimated chance this participant gives an item's true rubric level "
    "(1, 2, 3-4, 5-6, 7-8, 9, 10), from every participant's agreement on the items two or "
    "more rated (crowd-kit)"
)


def study_rater_reliability(study: Study) -> dict:
    """{"by_participant": {participant id: reliability}, "items": n} or
    {"reason": why none}; pairwise studies have none yet."""
    if study.is_pairwise:
        return {"reason": "rater models read rubric scores; this study is pairwise"}
    ratings = Rating.objects.filter(
        item__study=study, item__kind=Item.Kind.RESPONSE, score__isnull=False
    )
    state = ratings.aggregate(count=Count("pk"), newest=Max("pk"))
    if not state["count"]:
        return {"reason": "no rating yet"}
    key = f"study-reliability:{study.public_id}:{state['count']}:{state['newest']}"
    found = cache.get(key)
    if found is None:
        found = _fit(study, ratings)
        cache.set(key, found, CACHE_SECONDS)
    return found


def _fit(study: Study, ratings) -> dict:
    import pandas as pd

    from analysis.statistics import rater_models

    rows = list(ratings.values_list("assignment__participant_id", "item__response_id", "score"))
    frame = pd.DataFrame(rows, columns=["rater", "response_id", "score"])
    frame["score"] = [study.to_common_scale(s) for s in frame["score"]]
    # a participant's repeated rating of a response (a re-rated item): their mean
    frame = frame.groupby(["response_id", "rater"], as_index=False)["score"].mean()
    labels = rater_models.as_labels(frame)
    if labels.empty or labels["worker"].nunique() < 2:
        return {
            "reason": "no response rated by two participants or more yet: a rater model "
            "learns a participant's reliability from items others rated too"
        }
    reliability, _ = rater_models.dawid_skene(labels)
    return {
        "by_participant": {int(worker): value for worker, value in reliability.items()},
        "items": int(labels["task"].nunique()),
    }
