"""The agreement report as typed models; its JSON is their serialisation.

`AgreementReport` is a tree of pydantic models, one per section of the JSON
layout in docs/analysis.md (stamp, counts, means, correlations, rater
agreement, gold bins, breakdowns, judge diagnostics...). Renderers read
attributes, so a misspelt part is an AttributeError, not an empty cell; a
missing or mistyped field is a ValidationError when the report is built, not
a hole in the JSON.

Conventions that keep the JSON exactly as it has always been:

- Names chosen by the data (systems, evaluators, meetings, settings such as
  "st/qa/test2", gold bins "1".."10") stay dictionary keys; the parts every
  report has are fields.
- A statistic that cannot be computed is a `NotComputable` in place of its
  value (`{"computable": false, "reason": ...}` in the JSON); `OrNot[T]`
  is "a T, or why not".
- A field the JSON sometimes leaves out (a diagonal correlation has no p, a
  bin with one response carries a note) defaults to None and is left out of
  the JSON when it was never given: `to_dict` dumps with `exclude_unset`,
  so a field given as None is written as null and one never given is absent,
  on the way in from the builder and on the way back from stored JSON alike.
- Models are strict: a string or a boolean where a number belongs is refused,
  never converted. An int in a float field becomes a float, which would show
  in the JSON (3 -> 3.0); fields that hold either keep them apart (`int | float`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

SCHEMA_VERSION: Final = 4  # 2: the judge-trust section, PPI, the planner; 3: the scope, verdicts;
# 4: PPI's intervals hold at small samples (no clustered PPI interval, rank intervals from
# simultaneous intervals)

# Keys chosen by the data. Aliases document what a dictionary is keyed by.
EvaluatorName = str
SystemName = str
MeetingName = str
SettingKey = str  # "mode/version/split" ("st/qa/test2") or "mode/version/mean"
# Why a rater's ratings are left out of a report (analysis.report.scope.LeftOutRater).
RaterStatus = Literal["flagged", "failed_check", "excluded"]


class ReportPart(BaseModel):
    """A part of the report: frozen, strict, and no field it does not declare."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, validate_by_name=True, serialize_by_alias=True
    )


class NotComputable(ReportPart):
    """In place of a statistic that cannot be computed, with the reason."""

    computable: Literal[False]
    reason: str

    @classmethod
    def because(cls, reason: str) -> NotComputable:
        return cls(computable=False, reason=reason)


def _computed_or_not(value: Any) -> str:
    if isinstance(value, NotComputable) or (
        isinstance(value, dict) and value.get("computable") is False
    ):
        return "not_computable"
    return "computed"


T = TypeVar("T")
# A T, or why it could not be computed.
OrNot = Annotated[
    Annotated[T, Tag("computed")] | Annotated[NotComputable, Tag("not_computable")],
    Discriminator(_computed_or_not),
]


def is_computed(value: T | NotComputable) -> TypeGuard[T]:
    """Whether a part holds its statistic (narrows `OrNot[T]` to T; the
    other way, `isinstance(value, NotComputable)` narrows both branches)."""
    return not isinstance(value, NotComputable)


# --- Stamp and counts -------------------------------------------------------------------------


class SelectionStamp(ReportPart):
    """The selection the report covers (analysis.report.selection.Selection, as recorded)."""

    # the project whose runs it reads; None: every project (a site admin's report)
    project: str | None = None
    dataset_version: str | None
    split: str | None
    mode: str | None
    language: str | None
    benchmark: str | None
    systems: list[str]
    evaluators: list[str]
    study: int | None
    judges: list[str]
    humans: list[str]
    reference: str | None
    epsilon: float | None
    alignment: str
    ppi_labels: str | None
    ppi_labelled: int
    target_width: float
    include_flagged: bool
    rater_models: bool = False  # absent from stamps made before rater models
    length_control: bool = False  # absent from stamps made before length control
    style_control: bool = False  # absent from stamps made before style control


class Stamp(ReportPart):
    """What reproduces the report: the data's hashes, the selection, the versions."""

    data_sha256: str
    verdicts_sha256: str
    selection: SelectionStamp
    packages: dict[str, str]
    created_at: str  # ISO 8601 in UTC, to the second, as written
    bootstrap_resamples: int


class LeftOutRater(ReportPart):
    """A rater of a study whose ratings the report leaves out (or counts
    although flagged, when the selection includes flagged raters)."""

    evaluator: EvaluatorName
    rater: str
    reason: str
    status: RaterStatus
    ratings: int
    counted: bool


