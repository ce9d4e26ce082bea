"""An adaptive study's waves and money: the draws of a wave, the batches
(ordinary annotator studies) that rate them, what they cost, and what has
been spent. adaptive.loop decides when; this module says what."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from django.db.models import Count, Sum

from adaptive.estimates import (
    SCALE,
    SystemEstimate,
    alpha_per_system,
    labels_by_draw,
    resolved_prefix,
    unanswered,
)
from adaptive.models import AdaptiveStudy, Draw
from analysis.planning.study_plan import TOP_UP_LEAST, VARIANCE_BOUND, fixed_size
from annotator.actions.groups import check_filter_study
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import Assignment, Study
from annotator.prolific_api import reward_in_pence
from annotator.prolific_records import BonusPayment
from generation.models import Response

MIN_WAVE = 10  # draws per system: a smaller wave is not worth a Prolific study


# --- money ----------------------------------------------------------------------------------


def batches(adaptive: AdaptiveStudy) -> list[Study]:
    return list(
        Study.objects.filter(pk__in=Draw.objects.filter(adaptive=adaptive).values("study"))
        .annotate(task_count=Count("tasks", distinct=True))
        .order_by("pk")
    )


def place_pence(study: Study, fee_share: float) -> float:
    return reward_in_pence(study.hourly_pay, study.estimated_minutes) * (1 + fee_share)


def money(adaptive: AdaptiveStudy) -> dict[str, float]:
    """Pence spent (completed places and paid bonuses, fees included) and
    reserved (places of batches not yet taken up)."""
    spent = reserved = 0.0
    for study in batches(adaptive):
        done = Assignment.objects.filter(
            task__study=study,
            status__in=[Assignment.Status.COMPLETED, Assignment.Status.NOT_QUALIFIED],
        ).count()
        spent += done * place_pence(study, adaptive.fee_share)
        if study.status != Study.Status.CLOSED:
            places = study.task_count * study.raters_per_task  # type: ignore[attr-defined]
            reserved += max(places - done, 0) * place_pence(study, adaptive.fee_share)
    bonuses = BonusPayment.objects.filter(
        study__in=[s.pk for s in batches(adaptive)], status=BonusPayment.Status.PAID
    ).aggregate(total=Sum("total_pence"))["total"]
    return {"spent": spent + float(bonuses or 0), "reserved": reserved}


# --- waves ----------------------------------------------------------------------------------


def wave_sizes(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> dict[int, int]:
    """Draws for each system whose part of the goal is open. For the means
    goal, about what its interval still needs (the half-width falls roughly as
    1/sqrt(draws); a quarter more, for the sequence's slower fall), so that the
    last wave does not pay for far more than the goal needs; at most
    `draws_per_wave`, at least MIN_WAVE."""
    open_ = set(unanswered(adaptive, found))
    sizes = {}
    for e in found:
        if e.system_id not in open_:
            continue
        size = adaptive.draws_per_wave
        width = float(adaptive.half_width or 0)
        if (
            adaptive.goal == AdaptiveStudy.Goal.MEANS
            and e.labels >= adaptive.min_labels
            and e.draws
            and width > 0
        ):
            needed = e.draws * ((e.half_width / width) ** 2 - 1) * 1.25
            size = int(min(max(math.ceil(needed), MIN_WAVE), adaptive.draws_per_wave))
        sizes[e.system_id] = size
    return sizes


def goal_width(adaptive: AdaptiveStudy) -> float:
    """The half-width a fixed design sizes its waves for: the means goal's w;
    for the ranking goal, the width the plan sized it for (half the smallest
    gap between the judge's system means, fixed before any label)."""
    if adaptive.goal == AdaptiveStudy.Goal.MEANS:
        return float(adaptive.half_width or 0)
    return float((adaptive.plan.get("goal") or {}).get("half_width") or 0)


def first_wave_sizes(adaptive: AdaptiveStudy) -> dict[int, int]:
    """A fixed design's first wave, per system id: the plan's (the size whose
    fixed-n interval reaches the width at the spread the plan simulated)."""
    planned = (adaptive.plan.get("designs") or {}).get(adaptive.design) or {}
    names = adaptive.plan.get("systems") or []
    sizes = dict(zip(names, planned.get("first_wave") or [], strict=False))
    return {
        s.pk: max(int(sizes.get(s.name) or adaptive.draws_per_wave), MIN_WAVE)
        for s in adaptive.systems.all()
    }


def top_up_sizes(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> dict[int, int]:
    """A fixed design's top-up, for each system whose part of the goal is open:
    the labels its interval needs in all (analysis.planning.study_plan.fixed_size, on
    the 90% upper bound of the spread of its labels so far), less those it
    has, at least TOP_UP_LEAST. The size depends on the spread only, never on
    the mean (Stein's two-stage design). Read once every sent draw is rated."""
    open_ = set(unanswered(adaptive, found))
    draws = list(
        Draw.objects.filter(adaptive=adaptive, system_id__in=open_).order_by(
            "system_id", "position"
        )
    )
    labels = labels_by_draw(draws)
    alpha = alpha_per_system(adaptive, len(found))
    sizes = {}
    for system_id in sorted(open_):
        prefix = resolved_prefix(adaptive, [d for d in draws if d.system_id == system_id], labels)
        total = fixed_size(
            adaptive.design,
            prefix.labels,
            prefix.judge_of_labels,
            goal_width(adaptive),
            alpha,
            SCALE,
            variance_bound=VARIANCE_BOUND,
            first=prefix.first,
        )
        sizes[system_id] = max(total - len(prefix.judge), TOP_UP_LEAST)
    return sizes


def draw_wave(adaptive: AdaptiveStudy, wave: int, counts: dict[int, int]) -> list[Draw]:
    """counts[system] draws per system, with replacement, each sent with its
    recorded probability (unsaved); in a fixed design every draw is sent
    (probability 1). The generator is seeded by the study and the wave."""
    rng = np.random.default_rng([adaptive.seed, wave])
    last = dict(
        Draw.objects.filter(adaptive=adaptive)
        .values("system_id")
        .annotate(top=Count("pk"))
        .values_list("system_id", "top")
    )
    draws = []
    for system_id, count in sorted(counts.items()):
        rows = sorted(int(r) for r, entry in adaptive.pool.items() if entry[0] == system_id)
        picked = rng.choice(rows, count)
        sent = rng.random(count)
        for index, rid in enumerate(picked):
            probability = 1.0 if adaptive.fixed else adaptive.pool[str(rid)][2]
            draws.append(
                Draw(
                    adaptive=adaptive,
                    system_id=system_id,
                    position=last.get(system_id, 0) + index,
                    wave=wave,
                    response_id=int(rid),
                    probability=probability,
                    sent=bool(sent[index] < probability),
                )
            )
    return draws


def split_into_batches(draws: list[Draw], by_task_size: bool = True) -> list[list[Draw]]:
    """The k-th sending of a response in a wave goes to batch k: a study rates a
    response once, so a response sent twice is rated twice, by two people.

    With `by_task_size` (crowd studies: a task is a meeting's items), each batch
    is cut further so that its tasks have about the same number of items (no
    two sizes more than 1.5x apart): a Prolific study has one reward, paid for
    its largest task, so mixing a 2-item task with a 12-item one would pay
    six times the rate for the small one."""
    seen: dict[int, int] = defaultdict(int)
    rounds: list[list[Draw]] = []
    for draw in draws:
        if not draw.sent:
            continue
        k = seen[draw.response_id]
        seen[draw.response_id] += 1
        if k == len(rounds):
            rounds.append([])
        rounds[k].append(draw)
    if not by_task_size:
        return rounds
    document_of = dict(
        Response.objects.filter(pk__in={d.response_id for d in draws if d.sent}).values_list(
            "pk", "question__document_id"
        )
    )
    out = []
    for batch in rounds:
        sizes: dict[int, int] = defaultdict(int)
        for draw in batch:
            sizes[document_of[draw.response_id]] += 1
        buckets: dict[int, list[Draw]] = defaultdict(list)
        for draw in batch:
            size = sizes[document_of[draw.response_id]]
            buckets[int(math.log(size) / math.log(1.5) + 1e-9)].append(draw)
        out += [buckets[b] for b in sorted(buckets, reverse=True)]
    return out


def batch_minutes(adaptive: AdaptiveStudy, batch: list[Draw]) -> int:
    """A place's minutes: the largest task's items at the minutes per item (one
    reward per Prolific study, so no participant is paid below the rate)."""
    documents = Response.objects.filter(pk__in=[d.response_id for d in batch]).values_list(
        "question__document_id", flat=True
    )
    sizes: dict[int, int] = defaultdict(int)
    for document_id in documents:
        sizes[document_id] += 1
    return max(1, math.ceil(max(sizes.values()) * adaptive.minutes_per_item))


def wave_cost(adaptive: AdaptiveStudy, parts: list[list[Draw]]) -> float:
    total = 0.0
    for batch in parts:
        tasks = len(
            set(
                Response.objects.filter(pk__in=[d.response_id for d in batch]).values_list(
                    "question__document_id", flat=True
                )
            )
        )
        reward = reward_in_pence(adaptive.hourly_pay, batch_minutes(adaptive, batch))
        total += tasks * reward * (1 + adaptive.fee_share)
    return total


def create_batch(
    adaptive: AdaptiveStudy, wave: int, k: int, batch: list[Draw], raters: int = 1
) -> Study:
    """An ordinary study of the population's kind that rates the batch's
    responses once each, opened at once."""
    responses = list(
        Response.objects.filter(pk__in=[d.response_id for d in batch]).select_related(
            "run", "question"
        )
    )
    study = Study(
        project_id=adaptive.project_id,
        name=f"{adaptive.name} · wave {wave}" + (f" · batch {k + 1}" if k else ""),
        kind=adaptive.population,
        dataset=adaptive.dataset,
        mode=adaptive.mode,
        seed=None,
        raters_per_task=raters,
        hourly_pay=adaptive.hourly_pay,
        estimated_minutes=batch_minutes(adaptive, batch),
    )

    def choose(saved: Study) -> None:
        saved.systems.set({r.run.system_id for r in responses})
        saved.documents.set({r.question.document_id for r in responses})
        saved.responses.set([r.pk for r in responses])

    check_save_study(study, [], after_save=choose)
    # before it is on Prolific: its filters are set when it is created there
    for group in adaptive.participant_groups.all():
        check_filter_study(study, group)
    check_set_study_status(study, Study.Status.OPEN)
    for draw in batch:
        draw.study = study
    return study
