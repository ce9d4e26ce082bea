"""Judge trust: can this judge replace the humans, for what, and how few
human ratings does a study need?

Builds, for one resolved selection (analysis.scope: the judges, the human
evaluators and the reference, each chosen or chosen by a stated rule), the
report's judge-trust section: per judge, the alternative annotator test
against each population of human raters (experts, crowd workers, others) in
three values (analysis.verdicts), the correlation with the reference under a
meeting-clustered bootstrap, the quality levels it separates, its length
bias and the system ranking it gives against the reference's, each with its
verdict in words; then the PPI system scores (on a labelled set PPI allows),
the human budget planner, and the judge diagnostics (calibration,
self-consistency, reliability per question type and answer position).
Returns JSON-ready values; analysis.report types them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import alt_test, judge_diagnostics, ppi, verdicts
from analysis.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ClusterBootstrap,
    clustered_correlation,
    ranking_agreement,
    too_few_clusters,
)
from analysis.scope import EvaluatorInfo, Scope
from analysis.scores import individual_ratings
from analysis.stats import distinct_levels, not_computable

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
    items, scores, codes, labels = [], [], [], []
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
    if reference is None:
        parts = []
    else:
        parts = []
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


def position_bias(pairwise, human_pairwise) -> dict:
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
    analysis.scores.individual_ratings, when the caller has them already."""
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
    population_parts = {}
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
            part = population_parts[population]
            humans_of, described_of = annotations[population]
            row["alt_tests"][population] = verdicts.alt_test_verdict(
                humans_of,
                scores,
                population=population,
                evaluators=names,
                described=described_of,
                epsilon=part["epsilon"],
                epsilon_rule=part["epsilon_rule"],
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
        row["summary"] = summary(judge, reference, row)
        row["answers"], row["answer"] = verdicts.answer(judge, row, list(groups))
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
        note = too_few_clusters(boot)
        if note:
            trust["interval_note"] = note
    out = {"trust": trust}
    out.update(gold_parts(scope, frame, boot, system_codes, system_names, seed))
    out["self_consistency"] = judge_diagnostics.self_consistency(table)
    return out


# --- PPI's labelled set -----------------------------------------------------------------------


def labelled_design(scope: Scope, frame: pd.DataFrame, labels: str, judges: list[str]) -> dict:
    """Which of the `labels` evaluator's ratings PPI may use, and how:

    - "sample": every response a judge scored has a label (the paper's gold):
      PPI keeps a seeded random sample of `ppi_labelled` per system as its
      labelled set and hides the other labels;
    - "weighted": the labels come from a study the report's planner sampled
      with recorded inclusion probabilities (random or by the judges'
      uncertainty): each label weighs 1 / its probability (Zrnic & Candes,
      ICML 2024); every response of the selection must have had a chance;
    - "refused": the labels cover part of the selection, chosen in a way
      that gives no probabilities (by hand, a subset of meetings, by
      disagreement without probabilities): PPI would be biased, so it is
      not computed, and the reason says so.
    """
    has_label = frame[labels].notna().to_numpy()
    judged = frame[judges].notna().any(axis=1).to_numpy() if judges else np.zeros(len(frame), bool)
    missing = int((judged & ~has_label).sum())
    if not missing:
        return {"kind": "sample", "has_label": has_label}
    from annotator.models import InclusionProbability, Study

    study = Study.objects.filter(evaluator__name=labels).first()
    covered = int((judged & has_label).sum())
    what = f"{labels} labels {covered} of {int(judged.sum())} judged responses"
    if study is None or not study.sampling:
        how = (
            "chosen by hand or as a part of the meetings or systems"
            if study is not None
            else "imported, with no record of how they were chosen"
        )
        return {
            "kind": "refused",
            "reason": f"PPI needs its labelled set to be a random sample or to carry its "
            f"inclusion probabilities: {what}, {how}, with no probabilities recorded. Label a "
            "random sample (the planner's 'random') or pick items through the planner, which "
            "records their probabilities.",
        }
    stored = dict(
        InclusionProbability.objects.filter(study=study).values_list("response_id", "probability")
    )
    picked = set(
        InclusionProbability.objects.filter(study=study, picked=True).values_list(
            "response_id", flat=True
        )
    )
    ids = frame.index.to_numpy()
    probability = np.array([stored.get(int(rid), 0.0) for rid in ids], dtype=float)
    outside = int((judged & (probability <= 0)).sum())
    if outside:
        return {
            "kind": "refused",
            "reason": f"{labels} was sampled from another selection: {outside} judged "
            "responses of this one could not have been picked (no inclusion probability), so "
            "inverse-probability weights cannot reach them. Narrow the selection to the study's "
            f"(study={study.pk}) or label a sample of this one.",
        }
    in_frame = np.isin(ids, list(picked))
    unrated = int((in_frame & ~has_label).sum())
    if unrated:
        return {
            "kind": "refused",
            "reason": f"{unrated} of the {len(picked)} responses picked for {labels} have no "
            "rating yet: the weights hold once every picked response is rated (leaving some "
            "out would bias the estimate).",
        }
    return {
        "kind": "weighted",
        "has_label": has_label & in_frame,
        "probability": probability,
        "study": study.pk,
        "sampling": study.sampling,
    }


def ppi_sample(
    frame: pd.DataFrame, labels: str, per_system: int, seed: int
) -> tuple[np.ndarray, dict]:
    """A seeded random sample of `per_system` labels per system (at most half
    of its responses), the other labels hidden, so that the report shows
    what PPI would have given and whether its interval covers the mean of all
    the labels."""
    has_label = frame[labels].notna().to_numpy()
    rng = np.random.default_rng(seed)
    labelled = np.zeros(len(frame), bool)
    systems = frame["system"].astype(str).to_numpy()
    sizes = []
    for system in sorted(set(systems)):
        candidates = np.flatnonzero((systems == system) & has_label)
        size = min(per_system, len(candidates) // 2)
        if size >= 2:
            labelled[rng.choice(candidates, size=size, replace=False)] = True
        sizes.append(size)
    return labelled, {
        "design": "sample",
        "sampled": True,
        "per_system": per_system,
        "seed": seed,
        "description": f"every judged response has a {labels} score, so PPI keeps a random "
        f"sample of {per_system} per system (at most half; here {min(sizes) if sizes else 0}"
        f"{'' if len(set(sizes)) <= 1 else f'-{max(sizes)}'}) as its labelled set and hides the "
        "other labels; each system's all-label mean is shown for comparison",
    }


def gold_parts(
    scope: Scope,
    frame: pd.DataFrame,
    boot: ClusterBootstrap,
    system_codes: np.ndarray,
    system_names: list[str],
    seed: int,
) -> dict:
    """The parts that need a reference or labels: PPI and the planner (on the
    PPI labels), calibration and reliability (on the reference)."""
    reference, judges, selection = scope.reference, scope.judges, scope.selection
    evaluators = set(frame.columns)
    labels = scope.ppi_labels if scope.ppi_labels in evaluators else None
    out: dict = {}
    if not judges:
        reason = not_computable("no judge in the selection besides the human evaluators")
        return {"ppi": reason, "planner": reason, "calibration": reason, "reliability": reason}
    if reference is None:
        reason = not_computable("no reference: no human evaluator scores the selection")
        out["calibration"] = out["reliability"] = reason
    else:
        calibration, reliability = {}, {}
        for judge in judges:
            both = frame[[reference, judge]].dropna()
            calibration[judge] = judge_diagnostics.calibration(
                both[judge].to_numpy(float), both[reference].to_numpy(float)
            )
            reliability[judge] = judge_diagnostics.reliability_by(frame, judge, reference)
        out["calibration"], out["reliability"] = calibration, reliability
    if labels is None:
        reason = not_computable(
            f"no labels for PPI: {scope.ppi_labels or 'no human evaluator'} scores no response "
            "of the selection"
        )
        out["ppi"] = out["planner"] = reason
        return out
    design = labelled_design(scope, frame, labels, judges)
    if design["kind"] == "refused":
        out["ppi"] = not_computable(design["reason"])
    else:
        y = frame[labels].to_numpy(float)
        if design["kind"] == "sample":
            labelled, how = ppi_sample(frame, labels, selection.ppi_labelled, seed)
            estimates = {
                judge: ppi.system_scores(
                    boot,
                    y,
                    frame[judge].to_numpy(float),
                    labelled,
                    system_codes,
                    system_names,
                    hidden_gold=y,
                )
                for judge in judges
            }
        else:
            how = {
                "design": "weighted",
                "sampled": False,
                "study": design["study"],
                "description": f"the {int(design['has_label'].sum())} responses the planner "
                f"picked for {labels} ({design['sampling']}, study {design['study']}), each "
                "weighted by 1 / its inclusion probability (Zrnic & Candès 2024, active "
                "statistical inference); every judged response had a chance of being picked",
            }
            estimates = {
                judge: ppi.weighted_system_scores(
                    boot,
                    y,
                    frame[judge].to_numpy(float),
                    design["has_label"],
                    design["probability"],
                    system_codes,
                    system_names,
                )
                for judge in judges
            }
        out["ppi"] = {
            "gold": labels,
            "labelled": how,
            "resamples": boot.resamples,
            "judges": estimates,
        }
    out["planner"] = planner(frame, labels, judges, selection.target_width, system_names)
    return out


def planner(
    frame: pd.DataFrame, gold: str, judges: list[str], width: float, system_names: list[str]
) -> dict:
    """Per system: how many gold ratings give a 95% CI of `width` on its mean,
    without a judge and with each judge (PPI++), and how many more than the
    selection holds."""
    systems: dict = {}
    for system in system_names:
        rows = frame[frame["system"].astype(str) == system]
        rated = rows[rows[gold].notna()]
        if len(rated) < 2:
            systems[system] = not_computable(
                f"{len(rated)} gold-rated response(s); at least 2 are needed to estimate a variance"
            )
            continue
        gold_values = rated[gold].to_numpy(float)
        gold_only = max(2, int(np.ceil((ppi.Z95 * np.std(gold_values) / (width / 2)) ** 2)))
        entry: dict = {
            "responses": int(len(rows)),
            "gold_now": int(len(rated)),
            "judges": {},
            "gold_only": gold_only,
            "ceiling": int(np.ceil(gold_only / 2)),
            "gold_only_more": max(0, gold_only - int(len(rated))),
            "gold_only_reachable": gold_only <= len(rows),
        }
        for judge in judges:
            known = rated[rated[judge].notna()]
            everything = rows[judge].dropna().to_numpy(float)
            if len(known) < 2 or len(everything) < 2:
                continue
            plan = ppi.gold_needed(
                known[gold].to_numpy(float), known[judge].to_numpy(float), everything, width
            )
            entry["judges"][judge] = {
                "ppi": plan["ppi"],
                "more": None if plan["ppi"] is None else max(0, plan["ppi"] - len(known)),
                "beyond_ceiling": plan["ppi"] is not None and plan["ppi"] < entry["ceiling"],
            }
        systems[system] = entry
    return {
        "gold": gold,
        "target_width": width,
        "systems": systems,
        "summary": planner_summary(systems, width),
    }


def planner_summary(systems: dict, width: float) -> str:
    words = [f"For a 95% CI of width {width:g} on a system's mean:"]
    for system, entry in systems.items():
        if entry.get("computable", True) is False:
            continue
        if entry["gold_only_reachable"]:
            text = f"{system} needs {entry['gold_only']} gold ratings"
        else:
            text = (
                f"{system} would need {entry['gold_only']} gold ratings, more than its "
                f"{entry['responses']} responses"
            )
        reachable = {j: b["ppi"] for j, b in entry["judges"].items() if b["ppi"] is not None}
        if reachable:
            judge = min(reachable, key=lambda name: reachable[name])
            text += f", {reachable[judge]} with {judge}'s scores on the rest (PPI++)"
        elif entry["judges"]:
            text += ", and no judge brings it within reach"
        words.append(text + ";")
    words.append(
        "a judge no better than the evaluated model saves at most half the ratings (Dorner, "
        "Nastl & Hardt, ICLR 2025): read savings beyond that ceiling with care."
    )
    return " ".join(words)