class ReportScope(ReportPart):
    """What the report covers and against what, in words and numbers: the
    first thing every format shows."""

    statement: str
    responses: int
    judges: list[EvaluatorName]
    humans: list[EvaluatorName]
    reference: EvaluatorName | None
    reference_rule: str
    reference_coverage: str
    coverage: dict[EvaluatorName, int]
    ppi_labels: EvaluatorName | None
    include_flagged: bool
    raters: list[LeftOutRater]


class Counts(ReportPart):
    """An empty selection counts its judgments (none) only; any other, everything."""

    judgments: int
    responses: int | None = None
    evaluators: int | None = None
    systems: int | None = None
    raters: dict[EvaluatorName, int] | None = None

    @model_validator(mode="after")
    def _complete_unless_empty(self) -> Counts:
        missing = [
            name
            for name in ("responses", "evaluators", "systems", "raters")
            if getattr(self, name) is None
        ]
        if self.judgments and missing:
            raise ValueError(f"counts of {self.judgments} judgments lack {', '.join(missing)}")
        return self


# --- Correlations -----------------------------------------------------------------------------


class Correlation(ReportPart):
    """Between two evaluators (or of score and length): r, p, n; Pearson adds its
    Fisher-z interval, and a bootstrap its percentile interval. An evaluator with
    itself has r = 1 and n only."""

    r: float | None
    p: float | None = None
    n: int
    ci95: list[float | None] | None = None
    ci_method: str | None = None
    bootstrap_ci95: list[float | None] | None = None
    bootstrap_resamples: int | None = None


CorrelationMatrix = dict[EvaluatorName, dict[EvaluatorName, OrNot[Correlation]]]
CorrelationValueMatrix = dict[EvaluatorName, dict[EvaluatorName, float | None]]


class CorrelationDetails(ReportPart):
    pearson: CorrelationMatrix
    spearman: CorrelationMatrix
    kendall: CorrelationMatrix


class CorrelationValues(ReportPart):
    """r only, None where not computable."""

    pearson: CorrelationValueMatrix
    spearman: CorrelationValueMatrix
    kendall: CorrelationValueMatrix


# --- Means per setting and seed ---------------------------------------------------------------


class SeedSummary(ReportPart):
    """Over the seeded runs of one setting: the mean and sample std of the run means."""

    seeds: list[int]
    mean: float
    std: float | None
    note: str | None = None  # only with one seed


class MeanN(ReportPart):
    mean: float
    n: int


# --- Agreement between raters -----------------------------------------------------------------


class IccForm(ReportPart):
    """One ICC form with its F test and 95% interval. The unbalanced one-way
    forms carry no description."""

    form: str
    description: str | None = None
    icc: float | None
    F: float | None  # noqa: N815 (the JSON's name)
    df1: int | float
    df2: int | float
    p: float | None
    ci95: list[float | None]


class MeetingIcc(ReportPart):
    method: str
    items: int
    raters: int
    forms: list[IccForm]


class OverallIcc(ReportPart):
    """Raters relabelled as slots within each item: the one-way forms. With
    unequal numbers of raters per item, raters_per_item is [fewest, most]."""

    method: str
    items: int
    raters_per_item: int | list[int]
    forms: list[IccForm]


class KrippendorffAlpha(ReportPart):
    alpha: float | None
    raters: int
    units: int


class RaterAgreement(ReportPart):
    per_meeting: dict[MeetingName, OrNot[MeetingIcc]]
    overall: OrNot[OverallIcc]
    krippendorff_alpha_interval: OrNot[KrippendorffAlpha]


# --- Gold bins --------------------------------------------------------------------------------


class MeanInterval(ReportPart):
    """A mean with its 95% t-interval (None, with a note, for one response)."""

    n: int
    mean: float
    ci95: list[float] | None
    note: str | None = None


class GoldBin(ReportPart):
    n: int
    evaluators: dict[EvaluatorName, OrNot[MeanInterval]]


class QualityLevels(ReportPart):
    """How many quality levels a judge separates along the gold scale."""

    levels: int
    gold_ranges: list[list[int]]
    method: str


class GoldBins(ReportPart):
    gold: EvaluatorName
    bins: dict[str, GoldBin]  # "1".."10"
    levels: dict[EvaluatorName, OrNot[QualityLevels]]


# --- Question type, answer position, QA/Conv --------------------------------------------------

# evaluator -> system -> value ("who", "M", "(none)") -> mean and N
BreakdownTable = dict[EvaluatorName, dict[SystemName, dict[str, MeanN]]]


