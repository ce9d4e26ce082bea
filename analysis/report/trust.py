"""Judge trust: can this judge replace the humans, for what, and how few
human ratings does a study need?

Builds, for one resolved selection (analysis.report.scope: the judges, the human
evaluators and the reference, each chosen or chosen by a stated rule), the
report's judge-trust section: per judge, the alternative annotator test
against each population of human raters (experts, crowd workers, others) in
three values (analysis.report.verdicts), the correlation with the reference under a
meeting-clustered bootstrap, the quality levels it separates, its length
bias and the system ranking it gives against the reference's, each with its
verdict in words; then, through analysis.report.gold_parts, the PPI system scores,
the human budget planner and the judge diagnostics read against the
reference, and here the judges' self-consistency. Returns JSON-ready values;
analysis.report.build types them.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import pandas as pd

from analysis.report import uses, verdicts
from analysis.report.gold_parts import gold_parts
from analysis.report.scope import EvaluatorInfo, Scope
from analysis.statistics import alt_test, judge_diagnostics
from analysis.statistics.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ClusterBootstrap,
    clustered_correlation,
    correlation_clusters_note,
    ranking_agreement,
)
from analysis.statistics.ratings import individual_ratings
from analysis.statistics.stats import distinct_levels, not_computable

# The authors' rule of thumb for epsilon (Calderon et al. 2025, FAQ).
EPSILON_EXPERT, EPSILON_SKILLED, EPSILON_CROWD = 0.2, 0.15, 0.1
EPSILON_BY_POPULATION = {
    "experts": EPSILON_EXPERT,
    "crowd": EPSILON_CROWD,
    "other": EPSILON_SKILLED,
}
EPSILON_RULE = "the authors' rule of thumb: 0.2 experts, 0.15 skilled annotators, 0.1 crowd workers"
POPULATION_ORDER = ("crowd", "experts", "other")
META = ["meeting", "system", "response_chars", "question_type", "answer_position"]


class PopulationPart(TypedDict):
    """Human raters of one kind and the alt-test's margin for them
    (report_types.Population)."""

    evaluators: list[str]
    raters: int
    epsilon: float
    epsilon_rule: str


def populations(humans: list[str], info: dict[str, EvaluatorInfo]) -> dict[str, list[str]]:
    """The human evaluators grouped by who rated: experts, crowd workers, others."""
    out: dict[str, list[str]] = {}
    for name in humans:
        kind = info.get(name, EvaluatorInfo("", 1)).kind
        out.setdefault(verdicts.population_of(kind), []).append(name)
    return {p: out[p] for p in POPULATION_ORDER if p in out}


def epsilon_for(population: str, chosen: float | None) -> tuple[float, str]:
    if chosen is not None:
        return chosen, "chosen for this report"
    return EPSILON_BY_POPULATION[population], EPSILON_RULE


def human_annotations(
    table: pd.DataFrame,
    rs: pd.DataFrame,
    humans: list[str],
    info: dict[str, EvaluatorInfo],
    ratings: dict[str, pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The alt-test's raters: each individual rater of a human evaluator
    ("evaluator: rater"), or the evaluator itself when it stores one score per
    response from one person (a gold expert). A stored mean of several
    ratings is no rater's judgment and is left out, with the reason.

    Raters are integer codes into a list of labels until the end: 10^6
    ratings never become 10^6 Python strings."""
    items: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    labels: list[str] = []
    described: dict[str, dict] = {}
    ratings = individual_ratings(table) if ratings is None else ratings
    for name in humans:
        rows = ratings.get(name)
        evaluator_info = info.get(name, EvaluatorInfo("", 1))
        population = verdicts.population_of(evaluator_info.kind)
        if rows is not None:
            rater_index, raters = pd.factorize(rows["rater"].cat.codes.to_numpy())
            names = rows["rater"].cat.categories[raters]
            items.append(rows["response_id"].to_numpy())
            scores.append(rows["score"].to_numpy(float))
            codes.append(rater_index + len(labels))
            labels += [f"{name}: {rater}" for rater in names]
            described[name] = {
                "kind": evaluator_info.kind,
                "population": population,
                "raters": int(len(raters)),
                "role": "individual raters",
            }
            continue
        scored = rs[rs["evaluator"] == name]
        if scored.empty:
            described[name] = {
                "kind": evaluator_info.kind,
                "population": population,
                "raters": 0,
                "role": "no scores in the selection",
            }
        elif evaluator_info.raters_per_response > 1:
            described[name] = {
                "kind": evaluator_info.kind,
                "population": population,
                "raters": 0,
                "role": f"a mean of {evaluator_info.raters_per_response} ratings per response, "
                "not one rater's",
            }
        else:
            items.append(scored["response_id"].to_numpy())
            scores.append(scored["score"].to_numpy(float))
            codes.append(np.full(len(scored), len(labels)))
            labels.append(name)
            described[name] = {
                "kind": evaluator_info.kind,
                "population": population,
                "raters": 1,
                "role": "one rater",
            }
    if not items:
        return pd.DataFrame({"item": [], "rater": [], "score": []}), described
    annotations = pd.DataFrame(
        {
            "item": np.concatenate(items),
            "rater": pd.Categorical.from_codes(np.concatenate(codes), categories=labels),
            "score": np.concatenate(scores),
        }
    )
    annotations["rater"] = annotations["rater"].cat.remove_unused_categories()
    return annotations, described


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def summary(judge: str, reference: str | None, row: dict) -> str:
    """The row in words: how closely the judge tracks the reference, how many
    levels it separates, how it ranks the systems, its length bias, and its
    alt-test verdict against each population of human raters."""
    parts: list[str] = []
    if reference is not None:
        if row.get("correlation_verdict"):
            parts.append(row["correlation_verdict"]["words"])
        levels = row["levels"]
        if levels.get("computable", True):
            ranges = ", ".join(f"[{a}–{b}]" for a, b in levels["gold_ranges"])
            count = levels["levels"]
            parts.append(
                f"separates {count} quality level{'s' if count != 1 else ''} "
                f"along the {reference} scale ({ranges})"
            )
        if row.get("ranking_verdict"):
            parts.append(row["ranking_verdict"]["words"])
        bias = row["length_bias"]
        if bias.get("computable", True) and bias["ci95"][0] is not None:
            low, high = bias["ci95"]
            numbers = f"partial r {_fmt(bias['r'])}, 95% CI {_fmt(low)}–{_fmt(high)}"
            if low > 0:
                parts.append(f"rewards longer answers beyond their quality ({numbers})")
            elif high < 0:
                parts.append(f"rewards shorter answers beyond their quality ({numbers})")
            else:
                parts.append(f"shows no length bias (partial r {_fmt(bias['r'])})")
    for verdict in row["alt_tests"].values():
        who = verdicts.POPULATIONS[verdict["population"]][1]
        parts.append(f"alt-test against {who}: {verdict['reason']}")
    if reference is None:
        parts.insert(0, "no reference to compare it with (no human evaluator scores the selection)")
    return f"{judge} " + "; ".join(parts) + "."


