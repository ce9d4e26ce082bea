"""An adaptive human study: a goal (what the humans must answer), a budget in
money and time, the design that answers it (chosen by the plan, or by its
researcher) and the loop that reaches it (adaptive.loop).

The loop draws responses at random from the pool, one system at a time, and
sends each draw to a human with the probability recorded on the Draw: 1 in a
fixed design (`uniform`, `ppi`); in the `adaptive` design fixed when the
study is planned, from the judges' disagreement, never below a uniform
floor. The draws a wave sends are rated in ordinary studies of annotator
(crowd on Prolific, or gold), one per batch: a response drawn and sent twice
in a wave is rated in two batches, by two participants. Every accepted rating
updates the estimates (a Snapshot); the loop stops itself when the
goal is met, the budget or the time is spent, or a researcher stops it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.models import Study
from annotator.prolific_records import ParticipantGroup
from corpus.choices import Mode
from corpus.models import Dataset
from generation.models import Response, System
from judging.models import Evaluator
from users.models import owning_project


class AdaptiveStudy(models.Model):
    class Goal(models.TextChoices):
        MEANS = "means", "every system's mean within +-w"
        RANKING = "ranking", "the ranking of the systems with probability >= p"
        ALT_TEST = "alt_test", "the judge can replace a rater of the population (alt-test)"

    class Population(models.TextChoices):
        CROWD = "crowd", "Crowd raters (Prolific)"
        GOLD = "gold", "Expert annotators"

    class Status(models.TextChoices):
        PLANNED = "planned", "Planned: nothing spent"
        RUNNING = "running", "Running"
        STOPPING = "stopping", "Stopping: no new arrivals, work in progress finishing"
        FINISHED = "finished", "Finished"

    class Design(models.TextChoices):
        # analysis.planning.study_plan's designs (DESIGNS); the plan chooses one
        UNIFORM = "uniform", "A fixed uniform design on humans alone"
        PPI = "ppi", "A fixed design with the judge (PPI)"
        ADAPTIVE = "adaptive", "Adaptive waves with an anytime interval"

    name = models.CharField(max_length=150, unique=True)
    project = owning_project("adaptive_studies")
    goal = models.CharField(max_length=8, choices=Goal.choices, default=Goal.MEANS)
    population = models.CharField(
        max_length=5, choices=Population.choices, default=Population.CROWD
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    mode = models.CharField(max_length=2, choices=Mode.choices, default=Mode.SINGLE_TURN)
    systems = models.ManyToManyField(System, related_name="+")
    judge = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="+")
    uncertainty_judge = models.ForeignKey(
        Evaluator,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
        help_text="A second judge: where it disagrees with the judge, a draw is sent more often.",
    )
    # analysis.report.selection.DEFERRAL_ALPHAS (a test holds them equal; the report's
    # modules are not loaded here)
    defer_at = models.FloatField(
        null=True,
        blank=True,
        choices=[
            (0.1, "90% agreement"),
            (0.2, "80% agreement"),
            (0.3, "70% agreement"),
        ],
        help_text="Send what the judge defers at this target agreement with the humans (the "
        "report's deferring judge) more often, instead of sampling by disagreement or spread.",
    )
    prior_humans = models.ForeignKey(
        Evaluator,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
        help_text="Human scores from before, used only by the plan to simulate raters.",
    )
    half_width = models.FloatField(null=True, blank=True, help_text="Means goal: +-w.")
    probability = models.FloatField(null=True, blank=True, help_text="Ranking goal: p.")
    epsilon = models.FloatField(
        null=True, blank=True, help_text="Alt-test goal: the cost-benefit margin epsilon."
    )
    max_looks = models.PositiveSmallIntegerField(
        default=5, help_text="Alt-test goal: waves looked at, at most (the test's q is split)."
    )
    raters_per_item = models.PositiveSmallIntegerField(
        default=3, help_text="Alt-test goal: raters of every item (3 or more)."
    )
    alpha = models.FloatField(default=0.05)
    min_labels = models.PositiveIntegerField(default=30)
    t_opt = models.FloatField(default=800, help_text="Draws where the sequence is tightest.")
    scale = models.FloatField(default=3.0, help_text="A guess of an increment's SD.")
    send_rate = models.FloatField(default=0.3, help_text="Share of draws sent to humans.")
    # analysis.planning.items_for_humans.FLOOR (a test holds them equal; pandas is not loaded here)
    floor = models.FloatField(default=0.5, help_text="Uniform share of the probabilities.")
    draws_per_wave = models.PositiveIntegerField(default=100, help_text="Per system.")
    budget_pence = models.PositiveIntegerField()
    deadline = models.DateTimeField()
    hourly_pay = models.DecimalField(max_digits=6, decimal_places=2, default=9)
    minutes_per_item = models.FloatField(default=2.0)
    fee_share = models.FloatField(default=1 / 3, help_text="The platform's fee on a reward.")
    participant_groups = models.ManyToManyField(
        ParticipantGroup,
        blank=True,
        related_name="+",
        help_text="Every batch is recruited through these allowlists and around these "
        "blocklists (e.g. raters who qualified before).",
    )
    on_prolific = models.BooleanField(
        default=False, help_text="Create, publish and close each batch on Prolific."
    )
    bonus_pence = models.PositiveIntegerField(
        default=0, help_text="At the end, a bonus to each participant whose work was accepted."
    )
    closing_message = models.TextField(
        blank=True, help_text="At the end, sent to every participant on Prolific."
    )
    design = models.CharField(
        max_length=8,
        choices=Design.choices,
        blank=True,
        default="",
        help_text="The design it runs: left empty, the plan's choice (the cheapest design "
        "whose simulated intervals keep their coverage). The alt-test goal runs its own "
        "waves (recorded as adaptive).",
    )
    seed = models.PositiveIntegerField(default=0)
    pool = models.JSONField(
        default=dict, help_text="Per response id: [system id, judge score, probability]."
    )
    plan = models.JSONField(default=dict, help_text="The plan shown before anything was spent.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PLANNED)
    stop_reason = models.CharField(max_length=200, blank=True)
    report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    closed_out_at = models.DateTimeField(
        null=True, blank=True, help_text="When one worker took the closing bonus and message."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "adaptive studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(goal="means") & Q(half_width__gt=0))
                | (Q(goal="ranking") & Q(probability__gt=0) & Q(probability__lt=1))
                | (Q(goal="alt_test") & Q(epsilon__gt=0) & Q(epsilon__lt=1)),
                name="adaptive_goal_stated",
            ),
            models.CheckConstraint(
                condition=Q(alpha__gt=0) & Q(alpha__lt=1), name="adaptive_alpha_valid"
            ),
            models.CheckConstraint(
                condition=Q(send_rate__gt=0)
                & Q(send_rate__lte=1)
                & Q(floor__gt=0)
                & Q(floor__lte=1),
                name="adaptive_rates_valid",
            ),
            models.CheckConstraint(
                condition=Q(defer_at__isnull=True) | Q(defer_at__in=[0.1, 0.2, 0.3]),
                name="adaptive_defer_at_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def budget_gbp(self) -> float:
        return self.budget_pence / 100

    @property
    def place_pence(self) -> float:
        """One rated item's cost, the platform's fee included."""
        return float(self.hourly_pay) * 100 * self.minutes_per_item / 60 * (1 + self.fee_share)

    @property
    def fixed(self) -> bool:
        """A fixed design (uniform or PPI): every draw sent, the interval read
        once the planned waves are rated; not anytime-valid."""
        return self.design in (self.Design.UNIFORM, self.Design.PPI)

    def goal_text(self) -> str:
        if self.goal == self.Goal.MEANS:
            return f"every system's mean human score within +-{self.half_width:g} (95%)"
        if self.goal == self.Goal.ALT_TEST:
            return (
                f"whether {self.judge} can replace {self.get_population_display().lower()} "
                f"at epsilon {self.epsilon:g} (alt-test, decided)"
            )
        return f"the ranking of the systems with probability >= {self.probability:g}"


# What a researcher states when planning an adaptive study (the console's form
# and the API take these; budget and bonus come in their own units there).
STATED_FIELDS = [
    "name",
    "goal",
    "half_width",
    "probability",
    "epsilon",
    "max_looks",
    "raters_per_item",
    "population",
    "dataset",
    "mode",
    "systems",
    "judge",
    "uncertainty_judge",
    "defer_at",
    "prior_humans",
    "deadline",
    "hourly_pay",
    "minutes_per_item",
    "draws_per_wave",
    "send_rate",
    "floor",
    "min_labels",
    "design",
    "on_prolific",
    "participant_groups",
    "closing_message",
]


class Draw(models.Model):
    """One draw of a system's sequence: a response picked at random from the
    pool, sent to a human with `probability` (recorded before any label)."""

    adaptive = models.ForeignKey(AdaptiveStudy, on_delete=models.PROTECT, related_name="draws")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField(help_text="Its place in the system's sequence.")
    wave = models.PositiveSmallIntegerField()
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    probability = models.FloatField()
    sent = models.BooleanField()
    study = models.ForeignKey(
        Study,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The batch that rates it (sent draws only).",
    )

    class Meta:
        ordering = ["adaptive", "system", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["adaptive", "system", "position"], name="draw_unique_position"
            ),
            models.CheckConstraint(
                condition=Q(probability__gt=0) & Q(probability__lte=1),
                name="draw_probability_valid",
            ),
            models.CheckConstraint(
                condition=Q(sent=False, study__isnull=True) | Q(sent=True, study__isnull=False),
                name="draw_sent_has_batch",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.adaptive_id}/{self.system_id}#{self.position}"


class Snapshot(models.Model):
    """The estimates after an accepted rating changed them: the monitor's plot."""

    adaptive = models.ForeignKey(AdaptiveStudy, on_delete=models.CASCADE, related_name="snapshots")
    created_at = models.DateTimeField(auto_now_add=True)
    labels = models.PositiveIntegerField()
    spent_pence = models.FloatField()
    met = models.BooleanField()
    estimates = models.JSONField(help_text="Per system: mean, lower, upper, draws, labels.")

    class Meta:
        ordering = ["adaptive", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.adaptive_id} at {self.labels} labels"


class Decision(models.Model):
    """What the loop or a researcher decided, and why (the study's audit trail)."""

    class Action(models.TextChoices):
        PLANNED = "planned", "Planned"
        DESIGN = "design", "Design chosen by a researcher"
        STARTED = "started", "Started"
        WAVE = "wave", "Wave sent"
        LOOK = "look", "Looked (alt-test)"
        STOPPING = "stopping", "Stopping"
        FINISHED = "finished", "Finished"
        BUDGET = "budget", "Budget changed"
        DEADLINE = "deadline", "Deadline changed"
        PROLIFIC = "prolific", "Prolific refused or did not answer"
        BONUS = "bonus", "Bonus paid"
        MESSAGE = "message", "Message sent"

    adaptive = models.ForeignKey(AdaptiveStudy, on_delete=models.PROTECT, related_name="decisions")
    action = models.CharField(max_length=10, choices=Action.choices)
    detail = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["adaptive", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.detail[:60]}"