class Breakdown(ReportPart):
    question_type: BreakdownTable
    answer_position: BreakdownTable

    def columns(self) -> list[tuple[str, BreakdownTable]]:
        return [("question_type", self.question_type), ("answer_position", self.answer_position)]


class MiddlePositionTest(ReportPart):
    """One-tailed Welch t-test: do middle-position answers score lower?"""

    t: float | None
    p: float | None
    mean_middle: float
    mean_other: float
    n_middle: int
    n_other: int


class DifferentiatingSetting(ReportPart):
    mean_of_splits: float
    splits: dict[str, MeanN]


# --- Pairwise ---------------------------------------------------------------------------------


class PositionBias(ReportPart):
    """An LLM pairwise judge's flip rate between orders and first-position win rate."""

    pairs: int
    flip_rate: float
    first_position_win_rate: float | None
    verdicts: int


class PositionBiasOneOrder(ReportPart):
    """A judge with no pair judged in both orders: no flip rate."""

    first_position_win_rate: float | None
    flip_rate: NotComputable


def _judge_diagnostics_kind(value: Any) -> str:
    if _computed_or_not(value) == "not_computable":
        return "not_computable"
    one_order = isinstance(value, PositionBiasOneOrder) or (
        isinstance(value, dict) and "pairs" not in value
    )
    return "one_order" if one_order else "both_orders"


JudgeDiagnostics = Annotated[
    Annotated[PositionBias, Tag("both_orders")]
    | Annotated[PositionBiasOneOrder, Tag("one_order")]
    | Annotated[NotComputable, Tag("not_computable")],
    Discriminator(_judge_diagnostics_kind),
]


class WinRate(ReportPart):
    against: SystemName
    wins: int
    ties: int
    losses: int
    n: int
    counting: Literal["consistent", "per_order", "per_verdict", "majority"]
    win_rate: float | None


WinRateTable = dict[EvaluatorName, dict[SystemName, WinRate]]


class WinRates(ReportPart):
    """consistent and per_order for the LLM judges, per_verdict and majority
    for the human studies."""

    consistent: WinRateTable
    per_order: WinRateTable
    per_verdict: WinRateTable
    majority: WinRateTable


class BinomialTest(ReportPart):
    p: float | None
    alternative: str
    null: float
    ci95: list[float | None]


class PositionEffect(ReportPart):
    verdicts: int
    decided: int
    first_wins: int
    ties: int
    tie_rate: float
    first_position_win_rate: OrNot[float]
    binomial_test: OrNot[BinomialTest]


class InterRater(ReportPart):
    """all_agree_share is absent when no pair had 2 or more raters."""

    pairs: int
    all_agree: OrNot[int]
    all_agree_share: float | None = None
    krippendorff_alpha_nominal: OrNot[KrippendorffAlpha]


class JudgeAgreement(ReportPart):
    """A study's majority outcome against a judge's consistent outcome, per pair;
    confusion[study outcome][judge outcome]."""

    pairs: int
    agreement: OrNot[float]
    cohen_kappa: OrNot[float]
    confusion: dict[str, dict[str, int]]


class HumanPairwiseStudy(ReportPart):
    verdicts: int
    pairs: int
    raters: int
    position_effect: OrNot[PositionEffect]
    inter_rater: InterRater
    agreement_with_judges: dict[EvaluatorName, JudgeAgreement]


# --- Judge diagnostics beyond correlation -----------------------------------------------------


class CalibrationLevel(ReportPart):
    """One judge score: how many responses got it, their mean gold score with its
    95% t-interval (None for one response), and the isotonic map's value."""

    judge_score: float
    n: int
    mean_gold: float
    ci95: list[float] | None
    calibrated: float


class Calibration(ReportPart):
    n: int
    map: list[CalibrationLevel]
    calibration_error: float
    rmse_raw: float
    rmse_calibrated: float


class SelfConsistencyIcc(ReportPart):
    responses: int
    samples: int
    forms: list[IccForm]


class SelfConsistency(ReportPart):
    """A judge scored with several seeds: the spread of its samples per response."""

    responses: int
    samples_per_response: list[int]
    mean_spread: float
    max_spread: float
    share_differing: float
    icc: OrNot[SelfConsistencyIcc]


class CategoryReliability(ReportPart):
    n: int
    mae: float
    bias: float
    r: float | None


