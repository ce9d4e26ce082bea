"""The loop of an adaptive study: plan, start, waves and the automatic stop
(the researcher's stop, budget and deadline changes: adaptive.changes). Every
decision is a Decision row. `check_advance` is the one step the worker
repeats (after every completed task, and every minute): it updates the
estimates, stops the study when its goal is met or its budget or time is
spent, and sends the next wave when the last one is rated.

The study runs the design its plan chose (or its researcher, recorded):
`adaptive` sends waves of draws with their recorded probabilities and stops
on the anytime interval as soon as it is narrow enough; the fixed designs
(`uniform`, `ppi`) send the plan's first wave, every draw to a human, read
their fixed-n interval once the wave is rated, and add at most TOP_UPS
top-up waves sized from the spread of the labels so far (analysis.planning.study_plan).

Each change is a check_/do_ pair, as in annotator.actions: check_create,
check_start and check_advance are what callers call; each takes the adaptive
study's row lock first (adaptive.locks; a new study needs none), checks, and
calls its do_, which must run with that lock held, as must the helpers the
do_ calls (their docstrings say so). The annotator actions they call take
their studies' rows after it (annotator.actions' order), so two workers
advancing one study at once do one step each.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from adaptive import alt_goal
from adaptive.errors import AdaptiveError
from adaptive.estimates import SystemEstimate, estimates, goal_met, unanswered
from adaptive.events import budget_reached
from adaptive.locks import lock_adaptive
from adaptive.models import AdaptiveStudy, Decision, Draw, Snapshot
from adaptive.planning import design_chosen, make_plan
from adaptive.pool import build_pool
from adaptive.reporting import final_report
from adaptive.waves import (
    MIN_WAVE,
    batch_minutes,
    batches,
    create_batch,
    draw_wave,
    first_wave_sizes,
    goal_width,
    money,
    split_into_batches,
    top_up_sizes,
    wave_cost,
    wave_sizes,
)
from analysis.planning.study_plan import DESIGN_WORDS, TOP_UPS, VARIANCE_BOUND
from annotator.actions.status import check_set_study_status
from annotator.models import Assignment, Study
from annotator.prolific_api import reward_in_pence
from users.models import User


def decide(
    adaptive: AdaptiveStudy, action: str, detail: str, actor: User | None = None
) -> Decision:
    return Decision.objects.create(adaptive=adaptive, action=action, detail=detail, actor=actor)


# --- planning -------------------------------------------------------------------------------


@transaction.atomic
def check_create(
    adaptive: AdaptiveStudy,
    systems: list,
    actor: User | None = None,
    groups: list | None = None,
) -> AdaptiveStudy:
    """Check a new adaptive study and save it with its pool and its plan
    (do_create); nothing is spent. Raises AdaptiveError saying what is wrong
    (nothing saved then)."""
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
    stated = adaptive.design  # the researcher's choice over the plan's, if any
    if stated and stated not in AdaptiveStudy.Design.values:
        raise AdaptiveError(f"No design {stated!r}: {', '.join(AdaptiveStudy.Design.values)}.")
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST and stated not in ("", "adaptive"):
        raise AdaptiveError(
            "The alt-test goal runs its own waves (a look after each): it has no design to choose."
        )
    return do_create(adaptive, systems, actor, groups)


def do_create(
    adaptive: AdaptiveStudy, systems: list, actor: User | None, groups: list | None
) -> AdaptiveStudy:
    """Save a checked new study, its pool, plan and first decisions. Takes no
    lock (the row is new); only check_create calls it, inside its transaction."""
    stated = adaptive.design  # the researcher's choice over the plan's, if any
    adaptive.pool = build_pool(
        adaptive.dataset,
        adaptive.mode,
        systems,
        adaptive.judge,
        adaptive.uncertainty_judge,
        adaptive.send_rate,
        adaptive.floor,
        project_id=adaptive.project_id,
        defer_at=adaptive.defer_at,
    )
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        adaptive.plan = alt_goal.plan(adaptive)
        adaptive.design = AdaptiveStudy.Design.ADAPTIVE  # its waves are its own
    else:
        adaptive.plan = make_plan(adaptive, systems)
        adaptive.design = adaptive.plan["design"]
    adaptive.created_by = actor
    adaptive.save()
    adaptive.systems.set(systems)
    if groups:
        adaptive.participant_groups.set(groups)
    decide(adaptive, Decision.Action.PLANNED, adaptive.plan["summary"], actor)
    if stated and adaptive.goal != AdaptiveStudy.Goal.ALT_TEST:
        decide(adaptive, Decision.Action.DESIGN, design_chosen(adaptive.plan, actor), actor)
    return adaptive


def send_wave(
    adaptive: AdaptiveStudy, counts: dict[int, int], actor: User | None = None, why: str = ""
) -> str:
    """Draw the next wave (counts[system] draws each) and open its batches; the
    wave's decision says which design and `why` it is that size. An adaptive
    wave that would not fit the budget is halved until it does (or stops the
    study); a fixed design's wave is its design: one that does not fit stops
    the study on its budget. Needs the adaptive study's lock."""
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
        if adaptive.fixed:
            stop_for_budget(
                adaptive,
                left,
                f"budget spent: GBP {left / 100:.2f} left, not enough for wave {wave} of the "
                f"fixed design (GBP {cost / 100:.2f})",
            )
            return "stopping"
        if all(n <= MIN_WAVE for n in sizes.values()):
            stop_for_budget(
                adaptive,
                left,
                f"budget spent: GBP {left / 100:.2f} left, not enough for a wave of {MIN_WAVE} "
                "draws per system",
            )
            return "stopping"
        share /= 2
    design = f"{adaptive.design}: {DESIGN_WORDS[adaptive.design]}"
    halved = f" (halved to fit the budget: {share:g} of the size)" if share < 1 else ""
    why = f"; {why}{halved}" if why else halved
    if not parts:  # nothing was sent: the judge's scores alone move the estimates
        Draw.objects.bulk_create(draws)
        decide(
            adaptive,
            Decision.Action.WAVE,
            f"wave {wave} ({design}): {len(draws)} draws, none sent{why}",
            actor,
        )
        return "wave"
    for k, batch in enumerate(parts):
        create_batch(adaptive, wave, k, batch)
    Draw.objects.bulk_create(draws)
    sent = sum(len(b) for b in parts)
    names = dict(adaptive.systems.values_list("pk", "name"))
    decide(
        adaptive,
        Decision.Action.WAVE,
        f"wave {wave} ({design}): {sum(sizes.values())} draws over {len(sizes)} system(s) "
        f"({', '.join(f'{names.get(s, s)} {n}' for s, n in sorted(sizes.items()))}), {sent} "
        f"sent to humans in {len(parts)} batch(es), up to GBP {cost / 100:.2f}{why}",
        actor,
    )
    return "wave"


