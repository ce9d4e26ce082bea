"""The planner's action: pick the responses humans should rate next, and
create a gold or crowd study of exactly those in one step.

How the responses are picked (Gligoric et al., NAACL 2025, "Can Unconfident
LLM Annotations Be Used for Confident Conclusions?": send to the humans what
the judges are least sure of), always as a probability sample, so that the
picked responses can serve PPI (analysis.statistics.ppi) with known inclusion
probabilities (Zrnic & Candes, ICML 2024, "Active Statistical Inference"):

- `disagreement`: each response's probability rises with the standard
  deviation of the selection's judges' scores (needs 2 or more judges);
- `uncertainty`: it rises with the spread of the same judge's repeated
  samples (the mean over judges of the standard deviation over seeds; needs
  a judging run with several seeds at temperature > 0);
- `random`: a stratified random sample, the same share of every (system,
  meeting) cell (largest remainders), the unbiased baseline;
- `deferred`: what a deferring judge leaves to humans (analysis.report.
  deferral: the responses whose spread exceeds its threshold for a target
  agreement), the most uncertain first. Not a probability sample: no
  inclusion probability is recorded, and PPI says so rather than weigh them.

For the first two, the probabilities are proportional to the spread mixed
with a uniform floor (FLOOR of the weight is spread evenly, so that no
response's probability is tiny and no inverse weight explodes), scaled to
sum to the count asked for and capped at 1; the responses are then drawn by
systematic sampling with probabilities proportional to size over a seeded
random order (Madow 1949), which picks exactly `count` responses, each with
exactly its probability. Every response of the frame keeps its probability
(annotator.models.InclusionProbability).

The study is created by annotator.actions.settings.check_save_study, the one way studies
are made: its `responses` hold the chosen ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from analysis.planning.spreads import sample_spread, spread_by_response
from analysis.report.selection import ITEM_METHODS as METHODS
from analysis.report.selection import MAX_ITEMS, Selection, SelectionError
from users.projects import can_change

if TYPE_CHECKING:
    from annotator.models import Study
    from users.models import User

DEFAULT_SEED = 20250611
FLOOR = 0.5  # the share of each weight spread uniformly over the frame


@dataclass
class Pick:
    """What the planner picked, and with which probabilities."""

    chosen: list  # response ids, sorted
    probabilities: pd.Series  # per response of the frame (index: response id)
    scores: dict = field(default_factory=dict)  # per chosen response: the spread that weighed it


def stratified_sample(frame: pd.DataFrame, count: int, seed: int) -> tuple[list, pd.Series]:
    """`count` responses at random, the same share of every (system, meeting)
    cell: each cell gets floor(share), and the largest remainders one more.
    Returns the picks and each response's inclusion probability (its cell's
    picks over its cell's size)."""
    rng = np.random.default_rng(seed)
    cells = frame.groupby(["system", "meeting"], observed=True, sort=True).groups
    sizes = np.array([len(index) for index in cells.values()], dtype=float)
    exact = sizes * count / sizes.sum()
    take = np.floor(exact).astype(int)
    leftover = count - take.sum()
    order = np.lexsort((rng.random(len(sizes)), -(exact - take)))
    take[order[:leftover]] += 1
    chosen = []
    probabilities = {}
    for index, n, size in zip(cells.values(), take, sizes, strict=True):
        chosen += list(rng.choice(np.asarray(index), size=n, replace=False))
        for rid in index:
            probabilities[rid] = n / size
    return sorted(chosen), pd.Series(probabilities, dtype=float)


def inclusion_probabilities(weights: pd.Series, count: float, floor: float = FLOOR) -> pd.Series:
    """Probabilities proportional to `weights` (spreads) mixed with a uniform
    floor, summing to `count`, capped at 1 (those capped are certain; the rest
    share what is left, again in proportion)."""
    weights = weights.astype(float).clip(lower=0)
    mean = weights.mean()
    relative = weights / mean if mean > 0 else pd.Series(1.0, index=weights.index)
    mixed = (1 - floor) * relative + floor
    probabilities = pd.Series(0.0, index=weights.index)
    certain = pd.Series(False, index=weights.index)
    for _ in range(len(weights) + 1):
        left = count - int(certain.sum())
        free = ~certain
        probabilities[free] = mixed[free] / mixed[free].sum() * left
        probabilities[certain] = 1.0
        over = free & (probabilities >= 1)
        if not over.any():
            break
        certain |= over
    return probabilities.clip(upper=1.0)


