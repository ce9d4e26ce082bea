"""The planner's action: pick the responses humans should rate next, and
create a gold or crowd study of exactly those in one step.

How the responses are picked (Gligoric et al., NAACL 2025, "Can Unconfident
LLM Annotations Be Used for Confident Conclusions?": send to the humans what
the judges are least sure of):

- `disagreement`: the responses on which the selection's judges disagree most
  (the standard deviation of their scores; needs 2 or more judges);
- `uncertainty`: the responses whose repeated samples of the same judge
  differ most (the mean over judges of the standard deviation over seeds;
  needs a judging run with several seeds at temperature > 0);
- `random`: a stratified random sample, the same share of every (system,
  meeting) cell (largest remainders), the unbiased baseline, and the sample
  PPI's system scores need (PPI corrects the judge's bias on a random sample,
  not on the hardest items).

Ties are broken by a seeded shuffle, so that the same selection and seed pick
the same responses. The study is created by annotator.services.save_study,
the one way studies are made: its `responses` hold the chosen ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.db import IntegrityError, transaction

from analysis.selection import ITEM_METHODS as METHODS
from analysis.selection import MAX_ITEMS, Selection, SelectionError

DEFAULT_SEED = 20250611


def spread_by_response(frame: pd.DataFrame, judges: list[str]) -> pd.Series:
    """Per response, the standard deviation (ddof 0) of the judges' scores,
    over responses with 2 or more of them."""
    scores = frame[judges]
    known = scores.notna().sum(axis=1)
    return scores.std(axis=1, ddof=0)[known >= 2]


def sample_spread(table: pd.DataFrame, judges: list[str]) -> pd.Series:
    """Per response, the mean over judges of the standard deviation (ddof 1)
    of the judge's repeated samples (seeds), over responses with a judge
    sampled twice or more."""
    rows = table[table["evaluator"].isin(judges) & (table["rater"] == "")]
    rows = rows[rows["judgment_seed"].notna()]
    samples = (
        rows.groupby(["response_id", "evaluator", "judgment_seed"], observed=True)["score"]
        .mean()
        .reset_index()
    )
    spread = samples.groupby(["response_id", "evaluator"], observed=True)["score"].std(ddof=1)
    return spread.dropna().groupby(level=0).mean()


def stratified_sample(frame: pd.DataFrame, count: int, seed: int) -> list:
    """`count` responses at random, the same share of every (system, meeting)
    cell: each cell gets floor(share), and the largest remainders one more."""
    rng = np.random.default_rng(seed)
    cells = frame.groupby(["system", "meeting"], observed=True, sort=True).groups
    sizes = np.array([len(index) for index in cells.values()], dtype=float)
    exact = sizes * count / sizes.sum()
    take = np.floor(exact).astype(int)
    leftover = count - take.sum()
    order = np.lexsort((rng.random(len(sizes)), -(exact - take)))
    take[order[:leftover]] += 1
    chosen = []
    for index, n in zip(cells.values(), take, strict=True):
        chosen += list(rng.choice(np.asarray(index), size=n, replace=False))
    return sorted(chosen)


def choose_items(
    table: pd.DataFrame,
    frame: pd.DataFrame,
    judges: list[str],
    method: str,
    count: int,
    seed: int = DEFAULT_SEED,
) -> tuple[list, dict]:
    """The response ids to rate and, per id, the score that chose it (the
    spread, or None for a random pick). `frame` is one row per response
    (index: response id) with the judges' scores, system and meeting."""
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
        return stratified_sample(frame, count, seed), {}
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
    shuffled = spread.sample(frac=1.0, random_state=np.random.RandomState(seed % 2**32))
    top = shuffled.sort_values(ascending=False, kind="stable").head(count)
    return sorted(top.index), {rid: float(value) for rid, value in top.items()}


def create_study(
    selection: Selection,
    *,
    method: str,
    count: int,
    kind: str,
    name: str,
    raters_per_task: int,
    actor=None,
    seed: int = DEFAULT_SEED,
):
    """Pick `count` responses of the selection by `method` and create a study
    of kind gold or crowd that rates exactly those (closed, ready to open).
    Raises SelectionError or annotator.services.StudyError saying what is
    wrong; creates nothing then.

    Lock: none of its own. Two creations with the same name serialise on the
    unique index of the study's name (the second INSERT waits for the first
    transaction, then fails and is answered as a name already taken)."""
    from analysis.report import choose_gold
    from analysis.scores import response_scores, score_table
    from analysis.trust import response_frame, roles
    from annotator import services
    from annotator.models import Study
    from generation.models import Response

    name = (name or "").strip()
    if not name:
        raise SelectionError("name: give the new study a name.")
    if kind not in Study.Kind.values:
        raise SelectionError(f"kind {kind!r}: choose from {', '.join(Study.Kind.values)}.")
    if Study.objects.filter(name=name).exists():
        raise services.StudyError(f"A study named '{name}' exists already; choose another name.")
    table = score_table(selection)
    if table.empty:
        raise SelectionError("the selection holds no responses to choose from.")
    rs = response_scores(table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    _, _, _, judges = roles(table, wide, selection, choose_gold(table, selection.gold_evaluator))
    frame = response_frame(rs, wide)
    chosen, _ = choose_items(table, frame, judges, method, count, seed)

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
    study = Study(
        name=name,
        kind=kind,
        dataset_id=dataset_id,
        mode=mode,
        seed=run_seed,
        raters_per_task=raters_per_task,
    )
    systems = {r.run.system_id for r in responses}
    documents = {r.question.document_id for r in responses}

    def choose(saved: Study) -> None:
        saved.systems.set(systems)
        saved.documents.set(documents)
        saved.responses.set(chosen)

    try:
        with transaction.atomic():
            services.save_study(study, [], actor=actor, after_save=choose)
    except IntegrityError:
        if Study.objects.filter(name=name).exists():
            raise services.StudyError(
                f"A study named '{name}' exists already; choose another name."
            ) from None
        raise
    return study
