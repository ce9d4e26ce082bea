"""Evaluators and their judgments, plus the jobs that import published scores.

Every evaluator (an LLM judge, a metric, a gold expert, a crowd study, scores
imported from a file) produces Judgments on Responses with a score on the
common 1-10 scale, so the analysis reads one table whatever the source. The
raw score and the scale it was given on are kept beside it.
"""

from typing import TypeAlias

from django.conf import settings
from django.db import models
from django.db.models import Count, F, Q

from corpus.choices import Mode
from generation.models import Response
from runs.models import ModelUsage, Run
from users.models import owning_project, sharing_project


class EvaluatorKind(models.TextChoices):
    LLM_RUBRIC = "llm_rubric", "LLM rubric judge"
    LLM_PAIRWISE = "llm_pairwise", "LLM pairwise judge"
    METRIC = "metric", "Automatic metric"
    GOLD_HUMAN = "gold_human", "Gold human (expert)"
    CROWD_HUMAN = "crowd_human", "Crowd human"
    IMPORTED = "imported", "Imported scores"
    PANEL = "panel", "Judge panel"


# The evaluator kinds that are people (an imported evaluator keeps its original
# kind in config["original_kind"]): the one definition every app reads.
HUMAN_KINDS = frozenset({EvaluatorKind.GOLD_HUMAN, EvaluatorKind.CROWD_HUMAN})
# The same as a filter: people's evaluators, imported ones by their original kind.
HUMAN_EVALUATORS = models.Q(kind__in=HUMAN_KINDS) | models.Q(
    kind=EvaluatorKind.IMPORTED, config__original_kind__in=HUMAN_KINDS
)


class EvaluatorQuerySet(models.QuerySet):
    def with_counts(self, projects: models.QuerySet | None = None) -> "EvaluatorQuerySet":
        """Each evaluator's number of judgments: of responses in `projects` (a
        shared evaluator judges every project's; a reader counts his own), or all."""
        if projects is None:
            return self.annotate(judgment_count=Count("judgments"))
        return self.annotate(
            judgment_count=Count(
                "judgments", filter=Q(judgments__response__run__project__in=projects)
            )
        )


class Evaluator(models.Model):
    Kind: TypeAlias = EvaluatorKind

    class Origin(models.TextChoices):
        CONCORD = "concord", "Made in Concord (a judge, a metric or a study)"
        PAPER = "paper", "The ELITR-Bench release"
        RATINGS_FILE = "ratings_file", "A ratings file (import_ratings)"

    name = models.CharField(max_length=200, unique=True)
    project = sharing_project("evaluators")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    origin = models.CharField(
        max_length=16,
        choices=Origin.choices,
        default=Origin.CONCORD,
        help_text="Where its scores come from: a ratings file never adds to another origin's.",
    )
    version = models.PositiveIntegerField(
        default=1, help_text="Raised when the configuration changes after judgments exist."
    )
    description = models.TextField(blank=True)
    config = models.JSONField(default=dict, blank=True)
    raw_scale_min = models.FloatField(default=1)
    raw_scale_max = models.FloatField(default=10)

    objects = EvaluatorQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=EvaluatorKind.values), name="evaluator_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(raw_scale_min__lt=F("raw_scale_max")), name="evaluator_scale_ordered"
            ),
            models.CheckConstraint(
                condition=Q(origin__in=["concord", "paper", "ratings_file"]),
                name="evaluator_origin_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Judgment(models.Model):
    """One evaluator's score of one response (per rater, seed and presentation order)."""

    evaluator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="judgments")
    # Judged data is never deleted with what it judged: delete the judgments first,
    # on purpose (or, better, keep them and make a new run).
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="judgments")
    rater = models.CharField(
        max_length=200, blank=True, help_text="Who scored, for evaluators with several raters."
    )
    seed = models.PositiveIntegerField(null=True, blank=True)
    order = models.PositiveSmallIntegerField(
        default=0, help_text="Presentation order, for judges that see several answers."
    )
    score = models.FloatField(help_text="On the common 1-10 scale.")
    raw_score = models.FloatField(help_text="As the evaluator gave it.")
    raw_scale_min = models.FloatField()
    raw_scale_max = models.FloatField()
    feedback = models.TextField(blank=True)
    probability = models.FloatField(
        null=True,
        blank=True,
        help_text="The probability the judge's tokens gave this score (asked for with "
        "logprobs; judging.token_probability).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["response_id", "evaluator__name", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluator", "response", "rater", "seed", "order"],
                name="judgment_unique_with_seed",
            ),
            models.UniqueConstraint(
                fields=["evaluator", "response", "rater", "order"],
                condition=Q(seed__isnull=True),
                name="judgment_unique_without_seed",
            ),
            models.CheckConstraint(
                condition=Q(score__gte=1) & Q(score__lte=10), name="judgment_score_in_range"
            ),
            models.CheckConstraint(
                condition=Q(probability__isnull=True)
                | (Q(probability__gte=0) & Q(probability__lte=1)),
                name="judgment_probability_valid",
            ),
            models.CheckConstraint(
                condition=Q(raw_score__gte=F("raw_scale_min"))
                & Q(raw_score__lte=F("raw_scale_max")),
                name="judgment_raw_score_in_scale",
            ),
        ]
        indexes = [models.Index(fields=["evaluator", "response"])]

    def __str__(self) -> str:
        return f"{self.evaluator.name}: {self.score:g}"