def first_wave(adaptive: AdaptiveStudy, actor: User | None = None) -> str:
    """The design's first wave. Needs the adaptive study's lock."""
    if adaptive.fixed:
        return send_wave(
            adaptive,
            first_wave_sizes(adaptive),
            actor,
            f"the plan's first wave: per system, the labels whose fixed-n interval reaches "
            f"+-{goal_width(adaptive):.2f} at the spread the plan simulated; every draw is "
            "sent to a human (probability 1) and the interval is read once all are rated",
        )
    return send_wave(
        adaptive,
        {s.pk: adaptive.draws_per_wave for s in adaptive.systems.all()},
        actor,
        f"{adaptive.draws_per_wave} draws per system (the study's wave size), each sent with "
        "its recorded probability",
    )


def next_wave(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> str:
    """Once every sent draw is rated and the goal is open: the adaptive design's
    next wave, or a fixed design's top-up (at most TOP_UPS), or its stop.
    Needs the adaptive study's lock."""
    if not adaptive.fixed:
        return send_wave(
            adaptive,
            wave_sizes(adaptive, found),
            why="for the systems still open, each about what its interval still needs "
            f"(the half-width falling as 1/sqrt(draws), plus a quarter), at most "
            f"{adaptive.draws_per_wave}",
        )
    open_ = set(unanswered(adaptive, found))
    still = [e for e in found if e.system_id in open_]
    width = goal_width(adaptive)
    where = "; ".join(
        f"{e.name} {e.mean:.2f} [{e.lower:.2f}, {e.upper:.2f}] +-{e.half_width:.2f}"
        if e.mean is not None
        else f"{e.name}: no labels"
        for e in still
    )
    top_ups = (Draw.objects.filter(adaptive=adaptive).aggregate(last=Max("wave"))["last"] or 1) - 1
    if top_ups >= TOP_UPS:
        begin_stop(
            adaptive,
            f"the fixed design's labels are in (its first wave and {TOP_UPS} top-ups) and the "
            + (
                f"width +-{width:.2f} was not reached: {where}"
                if adaptive.goal == AdaptiveStudy.Goal.MEANS
                else f"intervals do not separate: {where}"
            ),
        )
        return "stopping"
    sizes = top_up_sizes(adaptive, found)
    return send_wave(
        adaptive,
        sizes,
        why=f"top-up {top_ups + 1} of at most {TOP_UPS} for the systems still open ({where}), "
        f"each sized for +-{width:.2f} on the {VARIANCE_BOUND:.0%} upper bound of the spread "
        "of its labels so far, never on their mean; the interval will be read on all the labels",
    )


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
def check_start(adaptive: AdaptiveStudy, actor: User | None = None) -> AdaptiveStudy:
    """Start a planned study: takes its lock, checks, and sends the first wave
    (do_start)."""
    adaptive = lock_adaptive(adaptive)
    if adaptive.status != AdaptiveStudy.Status.PLANNED:
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status}: only a planned study starts.")
    do_start(adaptive, actor)
    return adaptive


