"""Judge trust: can this judge replace the humans, and how few human ratings
does a study need?

Builds, for one selection, the report's judge-trust section (one row per
judge against the chosen human evaluators: the alternative annotator test,
the correlation with gold under a meeting-clustered bootstrap, the quality
levels it separates, its length bias, and the system ranking it gives against
the humans'), the PPI system scores, the human budget planner, and the judge
diagnostics (calibration, self-consistency, reliability per question type and
answer position). Returns JSON-ready values; analysis.report types them.

Roles: the human evaluators are the selection's `humans`, or else every
evaluator of a human kind (a gold or crowd study, or scores imported as
such); the reference is the gold evaluator (analysis.report.choose_gold), or
else the human evaluator with the most scored responses; every other
evaluator with scores is a judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import alt_test, judge_diagnostics, ppi
from analysis.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ClusterBootstrap,
    clustered_correlation,
    ranking_agreement,
)
from analysis.scores import individual_ratings
from analysis.selection import Selection
from analysis.stats import distinct_levels, not_computable

HUMAN_KINDS = frozenset({"gold_human", "crowd_human"})
# The authors' rule of thumb for epsilon (Calderon et al. 2025, FAQ).
EPSILON_EXPERT, EPSILON_SKILLED, EPSILON_CROWD = 0.2, 0.15, 0.1
# Words for a correlation with gold (the lower end of its 95% interval decides "closely").
CLOSELY, MODERATELY = 0.7, 0.5
META = ["meeting", "system", "response_chars", "question_type", "answer_position"]


@dataclass(frozen=True)
class EvaluatorInfo:
    kind: str  # the evaluator's kind, or the original kind of imported scores
    raters_per_response: int  # > 1: each stored score is a mean of that many ratings


def evaluator_info(table: pd.DataFrame) -> dict[str, EvaluatorInfo]:
    """Each evaluator's effective kind, from the database (imported scores
    keep their original kind in their configuration), else from the table."""
    from judging.models import Evaluator

    names = [str(n) for n in table["evaluator"].unique()]
    pairs = table[["evaluator", "evaluator_kind"]].drop_duplicates("evaluator")
    kinds = dict(
        zip(pairs["evaluator"].astype(str), pairs["evaluator_kind"].astype(str), strict=True)
    )
    out = {name: EvaluatorInfo(kinds.get(name, ""), 1) for name in names}
    for name, kind, config in Evaluator.objects.filter(name__in=names).values_list(
        "name", "kind", "config"
    ):
        config = config if isinstance(config, dict) else {}
        original = config.get("original_kind") if kind == "imported" else None
        raters = config.get("raters_per_response", 1)
        out[name] = EvaluatorInfo(
            original or kind, raters if isinstance(raters, int) and raters > 1 else 1
        )
    return out


def default_epsilon(humans: list[str], info: dict[str, EvaluatorInfo]) -> tuple[float, str]:
    kinds = {info[h].kind for h in humans if h in info}
    rule = "the authors' rule of thumb: 0.2 experts, 0.15 skilled annotators, 0.1 crowd workers"
    if "crowd_human" in kinds:
        return EPSILON_CROWD, f"crowd workers among the human raters ({rule})"
    if kinds == {"gold_human"}:
        return EPSILON_EXPERT, f"expert (gold) human raters ({rule})"
    return EPSILON_SKILLED, f"human raters of unknown expertise, taken as skilled ({rule})"


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
        if rows is not None:
            rater_index, raters = pd.factorize(rows["rater"].cat.codes.to_numpy())
            names = rows["rater"].cat.categories[raters]
            items.append(rows["response_id"].to_numpy())
            scores.append(rows["score"].to_numpy(float))
            codes.append(rater_index + len(labels))
            labels += [f"{name}: {rater}" for rater in names]
            described[name] = {
                "kind": evaluator_info.kind,
                "raters": int(len(raters)),
                "role": "individual raters",
            }
            continue
        scored = rs[rs["evaluator"] == name]
        if scored.empty:
            described[name] = {
                "kind": evaluator_info.kind,
                "raters": 0,
                "role": "no scores in the selection",
            }
        elif evaluator_info.raters_per_response > 1:
            described[name] = {
                "kind": evaluator_info.kind,
                "raters": 0,
                "role": f"a mean of {evaluator_info.raters_per_response} ratings per response, "
                "not one rater's (the selection holds no individual ratings)",
            }
        else:
            items.append(scored["response_id"].to_numpy())
            scores.append(scored["score"].to_numpy(float))
            codes.append(np.full(len(scored), len(labels)))
            labels.append(name)
            described[name] = {"kind": evaluator_info.kind, "raters": 1, "role": "one rater"}
    if not items:
        return pd.DataFrame({"item": [], "rater": [], "score": []}), described
    annotations = pd.DataFrame(
        {
            "item": np.concatenate(items),
            "rater": pd.Categorical.from_codes(np.concatenate(codes), categories=labels),
            "score": np.concatenate(scores),
        }
    )
    return annotations, described


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def summary(judge: str, reference: str | None, row: dict) -> str:
    """The row in words: how closely the judge tracks the reference, how many
    levels it separates, how it ranks the systems, whether it passes the
    alt-test, and its length bias."""
    if reference is None:
        return f"{judge}: no gold or human evaluator in the selection to compare it with."
    parts = []
    correlation = row["correlation"]
    if correlation.get("computable", True):
        r, (low, high) = correlation["r"], correlation["ci95"]
        numbers = (
            f"Pearson r {_fmt(r)}, 95% CI {_fmt(low)}–{_fmt(high)} over "
            f"{correlation['clusters']} resampled meetings"
        )
        if low is not None and low >= CLOSELY:
            parts.append(f"tracks {reference} closely ({numbers})")
        elif r >= MODERATELY:
            parts.append(f"tracks {reference} only moderately ({numbers})")
        else:
            parts.append(f"does not track {reference} ({numbers}: a weak correlation)")
    levels = row["levels"]
    if levels.get("computable", True):
        ranges = ", ".join(f"[{a}–{b}]" for a, b in levels["gold_ranges"])
        parts.append(
            f"separates {levels['levels']} quality level{'s' if levels['levels'] != 1 else ''} "
            f"along the {reference} scale ({ranges})"
        )
    ranking = row["ranking"]
    if ranking.get("computable", True) and ranking["kendall_tau"] is not None:
        same = ranking["judge_ranking"] == ranking["human_ranking"]
        low, high = ranking["ci95"]
        probability = ranking["top_same_probability"]
        top = (
            f"; the same top system in {probability:.0%} of resamples"
            if probability is not None
            else ""
        )
        parts.append(
            ("ranks the systems as " if same else "ranks the systems differently from ")
            + f"{reference} does (Kendall τ {_fmt(ranking['kendall_tau'])}, 95% CI "
            f"{_fmt(low)}–{_fmt(high)}{top})"
        )
    bias = row["length_bias"]
    if bias.get("computable", True) and bias["ci95"][0] is not None:
        low, high = bias["ci95"]
        if low > 0:
            parts.append(
                f"rewards longer answers beyond their quality (partial r {_fmt(bias['r'])}, "
                f"95% CI {_fmt(low)}–{_fmt(high)})"
            )
        elif high < 0:
            parts.append(
                f"rewards shorter answers beyond their quality (partial r {_fmt(bias['r'])}, "
                f"95% CI {_fmt(low)}–{_fmt(high)})"
            )
        else:
            parts.append(f"shows no length bias (partial r {_fmt(bias['r'])})")
    test = row["alt_test"]
    if test.get("computable", True):
        verdict = "passes" if test["passed"] else "fails"
        parts.append(
            f"{verdict} the alternative annotator test (winning rate ω {_fmt(test['winning_rate'])}"
            f", advantage probability ρ {_fmt(test['advantage_probability'])}, "
            f"ε {test['epsilon']:g})"
        )
    else:
        parts.append(f"alt-test not computable because {test['reason']}")
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


def ppi_sample(
    frame: pd.DataFrame, gold: str, judges: list[str], per_system: int, seed: int
) -> tuple[np.ndarray, dict]:
    """Which gold ratings PPI uses. Where some judged responses have no gold
    score, all the gold ratings (the usual case: a gold study on a sample);
    where every judged response has one, a seeded random sample of
    `per_system` per system (at most half of its responses), the other gold
    scores hidden, so that the report shows what PPI would have given and
    whether its interval covers the mean of all the gold scores."""
    has_gold = frame[gold].notna().to_numpy()
    judged = frame[judges].notna().any(axis=1).to_numpy() if judges else np.zeros(len(frame), bool)
    if (judged & ~has_gold).any():
        return has_gold, {
            "sampled": False,
            "description": "every gold rating (the responses without one are PPI's unlabelled "
            "set; they must be a random sample for PPI to be valid)",
        }
    rng = np.random.default_rng(seed)
    labelled = np.zeros(len(frame), bool)
    systems = frame["system"].astype(str).to_numpy()
    sizes = []
    for system in sorted(set(systems)):
        candidates = np.flatnonzero((systems == system) & has_gold)
        size = min(per_system, len(candidates) // 2)
        if size >= 2:
            labelled[rng.choice(candidates, size=size, replace=False)] = True
        sizes.append(size)
    return labelled, {
        "sampled": True,
        "per_system": per_system,
        "seed": seed,
        "description": f"every response has a {gold} score, so PPI keeps a random sample of "
        f"{per_system} per system (at most half; here {min(sizes) if sizes else 0}"
        f"{'' if len(set(sizes)) <= 1 else f'-{max(sizes)}'}) as its labelled set and hides the "
        "other gold scores; each system's all-gold mean is shown for comparison",
    }


def roles(
    table: pd.DataFrame, wide: pd.DataFrame, selection: Selection, gold: str | None
) -> tuple[dict[str, EvaluatorInfo], list[str], str | None, list[str]]:
    """The evaluators' kinds, the human evaluators, the reference and the judges."""
    info = evaluator_info(table)
    evaluators = list(wide.columns)
    if selection.humans:
        humans = list(selection.humans)
    else:
        humans = sorted(name for name, i in info.items() if i.kind in HUMAN_KINDS)
    reference = gold if gold in evaluators else None
    if reference is None:
        scored = [(int(wide[h].notna().sum()), h) for h in humans if h in evaluators]
        reference = max(scored)[1] if scored else None
    judges = [e for e in evaluators if e not in humans and e != reference]
    return info, humans, reference, judges