class ReliabilityBy(ReportPart):
    """Per question type and answer position (values chosen by the data), and
    per third of answer length and of input (meeting) length."""

    question_type: dict[str, CategoryReliability]
    answer_position: dict[str, CategoryReliability]
    answer_length: dict[str, CategoryReliability] = {}  # absent before issue 33
    input_length: dict[str, CategoryReliability] = {}


class SavingsCeiling(ReportPart):
    """analysis.statistics.savings.savings_ceiling: the judge's within-system
    correlation with the reference, the largest share of labels PPI++ saves
    with it (max(r, 0)^2) and what one label is then worth (1 / (1 - share);
    None for a perfect judge), each with its 95% interval (None below 6
    meetings, with ci_note)."""

    within_system_r: float
    r_ci95: list[float | None]
    share_saved: float
    share_saved_ci95: list[float | None]
    labels_worth: float | None
    labels_worth_ci95: list[float | None]
    responses: int
    clusters: int
    ci_note: str | None = None


NO_SAVINGS_YET = NotComputable.because("not in reports made before the savings ceiling")


class Diagnostics(ReportPart):
    length_correlation: dict[EvaluatorName, OrNot[Correlation]]
    pairwise: OrNot[dict[EvaluatorName, JudgeDiagnostics]]
    win_rates: OrNot[WinRates]
    human_pairwise: OrNot[dict[EvaluatorName, HumanPairwiseStudy]]
    calibration: OrNot[dict[EvaluatorName, OrNot[Calibration]]]
    self_consistency: OrNot[dict[EvaluatorName, SelfConsistency]]
    reliability: OrNot[dict[EvaluatorName, ReliabilityBy]]
    savings: OrNot[dict[EvaluatorName, OrNot[SavingsCeiling]]] = NO_SAVINGS_YET


# --- Judge trust ------------------------------------------------------------------------------


class AltTestRater(ReportPart):
    """One left-out human rater: items compared, the judge's win share on them
    (advantage), mean(W_h - W_f), the one-sided t-test's p and whether the
    Benjamini-Yekutieli procedure rejected its null."""

    rater: str
    items: int
    advantage: float
    mean_difference: float
    p: float | None
    rejected: bool


class AltTest(ReportPart):
    epsilon: float
    alignment: str
    q_fdr: float
    winning_rate: float
    advantage_probability: float
    passed: bool
    items: int
    raters_per_item: list[int]
    raters_tested: int
    raters_skipped: int
    warnings: list[str]
    raters: list[AltTestRater]


class ClusteredCorrelation(ReportPart):
    """Pearson r with its meeting-clustered interval (a studentized bootstrap
    on Fisher's z; none, with `ci_note`, from fewer than 6 meetings)."""

    r: float
    ci95: list[float | None]
    n: int
    clusters: int
    resamples: int
    undefined_resamples: int
    ci_note: str | None = None


class Verdict(ReportPart):
    """A statistic read against its decision: the verdict, whether its
    interval settles it, and the words."""

    verdict: str
    settled: bool
    words: str


class AltTestVerdict(ReportPart):
    """The alt-test against one population of human raters, in three values
    (analysis.report.verdicts)."""

    population: Literal["crowd", "experts", "other"]
    evaluators: list[EvaluatorName]
    raters: int
    epsilon: float
    epsilon_rule: str
    verdict: Literal["passes", "fails", "inconclusive", "no_data"]
    trivial: bool
    reason: str
    decide: str | None
    more_raters: int | None
    more_items: int | None
    reverse_share: float | None
    decided_probability: float | None
    # what "about N more items" promises: a verdict in at least this share of studies
    # that size (less than the simulation's own share: analysis.report.verdicts.POWER_PROMISE)
    promised_probability: float | None = None
    test: OrNot[AltTest]


class PartialCorrelation(ReportPart):
    r: float
    p: float | None
    n: int
    ci95: list[float | None]


class RankingAgreement(ReportPart):
    judge_ranking: list[SystemName]
    human_ranking: list[SystemName]
    kendall_tau: float | None
    ci95: list[float | None]
    top_same: bool | None  # None: the means tie for the top (top_note)
    top_same_probability: float | None
    resamples: int
    undefined_resamples: int
    top_note: str | None = None
    ci_note: str | None = None


class UseCell(ReportPart):
    """One cell of the table of judges x uses (analysis.report.verdicts.use_cells)."""

    verdict: Literal["passes", "fails", "inconclusive", "not_here"]
    numbers: str