def position_bias(pairwise: object, human_pairwise: object) -> dict:
    """Pairwise LLM judges beside human pairwise studies: the share of decided
    verdicts won by the answer shown first (0.5: no position bias), with the
    judges' flip rate between orders and the studies' binomial 95% CI."""
    rows: dict = {}
    if isinstance(pairwise, dict) and pairwise.get("computable", True):
        for name, entry in pairwise.items():
            if entry.get("computable", True) is False:
                continue
            flip = entry.get("flip_rate")
            rows[name] = {
                "kind": "LLM judge",
                "first_position_win_rate": entry.get("first_position_win_rate"),
                "flip_rate": flip if isinstance(flip, float) else None,
                "ci95": None,
            }
    if isinstance(human_pairwise, dict) and human_pairwise.get("computable", True):
        for name, study in human_pairwise.items():
            effect = study["position_effect"]
            if effect.get("computable", True) is False:
                continue
            rate = effect["first_position_win_rate"]
            test = effect["binomial_test"]
            rows[name] = {
                "kind": "human study",
                "first_position_win_rate": rate if isinstance(rate, float) else None,
                "flip_rate": None,
                "ci95": test["ci95"] if test.get("computable", True) else None,
            }
    if not rows:
        return not_computable("no pairwise judgments in the selection")
    return rows


def response_frame(rs: pd.DataFrame, wide: pd.DataFrame) -> pd.DataFrame:
    meta = rs.drop_duplicates("response_id").set_index("response_id")[META]
    return wide.join(meta)


