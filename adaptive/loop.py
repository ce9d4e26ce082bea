"""The loop of an adaptive study: plan, start, waves, the automatic stop, and
the researcher's stop, budget and deadline changes. Every decision is a
Decision row. `advance` is the one step the worker repeats (after every
completed task, and every minute): it updates the estimates, stops the study
when its goal is met or its budget or time is spent, and sends the next wave
when the last one is rated.

Locks: every change takes the adaptive study's row first (`lock`), then the
annotator actions it calls take their studies' rows (annotator.actions'
order), so two workers advancing one study at once do one step each.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from adaptive import alt_goal
from adaptive.errors import AdaptiveError
from adaptive.estimates import SystemEstimate, estimates, goal_met, unanswered
from adaptive.models import AdaptiveStudy, Decision, Draw, Snapshot
from adaptive.planning import make_plan
from adaptive.pool import build_pool
from adaptive.reporting import final_report
from annotator.actions.groups import check_filter_study
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import Assignment, Study
from annotator.prolific_api import reward_in_pence
from annotator.prolific_records import BonusPayment
from generation.models import Response
from users.models import User

MIN_WAVE = 10  # draws per system: a smaller wave is not worth a Prolific study


def lock(adaptive: AdaptiveStudy | int) -> AdaptiveStudy:
    pk = adaptive if isinstance(adaptive, int) else adaptive.pk
    return AdaptiveStudy.objects.select_for_update().get(pk=pk)


def decide(
    adaptive: AdaptiveStudy, action: str, detail: str, actor: User | None = None
) -> Decision:
    return Decision.objects.create(adaptive=adaptive, action=action, detail=detail, actor=actor)


# --- planning -------------------------------------------------------------------------------


@transaction.atomic
def create(
    adaptive: AdaptiveStudy,
    systems: list,
    actor: User | None = None,
    groups: list | None = None,
) -> AdaptiveStudy:
    """Save a new adaptive study with its pool and its plan; nothing is spent.
    Raises AdaptiveError saying what is wrong (nothing saved then)."""
    if adaptive.pk is not None:
        raise AdaptiveError("This adaptive study exists already.")
    if (
        AdaptiveStudy.objects.filter(name=adaptive.name).exists()
        or Study.objects.filter(name__startswith=f"{adaptive.name} · wave").exists()
    ):
        raise AdaptiveError(f"The name '{adaptive.name}' is taken; choose another.")
    if adaptive.goal == AdaptiveStudy.Goal.MEANS and not (adaptive.half_width or 0) > 0:
        raise AdaptiveError("The means goal needs a positive half-width w.")
    if adaptive.goal == AdaptiveStudy.Goal.RANKING and not 0 < (adaptive.probability or 0) < 1:
        raise AdaptiveError("The ranking goal needs a probability p between 0 and 1.")
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        if not 0 < (adaptive.epsilon or 0) < 1:
            raise AdaptiveError("The alt-test goal needs an epsilon between 0 and 1.")
        if adaptive.raters_per_item < 3 or not 1 <= adaptive.max_looks <= 20:
            raise AdaptiveError(
                "The alt-test goal needs 3 or more raters per item (the authors' minimum) "
                "and 1 to 20 looks."
            )
    if adaptive.deadline <= timezone.now():
        raise AdaptiveError("The deadline has passed already.")
    if not 0 < adaptive.minutes_per_item <= 60 or adaptive.hourly_pay <= 0:
        raise AdaptiveError("Minutes per item in (0, 60], and a positive hourly pay.")
    if adaptive.draws_per_wave < MIN_WAVE:
        raise AdaptiveError(f"At least {MIN_WAVE} draws per system and wave.")
    adaptive.pool = build_pool(
        adaptive.dataset,
        adaptive.mode,
        systems,
        adaptive.judge,
        adaptive.uncertainty_judge,
        adaptive.send_rate,
        adaptive.floor,
    )
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        adaptive.plan = alt_goal.plan(adaptive)
    else:
        adaptive.plan = make_plan(adaptive, systems)
    adaptive.created_by = actor
    adaptive.save()
    adaptive.systems.set(systems)
    if groups:
        adaptive.participant_groups.set(groups)
    decide(adaptive, Decision.Action.PLANNED, adaptive.plan["summary"], actor)
    return adaptive


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


def draw_wave(adaptive: AdaptiveStudy, wave: int, counts: dict[int, int]) -> list[Draw]:
    """counts[system] draws per system, with replacement, each sent with its
    recorded probability (unsaved). The generator is seeded by the study and
    the wave."""
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
            probability = adaptive.pool[str(rid)][2]
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


def send_wave(adaptive: AdaptiveStudy, counts: dict[int, int], actor: User | None = None) -> str:
    """Draw the next wave (counts[system] draws each) and open its batches; a
    wave that would not fit the budget is halved until it does (or stops the
    study). Needs the adaptive study's lock."""
    wave = (
        Draw.objects.filter(adaptive=adaptive)
        .order_by("-wave")
        .values_list("wave", flat=True)
        .first()
        or 0
    ) + 1
    left = adaptive.budget_pence - sum(money(adaptive).values())
    share = 1.0
    while True:
        sizes = {s: max(int(n * share), MIN_WAVE) for s, n in counts.items()}
        draws = draw_wave(adaptive, wave, sizes)
        parts = split_into_batches(draws, adaptive.population == AdaptiveStudy.Population.CROWD)
        cost = wave_cost(adaptive, parts)
        if cost <= left:
            break
        if all(n <= MIN_WAVE for n in sizes.values()):
            begin_stop(
                adaptive,
                f"budget spent: GBP {left / 100:.2f} left, not enough for a wave of {MIN_WAVE} "
                "draws per system",
            )
            return "stopping"
        share /= 2
    if not parts:  # nothing was sent: the judge's scores alone move the estimates
        Draw.objects.bulk_create(draws)
        decide(adaptive, Decision.Action.WAVE, f"wave {wave}: {len(draws)} draws, none sent", actor)
        return "wave"
    for k, batch in enumerate(parts):
        create_batch(adaptive, wave, k, batch)
    Draw.objects.bulk_create(draws)
    sent = sum(len(b) for b in parts)
    decide(
        adaptive,
        Decision.Action.WAVE,
        f"wave {wave}: {sum(sizes.values())} draws over {len(sizes)} system(s) "
        f"({', '.join(str(n) for n in sizes.values())}), {sent} sent to humans in "
        f"{len(parts)} batch(es), up to GBP {cost / 100:.2f}",
        actor,
    )
    return "wave"


