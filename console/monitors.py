"""What the console shows about a run or a study, computed from what is stored.
Plain functions a test can call without HTTP; no state changes here (those
are the apps' services: judging.judging_runs, generation.runner, annotator.actions).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db.models import Count, Q
from django.utils import timezone

from annotator.actions.groups import qualified_raters
from annotator.models import AuditEvent, Participant, Study
from annotator.quality import ParticipantQuality
from annotator.wording import audit_detail
from generation.models import GenerationRun, System
from judging.models import Evaluator, JudgeItem, JudgingRun
from runs.models import ACTIVE, RunStatus

if TYPE_CHECKING:  # the figure is described where a plot is asked for
    from analysis.figures.figure_types import Figure

OUTCOME_LABELS = {
    "api_error": "API errors",
    "parse_failure": "Answers without a readable score",
    "out_of_range": "Scores outside the scale",
    "truncated": "Answers cut off at max_tokens",
}


@dataclass
class FailureGroup:
    """Failed items that share a cause, with the first one's message."""

    outcome: str
    label: str
    cause: str
    count: int
    first: str
    needs_human: int = 0  # of them, in the "needs a human" list (the rest wait for a resume)


@dataclass
class RunMonitor:
    run: GenerationRun | JudgingRun
    kind: str  # "judging" or "generation"
    percent: float
    failed_percent: float
    elapsed_seconds: float | None
    rate_per_minute: float | None
    eta_seconds: float | None
    systems_label: str
    failures: list[FailureGroup] = field(default_factory=list)
    needs_human: int = 0
    pending: int = 0
    budget_percent: float | None = None
    waiting_until: datetime | None = None  # the server asked the run to wait
    can_cancel: bool = False
    can_resume: bool = False
    can_retry: bool = False
    # why the cost reads as it does where it is not a price at work: "no cost: ..."
    # (a metric, a local model) or "cost unknown: ..." (no price set): never a bare $0
    cost_note: str | None = None

    @property
    def cost_unknown(self) -> bool:
        return bool(self.cost_note and self.cost_note.startswith("cost unknown"))

    @property
    def active(self) -> bool:
        return self.run.status in ACTIVE

    @property
    def tokens(self) -> int:
        return self.run.prompt_tokens + self.run.completion_tokens


def cost_note(run: JudgingRun | GenerationRun) -> str | None:
    """What the run's cost means when no price is at work: a metric or a local
    model costs nothing; a served model without a price per million tokens
    has a cost Concord cannot know (its $0 would read as free)."""
    from llm.config import LOCAL_SERVER

    if isinstance(run, JudgingRun):
        if run.evaluator.kind == Evaluator.Kind.METRIC:
            return "no cost: a metric calls no model"
        if run.evaluator.kind == Evaluator.Kind.IMPORTED:
            return "no cost: imported scores"
        config, whose = run.evaluator.config, "judge"
    else:
        if run.origin != GenerationRun.Origin.GENERATED:
            return "no cost: imported responses"
        if run.system.backend == System.Backend.HF:
            return "no cost: a local model"
        config, whose = run.system.config, "system"
    config = config if isinstance(config, dict) else {}
    if config.get("server") == LOCAL_SERVER:
        return "no cost: a local model"
    priced = any(
        float(config.get(key) or 0) > 0
        for key in ("price_input_per_million", "price_output_per_million")
    )
    if not priced:
        return (
            f"cost unknown: this {whose} has no price per million tokens "
            "(set one in its settings to count and cap the cost)"
        )
    return None


def cause_of(outcome: str, detail: str) -> str:
    """What failed items are grouped by: for API errors the error's kind (the
    exception's name, or the first line), else the outcome itself."""
    if outcome != "api_error":
        return OUTCOME_LABELS.get(outcome, outcome or "unknown")
    first_line = (detail or "").strip().splitlines()[0] if (detail or "").strip() else ""
    head = first_line.split(":", 1)[0].strip()
    if head and head.replace("_", "").replace(".", "").isalnum() and " " not in head:
        return head  # e.g. APIConnectionError, RateLimitError, Error code 500 is a line
    return first_line[:120] or "no message"


