"""The report's rankings: a Bradley-Terry ranking per evaluator, with
intervals, simultaneous differences and rank-sets
(analysis.statistics.bradley_terry), clustered by meeting as the judge-trust
intervals are.

From scores: on each question (a question in one mode and dataset version),
every two systems that answered it meet once, the higher score winning and
equal scores tying; a system's score there is the mean over its seeds and
raters. From pairwise verdicts: each judged pair is one battle, its outcome
the LLM judge's consistent one over both orders (the majority over seeds), or
a human study's majority over its raters (analysis.statistics.pairwise)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.prediction_powered import prediction_powered_part
from analysis.report.prediction_powered_pairwise import prediction_powered_from_verdicts
from analysis.report.selection import DEFAULT_LABELLED
from analysis.statistics import bradley_terry as bt
from analysis.statistics import style_control
from analysis.statistics.bootstrap import DEFAULT_SEED, ClusterBootstrap
from analysis.statistics.stats import not_computable

UNIT = "Elo points: 400 per factor of 10 in the odds of winning, the systems' mean at 1000"
# the resamples the coverage harness replays the rankings with (its Settings.resamples):
# more would only smooth the max-t quantile, at 2.5x the time on 10^5 responses
RANKING_RESAMPLES = 400


def _codes(values: pd.Series) -> tuple[list[str], np.ndarray]:
    """The values' names in sorted order and each value's code into them.
    Integer codes throughout: a categorical column's categories are sorted
    (10^2 names), never its 10^5 strings."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        categories = np.asarray(values.cat.categories).astype(str)
        order = np.argsort(categories, kind="stable")
        rank = np.empty(len(categories), dtype=np.int64)
        rank[order] = np.arange(len(categories))
        return [str(c) for c in categories[order]], rank[values.cat.codes.to_numpy()]
    codes, names = pd.factorize(values.astype(str), sort=True)
    return [str(n) for n in names], codes


def ranking(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    meetings: np.ndarray,
    systems: list[str],
    resamples: int,
    seed: int,
    features: np.ndarray | None = None,
    feature_names: list[str] | None = None,
) -> dict:
    """One evaluator's battles (system codes into `systems`; per battle its
    meeting, as a code in the meetings' sorted order): the ranking of the
    systems that met, its meetings resampled in that order; with `features`
    (battles x p, named by `feature_names`), style-controlled."""
    _, meeting_codes = np.unique(meetings, return_inverse=True)
    present = np.unique(np.concatenate([first, second]))
    local = np.full(len(systems), -1)
    local[present] = np.arange(len(present))
    boot = ClusterBootstrap(meeting_codes, int(meeting_codes.max()) + 1, resamples, seed)
    return bt.bradley_terry(
        local[first],
        local[second],
        outcome,
        meeting_codes,
        [systems[s] for s in present],
        boot,
        features=features,
        feature_names=feature_names,
    )


def style_counts(response_ids) -> pd.DataFrame:
    """Per response (index), its markdown elements as FastChat counts them
    (style_control.markdown_counts: headers, lists, bold), read from the
    answers' texts a few thousand at a time."""
    from generation.models import Response

    ids = [int(i) for i in pd.unique(np.asarray(response_ids))]
    rows: list[tuple[int, ...]] = []
    for start in range(0, len(ids), 5000):
        texts = Response.objects.filter(pk__in=ids[start : start + 5000]).values_list("pk", "text")
        rows.extend((pk, *style_control.markdown_counts(text)) for pk, text in texts.iterator())
    return pd.DataFrame(rows, columns=["response_id", *style_control.STYLE_ELEMENTS]).set_index(
        "response_id"
    )


def battle_features(
    values: dict[str, np.ndarray],
    system_codes: np.ndarray,
    question_codes: np.ndarray,
    scores: np.ndarray,
) -> tuple[np.ndarray, list[str], list[str]]:
    """Per battle of bradley_terry.battles_from_scores, each style element's
    feature (style_control.length_feature: the difference over the sum, at a
    root mean square of 1), from the per-answer `values` by element; the
    names kept, and those left out because no battle's answers differ in
    them (a weight nothing can estimate)."""
    columns, kept, flat = [], [], []
    for name, per_answer in values.items():
        first, second = style_control.battle_values(
            system_codes, question_codes, scores, per_answer
        )
        feature = style_control.length_feature(first, second)
        if np.any(feature != 0):
            columns.append(feature)
            kept.append(name)
        else:
            flat.append(name)
    matrix = np.column_stack(columns) if columns else np.zeros((0, 0))
    return matrix, kept, flat