class JudgeTrust(ReportPart):
    alt_tests: dict[str, AltTestVerdict]  # per population: crowd, experts, other
    correlation: OrNot[ClusteredCorrelation]
    correlation_verdict: Verdict | None = None
    levels: OrNot[QualityLevels]
    length_bias: OrNot[PartialCorrelation]
    ranking: OrNot[RankingAgreement]
    ranking_verdict: Verdict | None = None
    summary: str
    answers: dict[str, str]  # per use: ranking, scores, crowd, experts, other
    answer: str
    uses: dict[str, UseCell]  # per use: ranking, crowd, experts
    constant_score: float | None = None  # the one score a constant judge gives


class HumanEvaluator(ReportPart):
    """A chosen human evaluator and what it gives the alt-test."""

    kind: str
    population: Literal["crowd", "experts", "other"]
    raters: int
    role: str


class Population(ReportPart):
    """Human raters of one kind, with the alt-test's margin for them."""

    evaluators: list[EvaluatorName]
    raters: int
    epsilon: float
    epsilon_rule: str


class PositionBiasRow(ReportPart):
    kind: Literal["LLM judge", "human study"]
    first_position_win_rate: float | None
    flip_rate: float | None
    ci95: list[float | None] | None


class TrustSection(ReportPart):
    humans: dict[EvaluatorName, HumanEvaluator]
    reference: EvaluatorName | None
    reference_rule: str
    reference_coverage: str
    judges: list[EvaluatorName]
    populations: dict[str, Population]
    alignment: str
    alignment_description: str
    cluster_by: str
    clusters: int
    resamples: int
    seed: int
    rows: dict[EvaluatorName, JudgeTrust]
    answers: list[str]  # one sentence per judge
    position_bias: OrNot[dict[EvaluatorName, PositionBiasRow]]
    interval_note: str | None = None


# --- PPI and the planner ----------------------------------------------------------------------


class PpiSystem(ReportPart):
    n_labelled: int
    n_unlabelled: int
    gold_mean: float
    gold_ci95: list[float]
    judge_mean: float
    ppi_mean: float
    ppi_ci95: list[float]
    # the power tuning lambda (JSON name "lambda", a Python keyword)
    lambda_: float = Field(alias="lambda")
    width_ratio: float | None
    effective_labelled: float | None
    labels_saved: float | None
    all_gold_mean: float | None = None
    ppi_covers_all_gold: bool | None = None
    gold_covers_all_gold: bool | None = None


class RankInterval(ReportPart):
    system: SystemName
    rank: int
    rank_ci95: list[int] | None


class PpiRanking(ReportPart):
    ppi: list[RankInterval]
    gold_only: list[RankInterval]


class PpiJudge(ReportPart):
    systems: dict[SystemName, OrNot[PpiSystem]]
    ranking: OrNot[PpiRanking]


class PpiLabelled(ReportPart):
    design: Literal["sample", "weighted"]
    sampled: bool
    description: str
    per_system: int | None = None
    seed: int | None = None
    study: int | None = None


class PpiSection(ReportPart):
    gold: EvaluatorName
    labelled: PpiLabelled
    judges: dict[EvaluatorName, PpiJudge]


class JudgeBudget(ReportPart):
    ppi: int | None
    more: int | None
    beyond_ceiling: bool


class SystemBudget(ReportPart):
    responses: int
    gold_now: int
    judges: dict[EvaluatorName, JudgeBudget]
    gold_only: int
    ceiling: int
    gold_only_more: int
    gold_only_reachable: bool


class BudgetPlan(ReportPart):
    gold: EvaluatorName
    target_width: float
    systems: dict[SystemName, OrNot[SystemBudget]]
    summary: str


# --- Score distributions ----------------------------------------------------------------------


class ScoreDistribution(ReportPart):
    """One evaluator: responses per score bin "1".."10" (every bin, zeros included)."""

    n: int
    continuous: bool
    distinct: int
    counts: dict[str, int]


class ScoreDistributions(ReportPart):
    unit: str
    binning: str
    evaluators: dict[EvaluatorName, ScoreDistribution]


# Reports stored before the part existed read back with this in its place (and
# write back without it: to_dict leaves out what was never given).
NOT_IN_THIS_REPORT = NotComputable.because("not in reports made before score distributions")


# --- Rankings --------------------------------------------------------------------------------


class RankedSystem(ReportPart):
    """One system's Bradley-Terry rating (Elo scale) with its 95% interval,
    its rank, and its rank-set (best, worst; both None below the harness's
    condition) from the simultaneous differences."""

    system: SystemName
    rating: float
    ci95: list[float | None]
    rank: int
    rank_set: list[int | None]
    battles: int
    wins: int
    ties: int
    losses: int