# --- the step ---------------------------------------------------------------------------------


def work_in_progress(adaptive: AdaptiveStudy) -> int:
    return Assignment.objects.filter(
        task__study__in=[s.pk for s in batches(adaptive)], status=Assignment.Status.ACTIVE
    ).count()


def record_snapshot(adaptive: AdaptiveStudy, found: list, met: bool) -> Snapshot | None:
    """A point of the monitor's plot, when the labels changed since the last one."""
    labels = sum(e.labels for e in found)
    last = Snapshot.objects.filter(adaptive=adaptive).order_by("-created_at", "-pk").first()
    if last is not None and last.labels == labels and last.met == met:
        return None
    return Snapshot.objects.create(
        adaptive=adaptive,
        labels=labels,
        spent_pence=money(adaptive)["spent"],
        met=met,
        estimates=[e.as_dict() for e in found],
    )


@transaction.atomic
def start(adaptive: AdaptiveStudy, actor: User | None = None) -> AdaptiveStudy:
    adaptive = lock(adaptive)
    if adaptive.status != AdaptiveStudy.Status.PLANNED:
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status}: only a planned study starts.")
    adaptive.status = AdaptiveStudy.Status.RUNNING
    adaptive.started_at = timezone.now()
    adaptive.save(update_fields=["status", "started_at"])
    decide(adaptive, Decision.Action.STARTED, adaptive.goal_text(), actor)
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        send_alt_wave(adaptive, actor)
    else:
        send_wave(adaptive, {s.pk: adaptive.draws_per_wave for s in adaptive.systems.all()}, actor)
    return adaptive