def build(
    table: pd.DataFrame,
    rs: pd.DataFrame,
    wide: pd.DataFrame,
    selection: Selection,
    gold: str | None,
    pairwise_parts: dict,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    ratings: dict[str, pd.DataFrame] | None = None,
) -> dict:
    """{"trust", "ppi", "planner", "calibration", "self_consistency",
    "reliability"}: the report's parts, JSON-ready. `ratings`: the table's
    analysis.scores.individual_ratings, when the caller has them already."""
    info, humans, reference, judges = roles(table, wide, selection, gold)
    evaluators = list(wide.columns)
    frame = response_frame(rs, wide)
    meetings = frame["meeting"].astype(str).to_numpy()
    meeting_names, meeting_codes = np.unique(meetings, return_inverse=True)
    boot = ClusterBootstrap(meeting_codes, len(meeting_names), resamples, seed)
    system_names = sorted(frame["system"].astype(str).unique())
    system_codes = np.searchsorted(system_names, frame["system"].astype(str).to_numpy())

    epsilon, epsilon_rule = (
        (selection.epsilon, "chosen for this report")
        if selection.epsilon is not None
        else default_epsilon(humans, info)
    )
    annotations, described = human_annotations(table, rs, humans, info, ratings)
    no_reference = not_computable("no gold or human evaluator in the selection")
    rows: dict = {}
    for judge in judges:
        x = frame[judge].to_numpy(float)
        row: dict = {}
        test = alt_test.alt_test(
            annotations, frame[judge].dropna(), epsilon=epsilon, alignment=selection.alignment
        )
        if test.get("computable", True) is False:
            contributions = "; ".join(f"{name} is {d['role']}" for name, d in described.items())
            if not humans:
                contributions = "no human evaluator in the selection"
            test = not_computable(
                f"{test['reason']}: {contributions}" if contributions else test["reason"]
            )
        row["alt_test"] = test
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
            both = frame[[reference, judge]].dropna()
            row["levels"] = distinct_levels(both, reference, judge)
            known = both.join(frame["response_chars"])
            row["length_bias"] = judge_diagnostics.length_bias(
                known[judge].to_numpy(float),
                known[reference].to_numpy(float),
                known["response_chars"].to_numpy(float),
            )
            row["ranking"] = ranking_agreement(boot, x, y, system_codes, system_names)
        row["summary"] = summary(judge, reference, row)
        rows[judge] = row

    trust: dict
    if not judges:
        trust = not_computable("no judge in the selection: every evaluator is a human one")
    else:
        trust = {
            "humans": described,
            "reference": reference,
            "judges": judges,
            "epsilon": float(epsilon),
            "epsilon_rule": epsilon_rule,
            "alignment": selection.alignment,
            "alignment_description": alt_test.ALIGNMENT_DESCRIPTIONS[selection.alignment],
            "cluster_by": "meeting",
            "clusters": int(len(meeting_names)),
            "resamples": resamples,
            "seed": seed,
            "rows": rows,
            "position_bias": position_bias(
                pairwise_parts.get("pairwise"), pairwise_parts.get("human_pairwise")
            ),
        }
    out = {"trust": trust}
    out.update(
        gold_parts(
            frame,
            gold if gold in evaluators else None,
            judges,
            selection,
            boot,
            system_codes,
            system_names,
            seed,
        )
    )
    out["self_consistency"] = judge_diagnostics.self_consistency(table)
    return out


