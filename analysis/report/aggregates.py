"""The rater models' labels as evaluators of the report: for a crowd (or any
human evaluator with individual raters), "NAME:offsets" (each response's
score with every rater's offset taken out: the offset model's item quality)
and "NAME:dawid-skene" (Dawid-Skene's label, a rubric level, at its middle:
3-4 as 3.5), made for each report from the selection's own ratings, when
the report fits the rater models (rater_models=1). They are human
evaluators that a report may take as its reference or PPI's labels
(`reference=crowd:offsets`); the default reference is never one, and the
alt-test leaves them out as it leaves out every stored mean of several
raters: they are no person's judgment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

MODELS = {
    "offsets": "the offset model's item quality: each rater's offset taken out",
    "dawid-skene": "Dawid-Skene's label, a rubric level at its middle (3-4 as 3.5)",
}
SEPARATOR = ":"


def aggregate_name(source: str, model: str) -> str:
    return f"{source}{SEPARATOR}{model}"


def aggregate_source(name: str) -> str | None:
    """The evaluator an aggregate's name is made from (None: not an aggregate's)."""
    source, _, model = name.rpartition(SEPARATOR)
    return source if source and model in MODELS else None


def level_middle(level: str) -> float:
    low, _, high = level.partition("-")
    return (float(low) + float(high or low)) / 2


def with_aggregates(
    table: pd.DataFrame, human_kinds: dict[str, str]
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The table with both aggregates' rows for every human evaluator with
    individual raters (`human_kinds`: each human evaluator's kind, which its
    aggregates take), and each aggregate's account (its source, model,
    responses and raters, or why it has none)."""
    # numpy and pandas only here: the scope imports this module, and the console
    # loads no numpy at start-up (tests/test_startup.py)
    import numpy as np
    import pandas as pd

    from analysis.statistics import rater_models
    from analysis.statistics.ratings import individual_ratings

    if table.empty:
        return table, {}
    ratings = individual_ratings(table)
    added: list[pd.DataFrame] = []
    accounts: dict[str, dict] = {}
    for source in sorted(set(ratings) & set(human_kinds)):
        frame = ratings[source]
        labels = rater_models.as_labels(frame)
        names = {model: aggregate_name(source, model) for model in MODELS}
        if labels.empty or labels["worker"].nunique() < 2:
            reason = (
                f"{source}: no response rated by {rater_models.MIN_RATERS_PER_ITEM} of its "
                "raters or more"
            )
            accounts.update(
                {name: {"computable": False, "reason": reason} for name in names.values()}
            )
            continue
        _, corrected = rater_models.rater_offsets(frame)
        _, labelled = rater_models.dawid_skene(labels)
        values = {
            "offsets": corrected,
            "dawid-skene": labelled.map(level_middle).astype(float),
        }
        meta = table[table["evaluator"].astype(str) == source].drop_duplicates("response_id")
        meta = meta.set_index("response_id")
        for model, scores in values.items():
            scores = scores.dropna()
            # the models index their labels by item under their own names ("task")
            rows = meta.loc[scores.index].reset_index(drop=True)
            rows.insert(0, "response_id", scores.index.to_numpy())
            rows["evaluator"] = names[model]
            rows["evaluator_kind"] = human_kinds[source]
            rows["rater"] = ""
            rows["judgment_seed"] = np.nan
            rows["judgment_probability"] = np.nan
            rows["order"] = 0
            rows["score"] = scores.to_numpy(float)
            added.append(rows)
            accounts[names[model]] = {
                "source": source,
                "model": model,
                "description": MODELS[model],
                "responses": int(len(scores)),
                "raters": int(frame["rater"].nunique()),
            }
    if not added:
        return table, accounts
    joined = pd.concat([table, *added], ignore_index=True)
    for column in ("evaluator", "evaluator_kind", "rater"):
        joined[column] = joined[column].astype(str).astype("category")
    return joined, accounts