@transaction.atomic
def advance(adaptive: AdaptiveStudy | int, now: datetime | None = None) -> str:
    """One step; says what it did ("idle", "wave", "stopping", "finished")."""
    adaptive = lock(adaptive)
    now = now or timezone.now()
    if adaptive.status not in (AdaptiveStudy.Status.RUNNING, AdaptiveStudy.Status.STOPPING):
        return "idle"
    found = estimates(adaptive)
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        return advance_alt_test(adaptive, found, now)
    met = goal_met(adaptive, found)
    record_snapshot(adaptive, found, met)
    if adaptive.status == AdaptiveStudy.Status.RUNNING:
        if met:
            begin_stop(adaptive, "the goal is met")
        elif now >= adaptive.deadline:
            begin_stop(adaptive, "time is up: the deadline passed before the goal was met")
        elif any(e.pending for e in found):
            return "idle"
        else:
            done = send_wave(adaptive, wave_sizes(adaptive, found))
            if adaptive.status == AdaptiveStudy.Status.RUNNING:
                return done
    # stopping: done once no work is in progress (at once when none was)
    if work_in_progress(adaptive):
        return "stopping"
    finish(adaptive, found, met)
    return "finished"


def send_alt_wave(adaptive: AdaptiveStudy, actor: User | None = None) -> str:
    """The alt-test goal's next wave: meetings not rated yet, every response of
    them rated by `raters_per_item` raters in one batch. Needs the adaptive
    study's lock."""
    last_wave = Draw.objects.filter(adaptive=adaptive).order_by("-wave").values_list("wave")
    wave = (last_wave.first() or (0,))[0] + 1
    chosen = alt_goal.choose_meetings(adaptive, wave)
    if not chosen:
        begin_stop(adaptive, "every meeting of the pool is rated: no wave left to send")
        return "stopping"
    draws = alt_goal.wave_draws(adaptive, wave, chosen)
    tasks = len(chosen) if adaptive.population == AdaptiveStudy.Population.CROWD else 1
    reward = reward_in_pence(adaptive.hourly_pay, batch_minutes(adaptive, draws))
    cost = tasks * adaptive.raters_per_item * reward * (1 + adaptive.fee_share)
    left = adaptive.budget_pence - sum(money(adaptive).values())
    if cost > left:
        begin_stop(
            adaptive,
            f"budget spent: GBP {left / 100:.2f} left, a wave costs GBP {cost / 100:.2f}",
        )
        return "stopping"
    create_batch(adaptive, wave, 0, draws, raters=adaptive.raters_per_item)
    Draw.objects.bulk_create(draws)
    decide(
        adaptive,
        Decision.Action.WAVE,
        f"wave {wave}: {len(draws)} items in {len(chosen)} meeting(s), "
        f"{adaptive.raters_per_item} raters each, up to GBP {cost / 100:.2f}",
        actor,
    )
    return "wave"


def advance_alt_test(adaptive: AdaptiveStudy, found: list, now: datetime) -> str:
    """The alt-test goal's step: once a wave is rated, look (the test at
    q / max_looks), and stop when it is decided, out of looks, time or money."""
    if adaptive.status == AdaptiveStudy.Status.RUNNING:
        last = batches(adaptive)[-1:]
        if last and not alt_goal.wave_done(last[0]):
            if now >= adaptive.deadline:
                begin_stop(adaptive, "time is up: the deadline passed before the goal was met")
            else:
                return "idle"
        else:
            number = alt_goal.looks_taken(adaptive) + 1
            verdict = alt_goal.look(adaptive)
            decided = verdict["verdict"] in ("passes", "fails")
            decide(
                adaptive,
                Decision.Action.LOOK,
                f"look {number} of {adaptive.max_looks} (q {alt_goal.q_per_look(adaptive):.3f}): "
                f"{verdict['verdict']}: {verdict['reason']}",
            )
            Snapshot.objects.create(
                adaptive=adaptive,
                labels=int(verdict["test"].get("items", 0) or 0),
                spent_pence=money(adaptive)["spent"],
                met=decided,
                estimates=[
                    {
                        "look": number,
                        "verdict": verdict["verdict"],
                        "reason": verdict["reason"],
                        "winning_rate": verdict["test"].get("winning_rate"),
                        "advantage_probability": verdict["test"].get("advantage_probability"),
                    }
                ],
            )
            if decided:
                begin_stop(adaptive, f"the goal is met: the judge {verdict['verdict']}")
            elif number >= adaptive.max_looks:
                begin_stop(adaptive, f"inconclusive after {number} looks: {verdict['decide']}")
            elif now >= adaptive.deadline:
                begin_stop(adaptive, "time is up: the deadline passed before the goal was met")
            else:
                done = send_alt_wave(adaptive)
                if adaptive.status == AdaptiveStudy.Status.RUNNING:
                    return done
    if work_in_progress(adaptive):
        return "stopping"
    last_look = Snapshot.objects.filter(adaptive=adaptive).order_by("-created_at", "-pk").first()
    finish(adaptive, found, bool(last_look and last_look.met))
    return "finished"