class RatingDifference(ReportPart):
    """system's rating less other's, in Elo points, inside a simultaneous 95% interval."""

    system: SystemName
    other: SystemName
    difference: float
    ci95: list[float | None]


class StyleCovariate(ReportPart):
    """A style feature's weight in the log-odds of winning (per root mean
    square of the feature), with its 95% interval."""

    name: str
    weight: float
    ci95: list[float | None]


class BradleyTerryRanking(ReportPart):
    """analysis.statistics.bradley_terry.bradley_terry on one evaluator's
    battles; with `covariates`, style-controlled (analysis.statistics.style_control)."""

    systems: list[RankedSystem]
    differences: list[RatingDifference]
    battles: int
    clusters: int
    resamples: int
    undefined_resamples: int
    method: str
    ci_note: str | None = None
    covariates: list[StyleCovariate] | None = None
    # style elements no two answers that met differ in (no weight to estimate)
    covariates_left_out: list[str] | None = None


class PoweredSystem(ReportPart):
    """One system's win rate (ties half) with its standard error, its rank
    and rank-set (best, worst; None below the condition), and beside them its
    win rate and rank by all the reference's battles and whether the
    rank-set holds that rank (a tie there: the range of ranks it allows)."""

    system: SystemName
    win_rate: float
    se: float | None
    rank: int
    rank_set: list[int] | None
    all_labels_win_rate: float
    all_labels_rank: int | list[int]
    holds: bool | None


class PoweredSide(ReportPart):
    systems: list[PoweredSystem]
    mean_rank_set_size: float | None
    # lambda: the judge's weight (prediction-powered side only)
    lam: float | None = Field(default=None, alias="lambda")


class PoweredBattles(ReportPart):
    labelled: int
    unlabelled: int


class PredictionPoweredRanking(ReportPart):
    """analysis.statistics.prediction_powered_ranking.ranking for one judge:
    the prediction-powered ranking and the labelled battles' alone."""

    prediction_powered: PoweredSide
    humans_alone: PoweredSide
    battles: PoweredBattles
    labelled_meetings: int
    meetings: int
    labelled_questions: int
    questions: int
    method: str
    ci_note: str | None = None


class PoweredLabels(ReportPart):
    questions: int
    seed: int
    description: str


class PredictionPoweredRankings(ReportPart):
    """Per judge, prediction-powered rank-sets (Chatzi et al. 2024) from a
    seeded sample of the reference's battles and all the judge's (from scores:
    the reference evaluator's; from verdicts: a human pairwise study's)."""

    reference: EvaluatorName
    labelled: PoweredLabels
    judges: dict[EvaluatorName, OrNot[PredictionPoweredRanking]]


NO_PREDICTION_POWERED_YET = NotComputable.because(
    "not in reports made before prediction-powered rank-sets"
)


class Rankings(ReportPart):
    """Bradley-Terry rankings per evaluator: from scores (on each question,
    every two systems meet, the higher score wins) and from pairwise verdicts
    (the judges' consistent outcomes, the studies' majority per pair); and
    each judge's prediction-powered rank-sets."""

    unit: str
    from_scores: dict[EvaluatorName, OrNot[BradleyTerryRanking]]
    from_verdicts: dict[EvaluatorName, OrNot[BradleyTerryRanking]]
    prediction_powered: OrNot[PredictionPoweredRankings] = NO_PREDICTION_POWERED_YET
    # per LLM pairwise judge, against the human pairwise study with the most pairs
    prediction_powered_from_verdicts: OrNot[PredictionPoweredRankings] = NotComputable.because(
        "not in reports made before rank-sets from pairwise verdicts"
    )
    # from scores, the answers' length difference held fixed (when asked for)
    length_controlled: OrNot[dict[EvaluatorName, OrNot[BradleyTerryRanking]]] = (
        NotComputable.because("not asked for")
    )
    # from scores, the length and FastChat's markdown elements held fixed (when asked for)
    style_controlled: OrNot[dict[EvaluatorName, OrNot[BradleyTerryRanking]]] = (
        NotComputable.because("not asked for")
    )


NO_RANKINGS_YET = NotComputable.because("not in reports made before rankings")


# --- Rater models -----------------------------------------------------------------------------


class RaterReliability(ReportPart):
    """One rater: Dawid-Skene's chance of the true level, MACE's chance of
    competence, GLAD's expertise alpha, and the offset model's offset (points)
    and noise (standard deviation)."""

    ratings: int
    dawid_skene: float
    mace: float
    glad: float
    offset: float
    noise_sd: float | None