def build(
    scope: Scope,
    rs: pd.DataFrame,
    wide: pd.DataFrame,
    pairwise_parts: dict,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    ratings: dict[str, pd.DataFrame] | None = None,
) -> dict:
    """{"trust", "ppi", "planner", "calibration", "self_consistency",
    "reliability"}: the report's parts, JSON-ready. `ratings`: the table's
    analysis.statistics.ratings.individual_ratings, when the caller has them already."""
    selection, table = scope.selection, scope.table
    info, humans, reference, judges = scope.info, scope.humans, scope.reference, scope.judges
    frame = response_frame(rs, wide)
    meetings = frame["meeting"].astype(str).to_numpy()
    meeting_names, meeting_codes = np.unique(meetings, return_inverse=True)
    boot = ClusterBootstrap(meeting_codes, len(meeting_names), resamples, seed)
    system_names = sorted(frame["system"].astype(str).unique())
    system_codes = np.searchsorted(system_names, frame["system"].astype(str).to_numpy())

    groups = populations(humans, info)
    annotations: dict[str, tuple[pd.DataFrame, dict]] = {
        population: human_annotations(table, rs, names, info, ratings)
        for population, names in groups.items()
    }
    described: dict[str, dict] = {}
    for _, part in annotations.values():
        described.update(part)
    population_parts: dict[str, PopulationPart] = {}
    for population, names in groups.items():
        epsilon, rule = epsilon_for(population, selection.epsilon)
        population_parts[population] = {
            "evaluators": names,
            "raters": int(annotations[population][0]["rater"].nunique())
            if len(annotations[population][0])
            else 0,
            "epsilon": float(epsilon),
            "epsilon_rule": rule,
        }
    no_reference = not_computable("no reference: no human evaluator scores the selection")
    rows: dict = {}
    answers: list[str] = []
    for judge in judges:
        x = frame[judge].to_numpy(float)
        scores = frame[judge].dropna()
        row: dict = {"alt_tests": {}}
        for population, names in groups.items():
            population_part = population_parts[population]
            humans_of, described_of = annotations[population]
            row["alt_tests"][population] = verdicts.alt_test_verdict(
                humans_of,
                scores,
                population=population,
                evaluators=names,
                described=described_of,
                epsilon=population_part["epsilon"],
                epsilon_rule=population_part["epsilon_rule"],
                alignment=selection.alignment,
            )
        if reference is None:
            row.update(
                correlation=no_reference,
                levels=no_reference,
                length_bias=no_reference,
                ranking=no_reference,
            )
        else:
            y = frame[reference].to_numpy(float)
            row["correlation"] = clustered_correlation(boot, x, y)
            if row["correlation"].get("computable", True):
                row["correlation_verdict"] = verdicts.correlation_words(
                    row["correlation"], reference
                )
            both = frame[[reference, judge]].dropna()
            row["levels"] = distinct_levels(both, reference, judge)
            known = both.join(frame["response_chars"])
            row["length_bias"] = judge_diagnostics.length_bias(
                known[judge].to_numpy(float),
                known[reference].to_numpy(float),
                known["response_chars"].to_numpy(float),
            )
            row["ranking"] = ranking_agreement(boot, x, y, system_codes, system_names)
            if row["ranking"].get("computable", True):
                row["ranking_verdict"] = verdicts.ranking_words(row["ranking"], reference)
        # a judge that gives every answer one score is named as one (its means tie)
        row["constant_score"] = (
            float(scores.iloc[0]) if len(scores) > 1 and scores.nunique() == 1 else None
        )
        row["summary"] = summary(judge, reference, row)
        row["answers"], row["answer"] = verdicts.answer(judge, row, list(groups))
        row["uses"] = uses.use_cells(row)
        answers.append(row["answer"])
        rows[judge] = row

    trust: dict
    if not judges:
        trust = not_computable("no judge in the selection: every evaluator is a human one")
    else:
        trust = {
            "humans": described,
            "reference": reference,
            "reference_rule": scope.reference_rule,
            "reference_coverage": scope.coverage_text(reference),
            "judges": judges,
            "populations": population_parts,
            "alignment": selection.alignment,
            "alignment_description": alt_test.ALIGNMENT_DESCRIPTIONS[selection.alignment],
            "cluster_by": "meeting",
            "clusters": int(len(meeting_names)),
            "resamples": resamples,
            "seed": seed,
            "rows": rows,
            "answers": answers,
            "position_bias": position_bias(
                pairwise_parts.get("pairwise"), pairwise_parts.get("human_pairwise")
            ),
        }
        note = correlation_clusters_note(boot)
        if note:
            trust["interval_note"] = note
    out = {"trust": trust}
    out.update(gold_parts(scope, frame, boot, system_codes, system_names, seed))
    out["self_consistency"] = judge_diagnostics.self_consistency(table)
    return out