def judging_failures(run: JudgingRun) -> list[FailureGroup]:
    """The run's items that failed (waiting for a resume, or needing a human),
    grouped by cause, largest group first, each with its first item's message."""
    rows = (
        JudgeItem.objects.filter(run=run)
        .filter(
            Q(status=JudgeItem.Status.NEEDS_HUMAN)
            | Q(status=JudgeItem.Status.PENDING, outcome__in=list(OUTCOME_LABELS))
        )
        .order_by("pk")
        .values_list("outcome", "detail", "status")
    )
    groups: dict[tuple[str, str], FailureGroup] = {}
    for outcome, detail, status in rows.iterator(chunk_size=2000):
        cause = cause_of(outcome, detail)
        group = groups.get((outcome, cause))
        if group is None:
            group = groups[(outcome, cause)] = FailureGroup(
                outcome, OUTCOME_LABELS.get(outcome, outcome), cause, 0, detail or ""
            )
        group.count += 1
        if status == JudgeItem.Status.NEEDS_HUMAN:
            group.needs_human += 1
    return sorted(groups.values(), key=lambda g: (-g.count, g.label, g.cause))


def _elapsed(run, now: datetime) -> float | None:
    if not run.started_at:
        return None
    end = run.finished_at if run.status not in ACTIVE and run.finished_at else now
    return max((end - run.started_at).total_seconds(), 1e-6)


