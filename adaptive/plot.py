"""The monitor's plot over time: each system's anytime-valid interval (it
changes after every completed task), against the goal, and the money spent
against the budget. Drawn with
matplotlib's object API (no pyplot: no global state between a server's threads)."""

from __future__ import annotations

import io

from adaptive.models import AdaptiveStudy, Snapshot

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def monitor_svg(adaptive: AdaptiveStudy) -> bytes:
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    snapshots = list(Snapshot.objects.filter(adaptive=adaptive).order_by("created_at", "pk"))
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    FigureCanvasSVG(figure)
    left, right = figure.subplots(1, 2, width_ratios=[2, 1])
    # the alt-test goal's snapshots are its looks: no intervals to draw
    names = sorted({e["name"] for s in snapshots for e in s.estimates if e.get("name")})
    start = adaptive.started_at or (snapshots[0].created_at if snapshots else None)

    def minutes(snapshot: Snapshot) -> float:
        return (snapshot.created_at - start).total_seconds() / 60 if start else 0.0

    times = [minutes(s) for s in snapshots]
    for index, name in enumerate(names):
        colour = COLOURS[index % len(COLOURS)]
        rows = [
            (minutes(s), e)
            for s in snapshots
            for e in s.estimates
            if e["name"] == name and e["mean"]
        ]
        if not rows:
            continue
        x = [n for n, _ in rows]
        left.fill_between(
            x,
            [e["lower"] for _, e in rows],
            [e["upper"] for _, e in rows],
            color=colour,
            alpha=0.2,
            step="post",
            linewidth=0,
        )
        left.step(x, [e["mean"] for _, e in rows], where="post", color=colour, label=name)
        if adaptive.goal == AdaptiveStudy.Goal.MEANS and rows:
            mean = rows[-1][1]["mean"]
            width = float(adaptive.half_width or 0)
            left.hlines(
                [mean - width, mean + width],
                x[0],
                x[-1],
                colors=colour,
                linestyles="dotted",
                linewidth=0.8,
            )
    left.set_ylim(1, 10)
    left.set_xlabel("minutes since the start")
    left.set_ylabel("mean human score (1-10)")
    goal = (
        f"goal: every interval within +-{adaptive.half_width:g} (dotted: the goal's width "
        "around the latest mean)"
        if adaptive.goal == AdaptiveStudy.Goal.MEANS
        else f"goal: intervals apart (ranking with p >= {adaptive.probability:g})"
        if adaptive.goal == AdaptiveStudy.Goal.RANKING
        else "the alt-test's looks are listed under Decisions"
    )
    left.set_title(goal, fontsize=9)
    if left.get_legend_handles_labels()[0]:  # a fixed design has no mean before its first rating
        left.legend(fontsize=8, loc="lower right")
    right.step(times, [s.spent_pence / 100 for s in snapshots], where="post", color="#444")
    right.axhline(adaptive.budget_pence / 100, color="#d62728", linestyle="dashed", linewidth=1)
    right.set_xlabel("minutes since the start")
    right.set_ylabel("GBP spent")
    right.set_title(f"budget GBP {adaptive.budget_pence / 100:,.2f} (dashed)", fontsize=9)
    right.set_ylim(0, max(adaptive.budget_pence / 100 * 1.05, 1))
    out = io.BytesIO()
    figure.savefig(out, format="svg")
    return out.getvalue()
