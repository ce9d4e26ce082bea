"""The alt-test goal: can the judge replace a rater of the population at
epsilon (Calderon, Reichart & Dror 2025; analysis.statistics.alt_test and its
three-valued reading, analysis.report.verdicts)? Decided means passes or fails, not
inconclusive.

The alt-test compares the judge with each human rater on the items that
rater and two or more others rated, and needs 30 or more items per rater. So
a wave here is not a stream of single draws: it is a random set of meetings,
never one twice, whose every response of the chosen systems is rated by
`raters_per_item` raters (a crowd participant rates a whole meeting, about
36 items on ELITR-Bench test2; an expert rates the wave's every item).

**Looking after every wave.** The test is run after each wave on all the
ratings so far, at most `max_looks` times, look k at q * k / (1 + 2 + ... +
max_looks) (Benjamini-Yekutieli within the look). The false discovery
proportion at whatever look the study stops is at most the sum of the looks'
proportions, whose expectations are each at most that look's share of q, and
the shares add up to q: so the expected false discovery proportion at the
stop is at most q, however the stop was chosen (a Bonferroni split of q over
the looks). The split grows with the looks because the first look's
t-tests, on one wave of items per rater, gave most of the stopped verdicts
that all the data contradict when every look had q / max_looks
(benchmarks/adaptive_alt_test.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from adaptive.models import AdaptiveStudy, Decision, Draw
from analysis.statistics.alt_test import Q_FDR
from annotator.models import Study
from annotator.selectors import progress
from generation.models import Response
from judging.models import Judgment

POPULATION: dict[str, str] = {
    AdaptiveStudy.Population.CROWD: "crowd",
    AdaptiveStudy.Population.GOLD: "experts",
}
LOOK = "look"  # the prefix of a look's decision


def q_at_look(look: int, looks: int, q: float = Q_FDR) -> float:
    """Look `look`'s share of q, of at most `looks` looks: in proportion to its
    number, so the shares add up to q."""
    looks = max(looks, 1)
    return q * min(max(look, 1), looks) / (looks * (looks + 1) / 2)


def q_per_look(adaptive: AdaptiveStudy, look: int | None = None) -> float:
    """q at look `look` of the study (by default the next one)."""
    return q_at_look(looks_taken(adaptive) + 1 if look is None else look, adaptive.max_looks)


def meetings(adaptive: AdaptiveStudy) -> dict[int, list[int]]:
    """The pool's responses by meeting (document id), in a fixed order."""
    document_of = dict(
        Response.objects.filter(pk__in=[int(r) for r in adaptive.pool]).values_list(
            "pk", "question__document_id"
        )
    )
    out: dict[int, list[int]] = {}
    for rid in sorted(document_of):
        out.setdefault(document_of[rid], []).append(rid)
    return out


def choose_meetings(adaptive: AdaptiveStudy, wave: int) -> list[int]:
    """Meetings not rated in an earlier wave, at random, until they hold
    `draws_per_wave` items (at least one meeting)."""
    used = set(
        Response.objects.filter(
            pk__in=Draw.objects.filter(adaptive=adaptive).values("response_id")
        ).values_list("question__document_id", flat=True)
    )
    by_meeting = meetings(adaptive)
    left = [d for d in sorted(by_meeting) if d not in used]
    rng = np.random.default_rng([adaptive.seed, wave])
    chosen, items = [], 0
    for document_id in rng.permutation(left):
        chosen.append(int(document_id))
        items += len(by_meeting[int(document_id)])
        if items >= adaptive.draws_per_wave:
            break
    return chosen


def wave_draws(adaptive: AdaptiveStudy, wave: int, chosen: list[int]) -> list[Draw]:
    """Every response of the chosen meetings, sent with probability 1 (a census
    of the meetings: the random part is which meetings)."""
    by_meeting = meetings(adaptive)
    top: dict[int, int] = {}
    for system_id, position in Draw.objects.filter(adaptive=adaptive).values_list(
        "system_id", "position"
    ):
        top[system_id] = max(top.get(system_id, -1), position)
    draws = []
    for document_id in chosen:
        for rid in by_meeting[document_id]:
            system_id = adaptive.pool[str(rid)][0]
            top[system_id] = top.get(system_id, -1) + 1
            draws.append(
                Draw(
                    adaptive=adaptive,
                    system_id=system_id,
                    position=top[system_id],
                    wave=wave,
                    response_id=rid,
                    probability=1.0,
                    sent=True,
                )
            )
    return draws


