"""An agreement report: every statistic of analysis.statistics.stats on one selection,
stamped so that it can be reproduced.

The report is an analysis.report.report_types.AgreementReport (typed models); its
JSON layout is documented in docs/analysis.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import platform
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from analysis.report import trust
from analysis.report.deferral import deferral_part
from analysis.report.pairwise_deferral import deferral_with_pairwise, pairwise_deferral
from analysis.report.probes import probes_part
from analysis.report.rankings import rankings_part, style_counts
from analysis.report.report_types import (
    NO_PANELS,
    SCHEMA_VERSION,
    AgreementReport,
    Counts,
    Diagnostics,
    LeftOutRater,
    NotComputable,
    ReportScope,
    SelectionStamp,
    Stamp,
)
from analysis.report.scope import Scope, resolve
from analysis.report.scores import response_scores
from analysis.report.selection import Selection
from analysis.report.self_preference import self_preference_part
from analysis.statistics import stats
from analysis.statistics.distributions import score_distributions
from analysis.statistics.rater_models import LEVELS_TEXT, rater_reliability
from analysis.statistics.ratings import individual_ratings
from corpus.choices import DatasetVersion, Language
from corpus.models import QuestionText

PACKAGES = (
    "concord",
    "django",
    "numpy",
    "scipy",
    "pandas",
    "pingouin",
    "krippendorff",
    "scikit-learn",
)


def data_hash(table: pd.DataFrame) -> str:
    """SHA-256 of the judgments a report reads (ids, raters, seeds, orders, scores)."""
    if table.empty:
        return hashlib.sha256(b"").hexdigest()
    keyed = table[["response_id", "evaluator", "rater", "judgment_seed", "order", "score"]]
    # sorted by response, evaluator name, rater, seed (missing first) and order, as
    # sort_values would, from integer codes of the names in their sorted order
    seed = keyed["judgment_seed"].to_numpy(float)
    order = np.lexsort(
        (
            keyed["order"].to_numpy(),
            np.nan_to_num(seed, nan=-np.inf),
            _sorted_codes(keyed["rater"]),
            _sorted_codes(keyed["evaluator"]),
            keyed["response_id"].to_numpy(),
        )
    )
    # a row's hash does not depend on where the row is: hash, then put in order
    keyed = keyed.assign(evaluator=keyed["evaluator"].astype(str))
    hashed = pd.util.hash_pandas_object(keyed, index=False).to_numpy()[order]
    return hashlib.sha256(hashed.tobytes()).hexdigest()


def _sorted_codes(column: pd.Series) -> np.ndarray:
    """Integer codes that sort as the column's values (strings) sort."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = np.asarray(column.cat.categories).astype(str)
        rank = np.empty(len(categories), dtype=np.int64)
        rank[np.argsort(categories, kind="stable")] = np.arange(len(categories))
        return rank[column.cat.codes.to_numpy()]
    return pd.factorize(column.astype(str), sort=True)[0]


def verdicts_hash(verdicts: pd.DataFrame) -> str:
    """SHA-256 of the pairwise verdicts a report reads (evaluators, pairs, seeds,
    orders, raters, winners)."""
    if verdicts.empty:
        return hashlib.sha256(b"").hexdigest()
    keys = ["evaluator", "response_id", "opponent_id", "seed", "order", "rater"]
    keyed = verdicts[[*keys, "winner"]].sort_values(keys)
    hashed = pd.util.hash_pandas_object(keyed, index=False).to_numpy()
    return hashlib.sha256(hashed.tobytes()).hexdigest()


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def differing_question_pks(question_pks) -> set[int]:
    """Questions whose English QA and Conv wordings differ: found by the
    database (two versions, two wordings), then kept if the selection has them,
    so that the query does not carry the selection's question ids."""
    from django.db.models import Count

    differing = (
        QuestionText.objects.filter(
            dataset__language=Language.ENGLISH,
            dataset__version__in=(DatasetVersion.QA, DatasetVersion.CONV),
        )
        .values("question_id")
        .annotate(
            versions=Count("dataset__version", distinct=True), wordings=Count("text", distinct=True)
        )
        .filter(versions=2, wordings=2)
        .values_list("question_id", flat=True)
    )
    wanted = set(int(q) for q in question_pks)
    return {q for q in differing if q in wanted}