class EvaluatorRaterModels(ReportPart):
    items: int
    raters: int
    per_rater: dict[str, RaterReliability]
    # per model: responses whose label differs from the level of their mean score
    labels_differing_from_mean: dict[str, int]


class PairwiseRaterReliability(ReportPart):
    """One rater of a pairwise study: verdicts, Dawid-Skene's chance of the
    true outcome, MACE's chance of competence, GLAD's expertise alpha."""

    verdicts: int
    dawid_skene: float
    mace: float
    glad: float


class PairwiseRaterModels(ReportPart):
    items: int
    raters: int
    per_rater: dict[str, PairwiseRaterReliability]
    # per model: pairs whose label differs from the raters' majority
    labels_differing_from_majority: dict[str, int]


class AggregateEvaluator(ReportPart):
    """A rater model's labels as an evaluator of this report (analysis.report.aggregates)."""

    source: EvaluatorName
    model: str
    description: str
    responses: int
    raters: int


class RaterModels(ReportPart):
    """analysis.statistics.rater_models per human evaluator with individual
    raters, and their labels as evaluators ("NAME:offsets", "NAME:dawid-skene")."""

    levels: str
    evaluators: dict[EvaluatorName, OrNot[EvaluatorRaterModels]]
    aggregates: dict[EvaluatorName, OrNot[AggregateEvaluator]] = Field(default_factory=dict)
    # human pairwise studies' raters, on their verdicts (win, tie, loss)
    pairwise: dict[EvaluatorName, OrNot[PairwiseRaterModels]] = Field(default_factory=dict)


NO_RATER_MODELS_YET = NotComputable.because("not in reports made before rater models")


# --- Judge panels -----------------------------------------------------------------------------


class PanelWeights(ReportPart):
    """A learned panel's weights, fitted on every labelled response (its
    scores are cross-fitted: analysis.statistics.panels.learned)."""

    learned_from: EvaluatorName
    labelled_responses: int
    folds: int
    intercept: float
    members: dict[EvaluatorName, float]


class JudgePanel(ReportPart):
    """analysis.report.panels: how one panel's scores were made, and its cost."""

    members: list[EvaluatorName]
    rule: str
    rule_text: str
    responses: int
    weights: PanelWeights | None
    member_cost_per_response: dict[EvaluatorName, float | None]
    cost_per_response: float | None
    # a panel of pairwise judges: its verdicts join the pairwise parts, and
    # `responses` counts the responses it compared with the baseline's
    pairwise: bool = False


NO_PANELS = NotComputable.because(
    "no judge panel in this selection: make one under Judges, New panel"
)


# --- Deferring judges -------------------------------------------------------------------------


class DeferralLevel(ReportPart):
    """One target agreement: the threshold chosen on the calibration meetings
    and what it does on the held-out ones."""

    alpha: float
    agreement_guaranteed: float
    max_spread_kept: float | None  # None: the judge defers every response
    calibration_kept: int
    calibration_bound: float | None
    held_out_kept_share: float
    held_out_agreement: float | None
    held_out_ci95: list[float] | None
    deferred: int


class DeferringJudge(ReportPart):
    """analysis.report.deferral on one judge (analysis.report.pairwise_deferral
    on a pairwise judge: no tolerance, its outcomes compared with a study's)."""

    signal: str
    tolerance: float | None
    delta: float
    calibration_responses: int
    calibration_meetings: int
    held_out_responses: int
    held_out_meetings: int
    held_out_agreement_without_deferral: float
    responses: int
    levels: list[DeferralLevel]
    compared_with: EvaluatorName | None = None  # a pairwise judge: the human study
    # what its spread is: "sd" (scores over seeds or members), "tokens" (1 - the
    # tokens' probability), "dissent" (a pairwise judge's share of votes against it)
    spread: str | None = None


NO_DEFERRAL_YET = NotComputable.because("not in reports made before deferring judges")


# --- Self-preference --------------------------------------------------------------------------


class SelfPreference(ReportPart):
    """analysis.statistics.self_preference on one judge: its mean bias (score
    minus the reference's) on its family's systems minus on the others'."""

    families: list[str]
    own_systems: list[SystemName]
    other_systems: list[SystemName]
    own_responses: int
    other_responses: int
    bias_own: float
    bias_other: float
    difference: float
    ci95: list[float | None]
    clusters: int
    resamples: int
    ci_note: str | None = None