def systematic_pps(probabilities: pd.Series, seed: int) -> list:
    """Systematic sampling with probabilities proportional to size over a
    random order: each response is picked with exactly its probability, and
    exactly sum(probabilities) responses are picked."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(probabilities))
    values = probabilities.to_numpy(float)[order]
    ids = probabilities.index.to_numpy()[order]
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    count = int(round(cumulative[-1]))
    start = rng.random()
    points = start + np.arange(count)
    # the unit whose interval (cum[i], cum[i + 1]] holds each point
    at = np.searchsorted(cumulative, points, side="left") - 1
    at = np.clip(at, 0, len(values) - 1)
    return sorted(ids[np.unique(at)].tolist())


def choose_items(
    table: pd.DataFrame,
    frame: pd.DataFrame,
    judges: list[str],
    method: str,
    count: int,
    seed: int = DEFAULT_SEED,
    deferred: pd.Series | None = None,
) -> Pick:
    """The response ids to rate, each frame response's inclusion probability,
    and per chosen id the spread that weighed it (none for a random pick).
    `frame` is one row per response (index: response id) with the judges'
    scores, system and meeting."""
    if method not in METHODS:
        raise SelectionError(f"method {method!r}: choose from {', '.join(METHODS)}.")
    if not 1 <= count <= MAX_ITEMS:
        raise SelectionError(f"count {count}: choose from 1 to {MAX_ITEMS:,} responses.")
    if frame.empty:
        raise SelectionError("the selection holds no responses to choose from.")
    if count > len(frame):
        raise SelectionError(
            f"count {count}: the selection holds only {len(frame)} responses; choose fewer."
        )
    if method == "random":
        chosen, probabilities = stratified_sample(frame, count, seed)
        return Pick(chosen, probabilities)
    if method == "deferred":
        if deferred is None or deferred.empty:
            raise SelectionError(
                "deferred: the judge defers no response of the selection at this target; "
                "choose a higher agreement (a lower alpha) or another method."
            )
        # the most uncertain first (no signal: infinitely), then by id
        ranked = sorted(deferred.items(), key=lambda item: (-item[1], item[0]))[:count]
        chosen = sorted(rid for rid, _ in ranked)
        return Pick(chosen, pd.Series(dtype=float), {rid: float(s) for rid, s in ranked})
    if method == "disagreement":
        if len(judges) < 2:
            raise SelectionError(
                f"disagreement needs 2 or more judges in the selection (it has "
                f"{len(judges)}: {', '.join(judges) or 'none'}); choose uncertainty or random."
            )
        spread = spread_by_response(frame, judges)
    else:
        spread = sample_spread(table, judges)
        if spread.empty:
            raise SelectionError(
                "uncertainty needs repeated samples of a judge (a judging run with several "
                "seeds at temperature > 0); none in the selection: choose disagreement or random."
            )
    if len(spread) < count:
        raise SelectionError(
            f"count {count}: only {len(spread)} responses have a {method} score; choose fewer."
        )
    probabilities = inclusion_probabilities(spread.sort_index(), count)
    chosen = systematic_pps(probabilities, seed)
    return Pick(chosen, probabilities, {rid: float(spread[rid]) for rid in chosen})


def create_study(
    selection: Selection,
    *,
    method: str,
    count: int,
    kind: str,
    name: str,
    raters_per_task: int,
    actor: User | None = None,
    seed: int = DEFAULT_SEED,
    gold_annotators: tuple[str, ...] = (),
    judge: str = "",
    alpha: float = 0.2,
) -> Study:
    """Pick `count` responses of the selection by `method` and create a study
    of kind gold or crowd that rates exactly those (closed, ready to open).
    Raises SelectionError or annotator.errors.StudyError saying what is
    wrong, PermissionDenied when `actor` may not add studies to the project
    (a viewer); creates nothing then.

    Lock: none of its own. Two creations with the same name serialise on the
    unique index of the study's name (the second INSERT waits for the first
    transaction, then fails and is answered as a name already taken)."""
    from analysis.report.scope import resolve
    from analysis.report.scores import response_scores
    from analysis.report.trust import response_frame
    from annotator.actions.settings import check_save_study
    from annotator.errors import StudyError
    from annotator.models import InclusionProbability, Study
    from generation.models import Response

    name = (name or "").strip()
    if not name:
        raise SelectionError("name: give the new study a name.")
    if kind not in Study.Kind.values:
        raise SelectionError(f"kind {kind!r}: choose from {', '.join(Study.Kind.values)}.")
    if Study.objects.filter(name=name).exists():
        raise StudyError(f"A study named '{name}' exists already; choose another name.")
    experts = gold_annotator_accounts(kind, gold_annotators)
    scope = resolve(selection)
    table = scope.table
    if table.empty:
        raise SelectionError("the selection holds no responses to choose from.")
    rs = response_scores(table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    frame = response_frame(rs, wide)
    deferred = None
    if method == "deferred":
        from analysis.report.deferral import deferred_spreads

        try:
            deferred = deferred_spreads(scope, rs, wide, judge, float(alpha))
        except ValueError as error:
            raise SelectionError(f"deferred: {error}") from None
    pick = choose_items(table, frame, scope.judges, method, count, seed, deferred)
    chosen = pick.chosen

    responses = list(
        Response.objects.filter(pk__in=chosen).select_related("run", "question__document")
    )
    settings = {(r.run.dataset_id, r.run.mode, r.run.seed) for r in responses}
    if len(settings) > 1:
        raise SelectionError(
            f"the chosen responses come from {len(settings)} settings (dataset, mode, seed): "
            "a study rates one; narrow the selection with dataset_version, split and mode."
        )
    dataset_id, mode, run_seed = settings.pop()
    projects = {r.run.project_id for r in responses}
    if len(projects) > 1:
        raise SelectionError(
            "the chosen responses come from several projects: a study belongs to one; "
            "name the project in the selection."
        )
    project_id = projects.pop()
    if actor is not None and not can_change(actor, project_id):
        # a viewer reads the project's reports; he does not add studies to it
        raise PermissionDenied("Only the project's owners and researchers create its studies.")
    study = Study(
        project_id=project_id,
        name=name,
        kind=kind,
        dataset_id=dataset_id,
        mode=mode,
        seed=run_seed,
        raters_per_task=raters_per_task,
        sampling=method,
    )
    systems = {r.run.system_id for r in responses}
    documents = {r.question.document_id for r in responses}

    def choose(saved: Study) -> None:
        saved.gold_annotators.set(experts)
        saved.systems.set(systems)
        saved.documents.set(documents)
        saved.responses.set(chosen)
        picked = set(chosen)
        InclusionProbability.objects.bulk_create(
            InclusionProbability(
                study=saved,
                response_id=int(rid),
                probability=float(probability),
                picked=int(rid) in picked,
            )
            for rid, probability in pick.probabilities.items()
            if probability > 0
        )

    try:
        with transaction.atomic():
            check_save_study(study, [], actor=actor, after_save=choose)
    except IntegrityError:
        if Study.objects.filter(name=name).exists():
            raise StudyError(
                f"A study named '{name}' exists already; choose another name."
            ) from None
        raise
    return study


def gold_annotator_accounts(kind: str, usernames: tuple[str, ...]) -> list[User]:
    """The gold annotators a new gold study is assigned to, by username (they see
    only the studies they are assigned to); a crowd study has none."""
    from users.models import User

    names = sorted({n.strip() for n in usernames if n and n.strip()})
    if not names:
        return []
    if kind != "gold":
        raise SelectionError("gold_annotators: only a gold study has gold annotators.")
    found = list(
        User.objects.filter(username__in=names, role=User.Role.GOLD_ANNOTATOR, is_active=True)
    )
    unknown = sorted(set(names) - {u.username for u in found})
    if unknown:
        raise SelectionError(
            f"gold_annotators: no active gold annotator {', '.join(map(repr, unknown))}."
        )
    return found