def wave_done(study: Study) -> bool:
    """Every task has its raters, and nobody is still working."""
    return all(row.open_places == 0 and row.active == 0 for row in progress(study))


def ratings_so_far(adaptive: AdaptiveStudy) -> tuple[pd.DataFrame, pd.Series]:
    """The human ratings so far (item, rater, score) and the judge's score per item."""
    studies = Study.objects.filter(
        pk__in=Draw.objects.filter(adaptive=adaptive).values("study")
    ).values_list("evaluator_id", flat=True)
    humans = pd.DataFrame(
        Judgment.objects.filter(evaluator_id__in=list(studies)).values_list(
            "response_id", "rater", "score"
        ),
        columns=["item", "rater", "score"],
    )
    judge = pd.Series({int(rid): entry[1] for rid, entry in adaptive.pool.items()}, dtype=float)
    return humans, judge.loc[sorted(set(humans["item"]))] if len(humans) else judge.iloc[:0]


def look(adaptive: AdaptiveStudy) -> dict:
    """The alt-test's three-valued verdict on the ratings so far, at the next
    look's share of q."""
    from analysis.report.verdicts import alt_test_verdict

    humans, judge = ratings_so_far(adaptive)
    return alt_test_verdict(
        humans,
        judge,
        population=POPULATION[adaptive.population],
        evaluators=[],
        described={},
        epsilon=float(adaptive.epsilon or 0),
        epsilon_rule="stated by the researcher",
        alignment="neg_rmse",
        q=q_per_look(adaptive),
    )


def looks_taken(adaptive: AdaptiveStudy) -> int:
    return Decision.objects.filter(adaptive=adaptive, action=Decision.Action.LOOK).count()


def plan(adaptive: AdaptiveStudy) -> dict:
    """What the alt-test goal will pay: per wave about `draws_per_wave` items,
    each rated `raters_per_item` times, at most `max_looks` waves. Whether it
    decides within them is not simulated (the alt-test's power on the data at
    hand is in the report's verdict: `decide`)."""
    sizes = [len(r) for r in meetings(adaptive).values()]
    per_meeting = float(np.mean(sizes)) if sizes else 0.0
    meetings_per_wave = max(1, math.ceil(adaptive.draws_per_wave / max(per_meeting, 1)))
    items = min(meetings_per_wave, len(sizes)) * per_meeting
    ratings = items * adaptive.raters_per_item
    place = adaptive.place_pence
    looks = min(adaptive.max_looks, max(1, len(sizes) // meetings_per_wave))
    first, last = q_at_look(1, adaptive.max_looks), q_at_look(looks, adaptive.max_looks)
    summary = (
        f"Goal: {adaptive.goal_text()}. Each wave: about {items:.0f} items in "
        f"{meetings_per_wave} meeting(s), {adaptive.raters_per_item} raters each "
        f"({ratings:.0f} ratings, GBP {ratings * place / 100:,.2f}); at most {looks} waves "
        f"(GBP {looks * ratings * place / 100:,.2f}), the test after each at q "
        f"{first:.4f} after the first, growing with the looks to {last:.4f}. The chance of "
        "a verdict within the budget is not simulated for this goal."
    )
    return {
        "summary": summary,
        "items_per_wave": items,
        "raters_per_item": adaptive.raters_per_item,
        "waves_most": looks,
        "places_median": ratings,
        "places_p95": looks * ratings,
        "cost_median_pence": ratings * place,
        "cost_p95_pence": looks * ratings * place,
        "answered_within_budget": None,
        "replays": 0,
        "waves_median": 1,
        "minutes_per_item": adaptive.minutes_per_item,
        "hourly_pay": str(adaptive.hourly_pay),
        "uniform_ratings_per_system": [],
        "assumptions": [
            "a crowd participant rates a whole meeting: the alt-test needs 30 or more items "
            "per rater",
            f"the test after wave k at q {Q_FDR} x k / "
            f"{adaptive.max_looks * (adaptive.max_looks + 1) // 2} (Bonferroni over the looks: "
            "the shares add up to q)",
        ],
    }