NO_SELF_PREFERENCE_YET = NotComputable.because("not in reports made before self-preference")


# --- Probes -----------------------------------------------------------------------------------


class ProbeKind(ReportPart):
    n: int
    mean: float
    as_good: int  # probes scored at least the judge's median score of good answers
    share_as_good: float


class JudgeProbes(ReportPart):
    """analysis.report.probes on one judge."""

    good_answers: int
    good_median: float
    good_mean: float
    kinds: dict[str, ProbeKind]


NO_PROBES_YET = NotComputable.because("not in reports made before probes")


# --- The report -------------------------------------------------------------------------------

# An empty selection's report has always listed its parts in this order (and
# has no mean_scores_n); to_dict keeps it.
EMPTY_REPORT_ORDER = (
    "schema_version",
    "stamp",
    "scope",
    "counts",
    "trust",
    "mean_scores",
    "settings",
    "seeds",
    "correlations",
    "system_correlations",
    "rater_agreement",
    "gold_bins",
    "breakdown",
    "middle_position_welch",
    "qa_conv_differentiating",
    "diagnostics",
    "ppi",
    "planner",
    "correlation_details",
    "evaluators",
    "systems",
)


class AgreementReport(ReportPart):
    """Every statistic of analysis.statistics.stats on one selection, stamped. Built by
    analysis.report.build.build_report; to_json() is the layout of docs/analysis.md."""

    schema_version: Literal[4]
    stamp: Stamp
    scope: ReportScope
    counts: Counts
    trust: OrNot[TrustSection]
    evaluators: list[EvaluatorName]
    systems: list[SystemName]
    mean_scores: OrNot[dict[SystemName, dict[EvaluatorName, float]]]
    mean_scores_n: dict[SystemName, dict[EvaluatorName, int]] | None = None  # not when empty
    settings: OrNot[dict[EvaluatorName, dict[SystemName, dict[SettingKey, float]]]]
    seeds: OrNot[dict[EvaluatorName, dict[SystemName, dict[SettingKey, SeedSummary]]]]
    correlations: OrNot[CorrelationValues]
    correlation_details: OrNot[CorrelationDetails]
    system_correlations: OrNot[CorrelationValues]
    rater_agreement: OrNot[dict[EvaluatorName, OrNot[RaterAgreement]]]
    gold_bins: OrNot[GoldBins]
    breakdown: OrNot[Breakdown]
    middle_position_welch: OrNot[dict[EvaluatorName, dict[SystemName, OrNot[MiddlePositionTest]]]]
    # evaluator -> system -> "st/qa" | "mt/qa" | "mt/conv"
    qa_conv_differentiating: OrNot[
        dict[EvaluatorName, dict[SystemName, dict[str, DifferentiatingSetting]]]
    ]
    diagnostics: OrNot[Diagnostics]
    ppi: OrNot[PpiSection]
    planner: OrNot[BudgetPlan]
    score_distributions: OrNot[ScoreDistributions] = NOT_IN_THIS_REPORT
    rankings: OrNot[Rankings] = NO_RANKINGS_YET
    rater_models: OrNot[RaterModels] = NO_RATER_MODELS_YET
    panels: OrNot[dict[EvaluatorName, OrNot[JudgePanel]]] = NO_PANELS
    deferral: OrNot[dict[EvaluatorName, OrNot[DeferringJudge]]] = NO_DEFERRAL_YET
    self_preference: OrNot[dict[EvaluatorName, OrNot[SelfPreference]]] = NO_SELF_PREFERENCE_YET
    probes: OrNot[dict[EvaluatorName, OrNot[JudgeProbes]]] = NO_PROBES_YET

    @model_validator(mode="after")
    def _means_have_their_counts(self) -> AgreementReport:
        if self.counts.judgments and self.mean_scores_n is None:
            raise ValueError("a report on judgments has mean_scores_n")
        return self

    @property
    def is_empty(self) -> bool:
        return self.counts.judgments == 0

    def to_dict(self) -> dict:
        """The JSON-ready layout of docs/analysis.md."""
        data = self.model_dump(exclude_unset=True)
        if self.is_empty:
            data = {**{key: data[key] for key in EMPTY_REPORT_ORDER if key in data}, **data}
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> AgreementReport:
        return cls.model_validate(data)

    @classmethod
    def from_json(cls, text: str) -> AgreementReport:
        """A stored report read back (Python's json parser, so that every float
        reads back as the value it was written from)."""
        return cls.from_dict(json.loads(text))