class BenchmarkImport(Run):
    """An ELITR-Bench import, or RULER made here and imported, started from
    the admin or the console and run by a Celery worker (done / total count
    its stages)."""

    class Kind(models.TextChoices):
        ELITR_BENCH = "elitr_bench", "ELITR-Bench's archives"
        RULER = "ruler", "RULER, made here"

    task_name = "judging.run_benchmark_import"

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ELITR_BENCH)
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text="RULER: what to make (tasks, lengths, samples, seed, tokenizer).",
    )

    source = models.CharField(
        max_length=500,
        blank=True,
        help_text="A folder or archive on the worker's machine; empty: the configured "
        "data folder, else download from GitHub.",
    )
    project = owning_project("benchmark_imports")
    versions = models.CharField(max_length=50, default="qa,conv")
    languages = models.CharField(max_length=50, default="en,cs")
    with_responses = models.BooleanField(default=True)
    stage = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "benchmark import"

    def __str__(self) -> str:
        return f"Import #{self.pk} ({self.status})"


class JudgingRun(Run, ModelUsage):
    """One evaluator over a selection of responses, run by Celery workers."""

    task_name = "judging.run_judging"

    project = owning_project("judging_runs")
    evaluator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="runs")
    dataset = models.ForeignKey("corpus.Dataset", on_delete=models.PROTECT, related_name="+")
    mode = models.CharField(max_length=2, choices=Mode.choices)
    systems = models.ManyToManyField(
        "generation.System", blank=True, related_name="+", help_text="None selected: every system."
    )
    # LLM judges
    refresh = models.BooleanField(
        default=False,
        help_text="Call again even when the ledger already holds an identical request.",
    )
    budget = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Stop when the run has cost this much (USD).",
    )
    projected_cost = models.FloatField(default=0)
    use_batch = models.BooleanField(
        default=False,
        help_text="Send the calls through the OpenAI Batch API (half the price, "
        "answers within 24 hours).",
    )
    batch_id = models.CharField(max_length=100, blank=True)
    batch_status = models.CharField(max_length=40, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "judging run"

    def __str__(self) -> str:
        return f"{self.evaluator.name} on {self.dataset} ({self.mode})"

    def queue(self) -> str:
        """Metrics: default; local models: gpu (a `-Q gpu -c 1` worker keeps the
        model loaded); API judges: llm."""
        if self.evaluator.kind == Evaluator.Kind.METRIC:
            return "default"
        return "gpu" if self.evaluator.config.get("server") == "hf" else "llm"


class JudgeItem(models.Model):
    """One unit of an LLM judging run: a response, a seed and an order."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Judged"
        NEEDS_HUMAN = "needs_human", "Needs a human"
        RESOLVED = "resolved", "Scored by a researcher"

    class Outcome(models.TextChoices):
        # What `outcome` holds ("" while pending); the API's filter takes these.
        # Not the field's choices: that would only add a migration.
        OK = "ok", "Judged"
        PARSE_FAILURE = "parse_failure", "No score in the expected format"
        OUT_OF_RANGE = "out_of_range", "Score outside the scale"
        TRUNCATED = "truncated", "Answer cut at the token limit"
        API_ERROR = "api_error", "The model's API failed"
        RETRY = "retry", "Sent back to be asked again"

    run = models.ForeignKey(JudgingRun, on_delete=models.CASCADE, related_name="items")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    opponent = models.ForeignKey(
        Response,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Pairwise: the baseline's response.",
    )
    seed = models.PositiveIntegerField()
    order = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    outcome = models.CharField(
        max_length=16, blank=True, help_text="ok, parse_failure, out_of_range, truncated, api_error"
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    call = models.ForeignKey(
        "llm.LLMCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "response", "seed", "order"],
                condition=Q(opponent__isnull=True),
                name="judgeitem_unique",
            ),
            models.UniqueConstraint(
                fields=["run", "response", "opponent", "seed", "order"],
                condition=Q(opponent__isnull=False),
                name="judgeitem_unique_pair",
            ),
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"run {self.run_id} response {self.response_id} seed {self.seed} ({self.status})"


class PairwiseVerdict(models.Model):
    """A pairwise judge's verdict on a response against an opponent (the
    baseline's response to the same question), in one presentation order."""

    class Winner(models.TextChoices):
        FIRST = "first", "The answer shown first"
        SECOND = "second", "The answer shown second"
        TIE = "tie", "Tie"

    evaluator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="verdicts")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    opponent = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    seed = models.PositiveIntegerField(help_text="An LLM judge's seed; 0 for human raters.")
    order = models.PositiveSmallIntegerField(help_text="0: the response shown first; 1: second.")
    rater = models.CharField(
        max_length=200, blank=True, help_text="Who judged, for evaluators with several raters."
    )
    winner = models.CharField(max_length=6, choices=Winner.choices)
    feedback = models.TextField(blank=True)
    probability = models.FloatField(
        null=True,
        blank=True,
        help_text="The probability the judge's tokens gave this verdict (asked for with "
        "logprobs; judging.token_probability).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["evaluator_id", "response_id", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluator", "response", "opponent", "seed", "order", "rater"],
                name="verdict_unique",
            ),
            models.CheckConstraint(condition=Q(order__in=[0, 1]), name="verdict_order_valid"),
            models.CheckConstraint(
                condition=Q(winner__in=["first", "second", "tie"]), name="verdict_winner_valid"
            ),
            models.CheckConstraint(
                condition=Q(probability__isnull=True)
                | (Q(probability__gte=0) & Q(probability__lte=1)),
                name="verdict_probability_valid",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.evaluator_id}: response {self.response_id} vs {self.opponent_id} "
            f"(order {self.order}): {self.winner}"
        )

    @property
    def outcome(self) -> str:
        return verdict_outcome(self.order, self.winner)


def verdict_outcome(order: int, winner: str) -> str:
    """win, loss or tie for the judged response, which is shown first in order 0
    and second in order 1."""
    if winner == "tie":
        return "tie"
    return "win" if (winner == "first") == (order == 0) else "loss"