def begin_stop(adaptive: AdaptiveStudy, reason: str, actor: User | None = None) -> None:
    """No new arrivals: every open batch is paused (work in progress may finish).
    Needs the adaptive study's lock."""
    for study in batches(adaptive):
        if study.status == Study.Status.OPEN:
            check_set_study_status(study, Study.Status.PAUSED, actor)
    adaptive.status = AdaptiveStudy.Status.STOPPING
    adaptive.stop_reason = reason[:200]
    adaptive.save(update_fields=["status", "stop_reason"])
    decide(adaptive, Decision.Action.STOPPING, reason, actor)


def finish(adaptive: AdaptiveStudy, found: list, met: bool) -> None:
    """Close every batch and write the report. Needs the adaptive study's lock."""
    for study in batches(adaptive):
        check_set_study_status(study, Study.Status.CLOSED)
    adaptive.status = AdaptiveStudy.Status.FINISHED
    adaptive.finished_at = timezone.now()
    adaptive.report = final_report(adaptive, found, met, money(adaptive))
    adaptive.save(update_fields=["status", "finished_at", "report"])
    decide(adaptive, Decision.Action.FINISHED, adaptive.report["answer"])


# --- the researcher's decisions ---------------------------------------------------------------


@transaction.atomic
def stop(adaptive: AdaptiveStudy, actor: User | None, reason: str = "") -> AdaptiveStudy:
    adaptive = lock(adaptive)
    if adaptive.status == AdaptiveStudy.Status.PLANNED:
        adaptive.status = AdaptiveStudy.Status.FINISHED
        adaptive.stop_reason = "stopped before it started"
        adaptive.finished_at = timezone.now()
        adaptive.save(update_fields=["status", "stop_reason", "finished_at"])
        decide(adaptive, Decision.Action.FINISHED, adaptive.stop_reason, actor)
    elif adaptive.status == AdaptiveStudy.Status.RUNNING:
        begin_stop(
            adaptive,
            f"stopped by {actor or 'a researcher'}" + (f": {reason}" if reason else ""),
            actor,
        )
    else:
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status} already.")
    return adaptive


@transaction.atomic
def change_budget(adaptive: AdaptiveStudy, pence: int, actor: User | None) -> AdaptiveStudy:
    adaptive = lock(adaptive)
    if adaptive.status in (AdaptiveStudy.Status.STOPPING, AdaptiveStudy.Status.FINISHED):
        raise AdaptiveError(
            f"'{adaptive.name}' is {adaptive.status}: its budget no longer matters."
        )
    committed = sum(money(adaptive).values())
    if pence < committed:
        raise AdaptiveError(
            f"GBP {pence / 100:.2f} is below what is spent or reserved already "
            f"(GBP {committed / 100:.2f})."
        )
    before = adaptive.budget_pence
    adaptive.budget_pence = pence
    adaptive.save(update_fields=["budget_pence"])
    decide(
        adaptive, Decision.Action.BUDGET, f"GBP {before / 100:.2f} -> GBP {pence / 100:.2f}", actor
    )
    return adaptive


@transaction.atomic
def change_deadline(
    adaptive: AdaptiveStudy, deadline: datetime, actor: User | None
) -> AdaptiveStudy:
    adaptive = lock(adaptive)
    if adaptive.status in (AdaptiveStudy.Status.STOPPING, AdaptiveStudy.Status.FINISHED):
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status}: it cannot be extended.")
    if deadline <= timezone.now():
        raise AdaptiveError("The new deadline has passed already.")
    before = adaptive.deadline
    adaptive.deadline = deadline
    adaptive.save(update_fields=["deadline"])
    decide(
        adaptive,
        Decision.Action.DEADLINE,
        f"{before:%Y-%m-%d %H:%M} -> {deadline:%Y-%m-%d %H:%M}",
        actor,
    )
    return adaptive


def running_ids() -> list[int]:
    return list(
        AdaptiveStudy.objects.filter(
            Q(status=AdaptiveStudy.Status.RUNNING) | Q(status=AdaptiveStudy.Status.STOPPING)
        ).values_list("pk", flat=True)
    )


def owner_of(study_id: int) -> int | None:
    return Draw.objects.filter(study_id=study_id).values_list("adaptive_id", flat=True).first()