def statement(scope: Scope) -> str:
    """The selection in one sentence, as the top of every format shows it
    (the reference and its coverage follow it in a sentence of their own)."""
    selection = scope.selection
    parts = []
    setting = " ".join(selection.setting())
    parts.append(f"{scope.responses:,} responses" + (f" of {setting}" if setting else ""))
    if selection.systems:
        parts.append(f"systems {', '.join(selection.systems)}")
    if selection.study is not None:
        parts.append(f"only the responses of study {selection.study}")
    parts.append(f"judges {', '.join(scope.judges) or 'none'}")
    parts.append(f"human evaluators {', '.join(scope.humans) or 'none'}")
    left_out = scope.left_out
    flagged_in = [r for r in scope.raters if r.counted]
    if left_out:
        parts.append(f"{len(left_out)} rater(s) left out (listed below)")
    if flagged_in:
        parts.append(f"{len(flagged_in)} flagged rater(s) counted on request")
    return "; ".join(parts) + "."


def scope_part(scope: Scope) -> ReportScope:
    return ReportScope(
        statement=statement(scope),
        responses=scope.responses,
        judges=scope.judges,
        humans=scope.humans,
        reference=scope.reference,
        reference_rule=scope.reference_rule,
        reference_coverage=scope.coverage_text(scope.reference),
        coverage=scope.coverage,
        ppi_labels=scope.ppi_labels,
        include_flagged=scope.selection.include_flagged,
        raters=[
            LeftOutRater(
                evaluator=r.evaluator,
                rater=r.rater,
                reason=r.reason,
                status=r.status,
                ratings=r.ratings,
                counted=r.counted,
            )
            for r in scope.raters
        ],
    )


def build_report(
    selection: Selection,
    *,
    bootstrap: int = 0,
    table: pd.DataFrame | None = None,
    verdicts: pd.DataFrame | None = None,
) -> AgreementReport:
    """The report on a selection. `table` skips the database query for the
    judgments (benchmarks; the selection's names are still checked);
    `verdicts` too, for the pairwise verdicts.

    The statistics come as plain values (numpy scalars, NaN): each is made
    JSON-ready, then checked against the report's types as it is built."""
    return report_of(resolve(selection, table), bootstrap=bootstrap, verdicts=verdicts)