def do_start(adaptive: AdaptiveStudy, actor: User | None) -> None:
    """Needs the adaptive study's lock (check_start takes it)."""
    adaptive.status = AdaptiveStudy.Status.RUNNING
    adaptive.started_at = timezone.now()
    adaptive.save(update_fields=["status", "started_at"])
    decide(adaptive, Decision.Action.STARTED, adaptive.goal_text(), actor)
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        send_alt_wave(adaptive, actor)
    else:
        first_wave(adaptive, actor)


@transaction.atomic
def check_advance(adaptive: AdaptiveStudy | int, now: datetime | None = None) -> str:
    """One step; says what it did ("idle", "wave", "stopping", "finished").
    Takes the study's lock; a study that is not running is left idle."""
    adaptive = lock_adaptive(adaptive)
    if adaptive.status not in (AdaptiveStudy.Status.RUNNING, AdaptiveStudy.Status.STOPPING):
        return "idle"
    return do_advance(adaptive, now or timezone.now())


def do_advance(adaptive: AdaptiveStudy, now: datetime) -> str:
    """Needs the adaptive study's lock (check_advance takes it)."""
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
            done = next_wave(adaptive, found)
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
        stop_for_budget(
            adaptive,
            left,
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
    """The alt-test goal's step: once a wave is rated, look (the test at the
    look's share of q: adaptive.alt_goal.q_at_look), and stop when it is
    decided, out of looks, time or money."""
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
                f"look {number} of {adaptive.max_looks} (q {alt_goal.q_per_look(adaptive):.4f}): "
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


def stop_for_budget(adaptive: AdaptiveStudy, left: float, reason: str) -> None:
    """begin_stop because the next wave would pass the budget (`left` pence are
    not spent or reserved); tells the apps after adaptive (`budget_reached`).
    Needs the adaptive study's lock."""
    begin_stop(adaptive, reason)
    budget_reached.send(
        sender=AdaptiveStudy,
        pk=adaptive.pk,
        limit=adaptive.budget_pence / 100,
        spent=(adaptive.budget_pence - left) / 100,
        currency="GBP",
    )


def finish(adaptive: AdaptiveStudy, found: list, met: bool) -> None:
    """Close every batch and write the report. Needs the adaptive study's lock."""
    for study in batches(adaptive):
        check_set_study_status(study, Study.Status.CLOSED)
    adaptive.status = AdaptiveStudy.Status.FINISHED
    adaptive.finished_at = timezone.now()
    adaptive.report = final_report(adaptive, found, met, money(adaptive))
    adaptive.save(update_fields=["status", "finished_at", "report"])
    decide(adaptive, Decision.Action.FINISHED, adaptive.report["answer"])


def running_ids() -> list[int]:
    return list(
        AdaptiveStudy.objects.filter(
            Q(status=AdaptiveStudy.Status.RUNNING) | Q(status=AdaptiveStudy.Status.STOPPING)
        ).values_list("pk", flat=True)
    )


def owner_of(study_id: int) -> int | None:
    return Draw.objects.filter(study_id=study_id).values_list("adaptive_id", flat=True).first()