def from_scores(
    rs: pd.DataFrame,
    resamples: int,
    seed: int,
    length_controlled: bool = False,
    markdown: pd.DataFrame | None = None,
) -> dict:
    """Each evaluator's ranking from its scores; `length_controlled`: with the
    answers' length difference held fixed (characters, FastChat's feature);
    with `markdown` (style_counts of the responses) too, with FastChat's
    style elements held fixed as well (its STYLE_CONTROL_ELEMENTS_V1)."""
    systems, system_codes = _codes(rs["system"])
    # one question in one mode and version is one venue
    question_codes = (
        rs.groupby(["question_pk", "mode", "dataset_version"], observed=True, sort=False)
        .ngroup()
        .to_numpy()
    )
    _, meeting_codes = _codes(rs["meeting"])
    evaluator_names, evaluator_codes = _codes(rs["evaluator"])
    scores = rs["score"].to_numpy(float)
    out: dict = {}
    for code, evaluator in enumerate(evaluator_names):
        mine = evaluator_codes == code
        if not mine.any():
            continue
        first, second, outcome, cluster = bt.battles_from_scores(
            system_codes[mine], question_codes[mine], meeting_codes[mine], scores[mine]
        )
        if len(first) == 0:
            out[evaluator] = not_computable(
                "no question answered by two or more of the systems it scored"
            )
            continue
        features: np.ndarray | None = None
        names: list[str] | None = None
        flat: list[str] = []
        if length_controlled:
            chars = rs["response_chars"].to_numpy(float)[mine]
            if not np.isfinite(chars).all():
                out[evaluator] = not_computable("an answer without a length")
                continue
            values = {"length": chars}
            if markdown is not None:
                counts = markdown.reindex(rs["response_id"].to_numpy()[mine])
                if counts.isna().any(axis=None):
                    out[evaluator] = not_computable("an answer whose text could not be read")
                    continue
                values |= {e: counts[e].to_numpy(float) for e in style_control.STYLE_ELEMENTS}
            features, names, flat = battle_features(
                values, system_codes[mine], question_codes[mine], scores[mine]
            )
            if not names:
                out[evaluator] = not_computable(
                    "no two answers that met differ in length or style: nothing to hold fixed"
                )
                continue
        found = ranking(
            first,
            second,
            outcome,
            cluster,
            systems,
            resamples,
            seed,
            features=features,
            feature_names=names,
        )
        if flat and found.get("computable", True):
            found["covariates_left_out"] = flat
        out[evaluator] = found
    return out


def from_verdicts(verdicts: pd.DataFrame, rs: pd.DataFrame, resamples: int, seed: int) -> dict:
    from analysis.statistics.pairwise import OUTCOME_POINTS, judge_pair_outcomes, majority_outcomes

    if verdicts.empty:
        return {}
    meeting_of = rs.drop_duplicates("response_id").set_index("response_id")["meeting"].astype(str)
    pairs = pd.concat([judge_pair_outcomes(verdicts), majority_outcomes(verdicts)])
    pairs = pairs[pairs["response_id"].isin(meeting_of.index)]
    out: dict = {}
    for evaluator, group in pairs.groupby("evaluator"):
        names = sorted(set(group["system"].astype(str)) | set(group["baseline"].astype(str)))
        first = np.searchsorted(names, group["system"].astype(str).to_numpy())
        second = np.searchsorted(names, group["baseline"].astype(str).to_numpy())
        outcome = group["outcome"].map(OUTCOME_POINTS).to_numpy(float)
        same = first == second  # a system judged against itself says nothing of the ranking
        _, meetings = np.unique(
            meeting_of.loc[group["response_id"]].to_numpy(), return_inverse=True
        )
        out[str(evaluator)] = ranking(
            first[~same], second[~same], outcome[~same], meetings[~same], names, resamples, seed
        )
    return out


def rankings_part(
    rs: pd.DataFrame,
    verdicts: pd.DataFrame,
    *,
    resamples: int = RANKING_RESAMPLES,
    seed: int = DEFAULT_SEED,
    first: str | None = None,
    judges: list[str] | None = None,
    labelled_questions: int = DEFAULT_LABELLED,
    length_controlled: bool = False,
    markdown: pd.DataFrame | None = None,
) -> dict:
    """The report's `rankings`: {"unit", "from_scores", "from_verdicts",
    "prediction_powered", "prediction_powered_from_verdicts",
    "length_controlled", "style_controlled"}; `first`: the evaluator listed
    first (the reference), the rest by name; `judges`: those ranked by
    prediction-powered rank-sets against the reference, from
    `labelled_questions` of its questions; `markdown`: the responses'
    style_counts when style-controlled rankings are asked for."""

    def reference_first(found: dict) -> dict:
        if first not in found:
            return found
        return {first: found[first]} | {k: v for k, v in found.items() if k != first}

    scored = reference_first(from_scores(rs, resamples, seed))
    controlled = (
        reference_first(from_scores(rs, resamples, seed, True)) if length_controlled else None
    )
    styled = (
        reference_first(from_scores(rs, resamples, seed, True, markdown))
        if markdown is not None
        else None
    )
    return {
        "length_controlled": not_computable(
            "not asked for: tick Length-controlled rankings in the report builder "
            "(length_control=1)"
        )
        if controlled is None
        else controlled,
        "style_controlled": not_computable(
            "not asked for: tick Style-controlled rankings in the report builder (style_control=1)"
        )
        if styled is None
        else styled,
        "unit": UNIT,
        "from_scores": scored,
        "from_verdicts": from_verdicts(verdicts, rs, resamples, seed),
        "prediction_powered": prediction_powered_part(
            rs, first, judges or [], labelled_questions, seed
        ),
        "prediction_powered_from_verdicts": prediction_powered_from_verdicts(
            verdicts, rs, labelled_questions, seed
        ),
    }
