"""A sweep's grid once judged (paper Tables 6/7), and the mean and sample
standard deviation over seeds (Table 8)."""

from __future__ import annotations

import statistics

from django.db.models import Avg

from judging.models import Judgment


def sweep_table(sweep, evaluator: str) -> list[dict]:
    """One row per system of the sweep: the mean score of each seeded run, their
    mean, and their sample standard deviation (None with one seed)."""
    run_means = dict(
        Judgment.objects.filter(response__run__in=sweep.runs.all(), evaluator__name=evaluator)
        .values_list("response__run_id")
        .annotate(mean=Avg("score"))
        .values_list("response__run_id", "mean")
    )
    rows: dict[str, dict] = {}
    for run in sweep.runs.select_related("system").order_by("system__name", "seed"):
        row = rows.setdefault(run.system.name, {"system": run.system.name, "seeds": {}})
        row["seeds"][run.seed] = run_means.get(run.pk)
    for row in rows.values():
        values = [v for v in row["seeds"].values() if v is not None]
        row["mean"] = statistics.fmean(values) if values else None
        row["std"] = statistics.stdev(values) if len(values) > 1 else None
        row["judged_runs"] = len(values)
    return sorted(rows.values(), key=lambda r: (r["mean"] is None, -(r["mean"] or 0)))