def gold_parts(
    frame: pd.DataFrame,
    gold: str | None,
    judges: list[str],
    selection: Selection,
    boot: ClusterBootstrap,
    system_codes: np.ndarray,
    system_names: list[str],
    seed: int,
) -> dict:
    """The parts that need gold scores: PPI, the planner, calibration and
    reliability per question type and answer position."""
    if gold is None:
        reason = not_computable("no gold evaluator in the selection")
        return {"ppi": reason, "planner": reason, "calibration": reason, "reliability": reason}
    if not judges:
        reason = not_computable("no judge in the selection besides the human evaluators")
        return {"ppi": reason, "planner": reason, "calibration": reason, "reliability": reason}
    y = frame[gold].to_numpy(float)
    labelled, how = ppi_sample(frame, gold, judges, selection.ppi_labelled, seed)
    hidden = y if how["sampled"] else None
    ppi_part = {
        "gold": gold,
        "labelled": how,
        "resamples": boot.resamples,
        "judges": {
            judge: ppi.system_scores(
                boot,
                y,
                frame[judge].to_numpy(float),
                labelled,
                system_codes,
                system_names,
                hidden_gold=hidden,
            )
            for judge in judges
        },
    }
    calibration = {}
    reliability = {}
    for judge in judges:
        both = frame[[gold, judge]].dropna()
        calibration[judge] = judge_diagnostics.calibration(
            both[judge].to_numpy(float), both[gold].to_numpy(float)
        )
        reliability[judge] = judge_diagnostics.reliability_by(frame, judge, gold)
    return {
        "ppi": ppi_part,
        "planner": planner(frame, gold, judges, selection.target_width, system_names),
        "calibration": calibration,
        "reliability": reliability,
    }


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