def report_of(
    scope: Scope, *, bootstrap: int = 0, verdicts: pd.DataFrame | None = None
) -> AgreementReport:
    """The report on a resolved selection (analysis.report.scope.resolve); `verdicts`:
    its pairwise verdicts, when the caller has read them (analysis.report.caching)."""
    selection, table = scope.selection, scope.table
    if table.empty:
        reason = NotComputable.because("empty selection: no judgment matches it")
        return AgreementReport(
            schema_version=SCHEMA_VERSION,
            stamp=stamp(selection, table, pd.DataFrame(), bootstrap),
            scope=scope_part(scope),
            counts=Counts(judgments=0),
            trust=reason,
            ppi=reason,
            planner=reason,
            evaluators=[],
            systems=[],
            mean_scores=reason,
            settings=reason,
            seeds=reason,
            correlations=reason,
            correlation_details=reason,
            system_correlations=reason,
            rater_agreement=reason,
            gold_bins=reason,
            breakdown=reason,
            middle_position_welch=reason,
            qa_conv_differentiating=reason,
            diagnostics=reason,
            score_distributions=reason,
            rankings=reason,
            rater_models=reason,
        )

    ready = to_json_ready
    rs = response_scores(table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    system_wide = rs.groupby(["system", "evaluator"], observed=True)["score"].mean().unstack()
    system_wide.columns = [str(c) for c in system_wide.columns]
    reference = scope.reference
    means, mean_n = stats.mean_scores(rs)
    detailed = stats.correlations(wide, bootstrap=bootstrap)
    system_detailed = stats.correlations(system_wide, bootstrap=0)
    if verdicts is None:
        verdicts = pairwise_verdicts(selection, set(rs["response_id"].unique()))
    pairwise = ready(pairwise_parts(verdicts))
    ratings = individual_ratings(table)
    judged = ready(trust.build(scope, rs, wide, pairwise, ratings=ratings))
    panels = panels_part(scope, verdicts)
    return AgreementReport(
        schema_version=SCHEMA_VERSION,
        stamp=stamp(selection, table, verdicts, bootstrap),
        scope=scope_part(scope),
        counts=Counts(
            judgments=int(len(table)),
            responses=int(rs["response_id"].nunique()),
            evaluators=int(len(wide.columns)),
            systems=int(rs["system"].nunique()),
            raters={
                str(k): int(v)
                for k, v in table[table["rater"] != ""]
                .groupby("evaluator", observed=True)["rater"]
                .nunique()
                .items()
            },
        ),
        trust=judged["trust"],
        evaluators=sorted(wide.columns),
        systems=sorted(str(s) for s in rs["system"].unique()),
        mean_scores=ready(means),
        mean_scores_n=ready(mean_n),
        settings=ready(stats.setting_means(rs)),
        seeds=ready(stats.seed_summary(rs)),
        correlations=ready(stats.correlation_values(detailed)),
        correlation_details=ready(detailed),
        system_correlations=ready(stats.correlation_values(system_detailed)),
        rater_agreement=ready(stats.rater_agreement(table, ratings)),
        gold_bins=ready(stats.gold_bins(wide, reference))
        if reference
        else NotComputable.because("no reference: no human evaluator scores the selection"),
        breakdown=ready(stats.breakdown(rs)),
        middle_position_welch=ready(stats.middle_position_welch(rs)),
        qa_conv_differentiating=ready(
            stats.differentiating_questions(
                rs, differing_question_pks(rs["question_pk"].unique()) if len(rs) else set()
            )
        ),
        diagnostics=Diagnostics(
            length_correlation=ready(stats.length_correlation(rs)),
            **pairwise,
            calibration=judged["calibration"],
            self_consistency=judged["self_consistency"],
            reliability=judged["reliability"],
            savings=judged["savings"],
        ),
        ppi=judged["ppi"],
        planner=judged["planner"],
        score_distributions=ready(score_distributions(rs)),
        rankings=ready(
            rankings_part(
                rs,
                verdicts,
                first=reference,
                judges=list(scope.judges),
                labelled_questions=selection.ppi_labelled,
                length_controlled=selection.length_control,
                markdown=style_counts(rs["response_id"]) if selection.style_control else None,
            )
        ),
        rater_models=ready(rater_models_part(ratings, scope.aggregates, verdicts))
        if selection.rater_models
        else NOT_ASKED_FOR_RATER_MODELS,
        panels=ready(panels) if panels else NO_PANELS,
        deferral=ready(
            deferral_with_pairwise(
                deferral_part(scope, rs, wide),
                pairwise_deferral(verdicts, rs, pairwise_members(panels)),
            )
        ),
        self_preference=ready(self_preference_part(scope, rs, wide)),
        probes=ready(probes_part(scope, rs)),
    )


def pairwise_members(panels: dict[str, dict]) -> dict[str, list[str]]:
    """The members of each computable panel of pairwise judges."""
    return {name: account["members"] for name, account in panels.items() if account.get("pairwise")}


def panels_part(scope: Scope, verdicts: pd.DataFrame) -> dict[str, dict]:
    """Every panel's account: the panels of scores (made with the scope) and of
    pairwise judges (made with the verdicts)."""
    from analysis.report.panels import pairwise_panel_accounts, pairwise_panels_for

    pairwise = pairwise_panels_for(scope.selection)
    return {**scope.panels, **(pairwise_panel_accounts(verdicts, pairwise) if pairwise else {})}


NOT_ASKED_FOR_RATER_MODELS = NotComputable.because(
    "not asked for: tick Rater models in the report builder (rater_models=1); crowd-kit's "
    "Dawid-Skene, MACE and GLAD take seconds per thousand ratings"
)


def rater_models_part(
    ratings: dict[str, pd.DataFrame],
    aggregates: dict[str, dict] | None = None,
    verdicts: pd.DataFrame | None = None,
) -> dict:
    """Rater models for every evaluator with individual raters, their labels
    as evaluators of the report (the scope's aggregates), and for every human
    pairwise study's raters on their verdicts."""
    from analysis.statistics.pairwise import rater_outcomes
    from analysis.statistics.rater_models import pairwise_reliability

    per_rater = (
        rater_outcomes(verdicts) if verdicts is not None and len(verdicts) else pd.DataFrame()
    )
    pairwise = {
        str(name): pairwise_reliability(group)
        for name, group in (per_rater.groupby("evaluator") if len(per_rater) else [])
    }
    if not ratings and not pairwise:
        return stats.not_computable("no evaluator with individual raters in the selection")
    return {
        "levels": LEVELS_TEXT,
        "evaluators": {name: rater_reliability(frame) for name, frame in ratings.items()},
        "aggregates": aggregates or {},
        "pairwise": pairwise,
    }


def stamp(
    selection: Selection, table: pd.DataFrame, verdicts: pd.DataFrame, bootstrap: int
) -> Stamp:
    return Stamp(
        data_sha256=data_hash(table),
        verdicts_sha256=verdicts_hash(verdicts),
        selection=SelectionStamp.model_validate(selection.as_dict()),
        packages=package_versions(),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        bootstrap_resamples=bootstrap,
    )


def pairwise_verdicts(selection: Selection, response_ids: set) -> pd.DataFrame:
    """The pairwise verdicts on the selection's responses, of every evaluator
    that has some (LLM judges and human studies; only the selection's
    evaluators and its pairwise panels' members when it names them), and
    the pairwise panels' majority verdicts (analysis.report.panels)."""
    from analysis.report.panels import pairwise_panels_for, with_pairwise_panels
    from analysis.statistics.pairwise import verdict_table
    from judging.models import Evaluator

    panels = pairwise_panels_for(selection)
    evaluators = Evaluator.objects.filter(verdicts__isnull=False).distinct()
    if selection.evaluators:
        members = {m for names, _ in panels.values() for m in names}
        evaluators = evaluators.filter(name__in={*selection.evaluators, *members})
    pks = list(evaluators.values_list("pk", flat=True))
    if not pks:  # nothing to read: no query with the selection's response ids
        return verdict_table([], [])
    return with_pairwise_panels(verdict_table(pks, response_ids), panels)


def pairwise_parts(table: pd.DataFrame) -> dict:
    """From pairwise verdicts: win rates against the baseline (consistent and
    per_order for the LLM judges, per_verdict and majority for the human
    studies), the judges' position-bias diagnostics, and the studies' position
    effect, inter-rater agreement and agreement with each judge."""
    from analysis.statistics.human_pairwise import human_pairwise
    from analysis.statistics.pairwise import (
        COUNTINGS,
        battles_for_diagnostics,
        judge_rows,
        win_rates,
    )

    if table.empty:
        reason = stats.not_computable("no pairwise judgments in the selection")
        return {"pairwise": reason, "win_rates": reason, "human_pairwise": reason}
    judges = judge_rows(table)
    return {
        "pairwise": {
            evaluator: stats.pairwise_diagnostics(battles_for_diagnostics(group))
            for evaluator, group in judges.groupby("evaluator")
        }
        if len(judges)
        else stats.not_computable("no LLM pairwise judgments in the selection"),
        "win_rates": {counting: win_rates(table, counting) for counting in COUNTINGS},
        "human_pairwise": human_pairwise(table),
    }


PLAIN = frozenset({str, int, bool, type(None)})


def to_json_ready(value: Any) -> Any:
    """NaN and infinities become None; numpy scalars become Python numbers.
    (The exact type is looked at first: a report at scale has 10^5 values.)

    Any in, Any out: the statistics' plain values, whatever their shape; the
    report's models (analysis.report.report_types) check each part as it is built."""
    kind = type(value)
    if kind in PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {str(k): to_json_ready(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [to_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
