"""An agreement report: every statistic of analysis.stats on one selection,
stamped so that it can be reproduced.

The report is an analysis.report_types.AgreementReport (typed models); its
JSON layout is documented in docs/analysis.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from analysis import stats
from analysis.report_types import (
    SCHEMA_VERSION,
    AgreementReport,
    Counts,
    Diagnostics,
    NotComputable,
    Stamp,
)
from analysis.scores import response_scores, score_table
from analysis.selection import Selection
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
    keyed = table[["response_id", "evaluator", "rater", "judgment_seed", "order", "score"]].copy()
    keyed["evaluator"] = keyed["evaluator"].astype(str)
    keyed = keyed.sort_values(
        ["response_id", "evaluator", "rater", "judgment_seed", "order"], na_position="first"
    )
    hashed = pd.util.hash_pandas_object(keyed, index=False).to_numpy()
    return hashlib.sha256(hashed.tobytes()).hexdigest()


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


def choose_gold(table: pd.DataFrame, requested: str | None) -> str | None:
    names = list(table["evaluator"].cat.categories) if len(table) else []
    if requested:
        return requested
    kinds = (
        dict(zip(table["evaluator"].astype(str), table["evaluator_kind"].astype(str), strict=True))
        if len(table)
        else {}
    )
    for name in sorted(names):
        if kinds.get(name) == "gold_human":
            return name
    # The paper's gold is imported: known by its recorded original kind, never
    # by a name that happens to contain "gold".
    from judging.models import Evaluator

    paper_gold = Evaluator.objects.filter(
        name__in=names, origin=Evaluator.Origin.PAPER, config__original_kind="gold_human"
    ).order_by("name")
    return paper_gold.values_list("name", flat=True).first()


def differing_question_pks(question_pks) -> set[int]:
    """Questions whose English QA and Conv wordings differ."""
    texts = QuestionText.objects.filter(
        question_id__in=list(question_pks), dataset__language=Language.ENGLISH
    ).values_list("question_id", "dataset__version", "text")
    by_question: dict[int, dict[str, str]] = {}
    for question, version, text in texts:
        by_question.setdefault(question, {})[version] = text
    qa, conv = DatasetVersion.QA, DatasetVersion.CONV
    return {q for q, v in by_question.items() if qa in v and conv in v and v[qa] != v[conv]}


def build_report(
    selection: Selection, *, bootstrap: int = 0, table: pd.DataFrame | None = None
) -> AgreementReport:
    """The report on a selection. `table` skips the database (benchmarks).

    The statistics come as plain values (numpy scalars, NaN): each is made
    JSON-ready, then checked against the report's types as it is built."""
    table = score_table(selection) if table is None else table
    if table.empty:
        reason = NotComputable.because("empty selection: no judgment matches it")
        return AgreementReport(
            schema_version=SCHEMA_VERSION,
            stamp=stamp(selection, table, pd.DataFrame(), bootstrap),
            counts=Counts(judgments=0),
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
        )

    ready = to_json_ready
    rs = response_scores(table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    system_wide = rs.groupby(["system", "evaluator"], observed=True)["score"].mean().unstack()
    system_wide.columns = [str(c) for c in system_wide.columns]
    gold = choose_gold(table, selection.gold_evaluator)
    means, mean_n = stats.mean_scores(rs)
    detailed = stats.correlations(wide, bootstrap=bootstrap)
    system_detailed = stats.correlations(system_wide, bootstrap=0)
    verdicts = pairwise_verdicts(selection, set(rs["response_id"].unique()))
    return AgreementReport(
        schema_version=SCHEMA_VERSION,
        stamp=stamp(selection, table, verdicts, bootstrap),
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
        evaluators=sorted(wide.columns),
        systems=sorted(str(s) for s in rs["system"].unique()),
        mean_scores=ready(means),
        mean_scores_n=ready(mean_n),
        settings=ready(stats.setting_means(rs)),
        seeds=ready(stats.seed_summary(rs)),
        correlations=ready(stats.correlation_values(detailed)),
        correlation_details=ready(detailed),
        system_correlations=ready(stats.correlation_values(system_detailed)),
        rater_agreement=ready(stats.rater_agreement(table)),
        gold_bins=ready(stats.gold_bins(wide, gold))
        if gold
        else NotComputable.because("no gold evaluator in the selection"),
        breakdown=ready(stats.breakdown(rs)),
        middle_position_welch=ready(stats.middle_position_welch(rs)),
        qa_conv_differentiating=ready(
            stats.differentiating_questions(
                rs, differing_question_pks(rs["question_pk"].unique()) if len(rs) else set()
            )
        ),
        diagnostics=Diagnostics(
            length_correlation=ready(stats.length_correlation(rs)),
            **ready(pairwise_parts(verdicts)),
        ),
    )


def stamp(
    selection: Selection, table: pd.DataFrame, verdicts: pd.DataFrame, bootstrap: int
) -> Stamp:
    return Stamp(
        data_sha256=data_hash(table),
        verdicts_sha256=verdicts_hash(verdicts),
        selection=selection.as_dict(),
        packages=package_versions(),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        bootstrap_resamples=bootstrap,
    )


def pairwise_verdicts(selection: Selection, response_ids: set) -> pd.DataFrame:
    """The pairwise verdicts on the selection's responses, of every evaluator
    that has some (LLM judges and human studies; only the selection's
    evaluators when it names them)."""
    from judging.models import Evaluator
    from judging.pairwise import verdict_table

    evaluators = Evaluator.objects.filter(verdicts__isnull=False).distinct()
    if selection.evaluators:
        evaluators = evaluators.filter(name__in=selection.evaluators)
    return verdict_table(list(evaluators.values_list("pk", flat=True)), response_ids)


def pairwise_parts(table: pd.DataFrame) -> dict:
    """From pairwise verdicts: win rates against the baseline (consistent and
    per_order for the LLM judges, per_verdict and majority for the human
    studies), the judges' position-bias diagnostics, and the studies' position
    effect, inter-rater agreement and agreement with each judge."""
    from analysis.human_pairwise import human_pairwise
    from judging.pairwise import COUNTINGS, battles_for_diagnostics, judge_rows, win_rates

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


def to_json_ready(value):
    """NaN and infinities become None; numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): to_json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
