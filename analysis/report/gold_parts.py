"""The report's parts that need a reference or PPI's labels: PPI's system
scores on a labelled set PPI allows (and how that set was chosen), the human
budget planner (analysis.planning.planner), and the judge diagnostics read against the
reference (calibration, reliability per question type and answer position).
Returns JSON-ready values; analysis.report.build types them.
"""

from __future__ import annotations

from typing import Literal, TypedDict

import numpy as np
import pandas as pd

from analysis.planning.planner import planner
from analysis.report.scope import Scope
from analysis.statistics import judge_diagnostics, ppi
from analysis.statistics.bootstrap import ClusterBootstrap
from analysis.statistics.savings import savings_ceiling
from analysis.statistics.stats import not_computable


class SampleDesign(TypedDict):
    """Every judged response has a label: PPI samples them (ppi_sample)."""

    kind: Literal["sample"]
    has_label: np.ndarray


class WeightedDesign(TypedDict):
    """The labels of a study the planner sampled, each weighed by 1 / its
    inclusion probability."""

    kind: Literal["weighted"]
    has_label: np.ndarray
    probability: np.ndarray
    study: int
    sampling: str


class RefusedDesign(TypedDict):
    """Labels chosen in a way that gives no probabilities: no PPI, and why."""

    kind: Literal["refused"]
    reason: str


# --- PPI's labelled set -----------------------------------------------------------------------


def labelled_design(
    scope: Scope, frame: pd.DataFrame, labels: str, judges: list[str]
) -> SampleDesign | WeightedDesign | RefusedDesign:
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
    if study.sampling == Study.Sampling.DEFERRED:
        return {
            "kind": "refused",
            "reason": f"PPI needs its labelled set to be a random sample or to carry its "
            f"inclusion probabilities: {what}, the responses a deferring judge left to humans "
            "(study {study.pk}): not a probability sample, they are the judge's hardest. Label "
            "a random sample (the planner's 'random') for PPI.",
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
) -> tuple[np.ndarray, dict[str, object]]:
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
    out: dict[str, object] = {}
    if not judges:
        reason = not_computable("no judge in the selection besides the human evaluators")
        return {
            "ppi": reason,
            "planner": reason,
            "calibration": reason,
            "reliability": reason,
            "savings": reason,
        }
    if reference is None:
        reason = not_computable("no reference: no human evaluator scores the selection")
        out["calibration"] = out["reliability"] = out["savings"] = reason
    else:
        calibration: dict[str, dict] = {}
        reliability: dict[str, dict] = {}
        ceiling: dict[str, dict] = {}
        words = meeting_words(frame["meeting"].astype(str).unique())
        for judge in judges:
            both = frame[[reference, judge]].dropna()
            calibration[judge] = judge_diagnostics.calibration(
                both[judge].to_numpy(float), both[reference].to_numpy(float)
            )
            reliability[judge] = judge_diagnostics.reliability_by(frame, judge, reference, words)
            ceiling[judge] = savings_ceiling(
                boot,
                system_codes,
                len(system_names),
                frame[judge].to_numpy(float),
                frame[reference].to_numpy(float),
            )
        out["calibration"], out["reliability"] = calibration, reliability
        out["savings"] = ceiling
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
        how: dict[str, object]
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
            "judges": estimates,
        }
    out["planner"] = planner(frame, labels, judges, selection.target_width, system_names)
    return out


def meeting_words(meetings) -> dict[str, int]:
    """Each meeting's transcript length in words (the input a judge reads
    with the question); the longest where two benchmarks share a name."""
    from django.db.models import Max

    from corpus.models import Document

    return dict(
        Document.objects.filter(external_id__in=list(meetings))
        .values_list("external_id")
        .annotate(Max("word_count"))
    )