def run_monitor(run: GenerationRun | JudgingRun, now: datetime | None = None) -> RunMonitor:
    now = now or timezone.now()
    kind = "judging" if isinstance(run, JudgingRun) else "generation"
    total = run.total or 0
    elapsed = _elapsed(run, now)
    handled = run.done + run.failed
    rate = handled / elapsed * 60 if elapsed and handled else None
    remaining = max(total - handled, 0)
    eta = remaining / rate * 60 if rate and run.status == RunStatus.RUNNING else None
    if isinstance(run, JudgingRun):
        systems = [s.name for s in run.systems.all()]
    else:
        systems = [run.system.name]
    monitor = RunMonitor(
        run=run,
        kind=kind,
        percent=100 * run.done / total if total else 0,
        failed_percent=100 * run.failed / total if total else 0,
        elapsed_seconds=elapsed,
        rate_per_minute=rate,
        eta_seconds=eta,
        systems_label=", ".join(systems) if systems else "every system of the dataset",
    )
    live = run.status == RunStatus.RUNNING and run.lease_is_live
    monitor.can_cancel = run.status in ACTIVE
    if run.status in ACTIVE and run.waiting_until and run.waiting_until > timezone.now():
        monitor.waiting_until = run.waiting_until
    finished_not_done = run.status in (RunStatus.FAILED, RunStatus.CANCELLED)
    stalled = run.status == RunStatus.RUNNING and not live
    monitor.can_resume = finished_not_done or stalled
    monitor.cost_note = cost_note(run)
    if kind == "judging":
        assert isinstance(run, JudgingRun)
        counts = dict(
            JudgeItem.objects.filter(run=run)
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        monitor.needs_human = counts.get(JudgeItem.Status.NEEDS_HUMAN, 0)
        monitor.pending = counts.get(JudgeItem.Status.PENDING, 0)
        monitor.failures = judging_failures(run)
        monitor.can_retry = monitor.needs_human > 0 and run.status not in ACTIVE
        if run.budget:
            monitor.budget_percent = min(100.0, 100 * run.cost / float(run.budget))
    else:
        assert isinstance(run, GenerationRun)
        monitor.can_resume = monitor.can_resume and run.origin == GenerationRun.Origin.GENERATED
    return monitor


# --- studies -------------------------------------------------------------------------------


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


@dataclass
class ArrivalChart:
    bars: list[Bar]
    total: int
    bucket_label: str  # "per hour", "per 10 minutes", ...
    start: datetime | None
    end: datetime | None
    peak: int


BUCKETS = [
    (timedelta(minutes=1), "per minute"),
    (timedelta(minutes=5), "per 5 minutes"),
    (timedelta(minutes=15), "per 15 minutes"),
    (timedelta(hours=1), "per hour"),
    (timedelta(hours=6), "per 6 hours"),
    (timedelta(days=1), "per day"),
]


def arrival_chart(
    times: list[datetime], now: datetime, *, max_bars: int = 36, width: float = 360, height=70
) -> ArrivalChart:
    """Arrivals counted per bucket, the bucket the smallest of BUCKETS that
    fits the span from the first arrival to now in max_bars bars; bars ready
    to draw in an SVG of width x height."""
    if not times:
        return ArrivalChart([], 0, "", None, None, 0)
    start = min(times)
    span = max(now - start, timedelta(seconds=1))
    size, label = next(
        ((s, text) for s, text in BUCKETS if span / s <= max_bars),
        BUCKETS[-1],
    )
    first = start - (start - datetime.min.replace(tzinfo=start.tzinfo)) % size
    count = min(max_bars, int((now - first) / size) + 1)
    counts = Counter(min(count - 1, int((t - first) / size)) for t in times)
    peak = max(counts.values())
    slot = width / count
    bars = []
    for index in range(count):
        n = counts.get(index, 0)
        h = (height - 14) * n / peak if peak else 0
        when = first + index * size
        bars.append(
            Bar(
                x=index * slot + 1,
                y=height - 12 - h,
                width=max(slot - 2, 1),
                height=h,
                count=n,
                label=when.strftime("%d %b %H:%M"),
            )
        )
    return ArrivalChart(bars, len(times), label, first, now, peak)


def failed_check_label(study: Study) -> str:
    """What earns a participant the failed-check code: "attention checks",
    "qualification round", both, or "" when the study has neither."""
    checks = []
    if study.attention_checks:
        checks.append("attention checks")
    if study.practice_items:
        checks.append("qualification round")
    return " or the ".join(checks)


def study_arrivals(study: Study, now: datetime | None = None) -> ArrivalChart:
    now = now or timezone.now()
    times = list(
        Participant.objects.filter(study=study, prolific_pid__gt="").values_list(
            "created_at", flat=True
        )
    ) or list(Participant.objects.filter(study=study).values_list("created_at", flat=True))
    return arrival_chart(times, now)


@dataclass
class AuditEntry:
    """One line of the study monitor's recent changes, in words."""

    when: datetime
    action: str  # the action's label ("Quota refilled")
    detail: str  # what it did, as a phrase; may be empty
    participant: str
    actor: str


def audit_entries(study: Study, limit: int = 8) -> list[AuditEntry]:
    """The study's latest audit events, newest first, each in words."""
    events = (
        AuditEvent.objects.filter(study=study)
        .select_related("participant__user", "actor")
        .order_by("-created_at", "-pk")[:limit]
    )
    return [
        AuditEntry(
            when=event.created_at,
            action=event.get_action_display(),
            detail=audit_detail(event),
            participant=str(event.participant) if event.participant else "",
            actor=event.actor.get_username() if event.actor else "",
        )
        for event in events
    ]


# --- Quality control plots -----------------------------------------------------------------


def rater_plot_state(row: ParticipantQuality, scale_max: int) -> str:
    """What a participant's QC plot is drawn from, hashed: it changes when
    their ratings (or the gold scores beside them) do, and only then, so the
    live part that polls every 5 s asks for a plot again only after a change."""
    drawn = [row.gold_pairs, row.scores, scale_max, row.gold_correlation, row.gold_note]
    return hashlib.sha256(json.dumps(drawn).encode()).hexdigest()[:20]


def rater_plot_figure(row: ParticipantQuality, scale_max: int) -> Figure:
    """The participant's ratings against gold and their spread (analysis.figures.plots)."""
    from analysis.figures.plots import rater_figure

    return rater_figure(
        row.rater, row.gold_pairs, row.scores, scale_max, row.gold_correlation, row.gold_note
    )


def prolific_card(study: Study, bonus_key: str) -> dict:
    """The monitor's card of a study on Prolific: its bonus payments, how
    many raters qualify for a bonus, and the bonus form's key (the session's:
    one payment however often the form is sent or loaded)."""
    return {
        "bonus_payments": list(study.bonus_payments.prefetch_related("lines")[:20]),
        "bonus_key": bonus_key,
        "qualified_count": len(qualified_raters(study)),
    }
