"""The report's figures, as plain descriptions of what is drawn.

`figures(report)` turns the typed report into `Figure`s (analysis.figures.figure_types:
panels of points whose interval ends are already clipped to the 1-10 scale,
the N beside every binned point, which points rest on fewer than FEW
responses); `rater_figure` describes one participant of a study against gold
for the study monitor. `analysis.figures.drawing.draw` turns a figure into PNG or SVG.
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.figures.figure_types import (
    CLIPPED_NOTE,
    FEW_NOTE,
    LEVELS,
    MAX_LABELLED_LEVELS,
    MAX_PLOTTED_JUDGES,
    N_NOTE,
    PALETTE,
    BarPanel,
    BarSeries,
    Figure,
    HeatmapPanel,
    HistogramPanel,
    IntervalPanel,
    Panel,
    ScatterPanel,
    Series,
    bar,
    interval_point,
)
from analysis.report.report_types import AgreementReport, NotComputable


def _notes(panels: Sequence[Panel]) -> tuple[str, ...]:
    """The legend entries the panels need: only for what is actually drawn."""
    points = [p for panel in panels if isinstance(panel, IntervalPanel) for p in panel.points]
    bars = [
        b for panel in panels if isinstance(panel, BarPanel) for s in panel.series for b in s.bars
    ]
    notes = []
    if any(p.few for p in points) or any(b.few and b.value is not None for b in bars):
        notes.append(FEW_NOTE)
    if any(p.low_clipped or p.high_clipped for p in points):
        notes.append(CLIPPED_NOTE)
    return tuple(notes)


def _figure(name: str, alt: str, caption: str, panels: Sequence[Panel], **layout) -> Figure:
    return Figure(name, alt, caption, tuple(panels), notes=_notes(panels), **layout)


def colours(names: Sequence[str]) -> dict[str, str]:
    """One colour per name, the same in every figure of a report."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


# --- The report's figures -------------------------------------------------------------------


def figures(report: AgreementReport) -> dict[str, Figure]:
    """Every figure the report has data for, by name, in page order."""
    if not report.evaluators:
        return {}
    out: dict[str, Figure] = {}
    for build in (
        means_figure,
        distributions_figure,
        correlations_figure,
        gold_bins_figure,
        breakdown_figure,
        calibration_figure,
        ppi_figure,
    ):
        figure = build(report)
        if figure is not None:
            out[figure.name] = figure
    return out


def means_figure(report: AgreementReport) -> Figure | None:
    means = report.mean_scores
    if isinstance(means, NotComputable):
        return None
    counts = report.mean_scores_n or {}
    colour = colours(report.evaluators)
    series = tuple(
        BarSeries(
            evaluator,
            colour[evaluator],
            tuple(
                bar(
                    means.get(s, {}).get(evaluator),
                    counts.get(s, {}).get(evaluator),
                    labelled=False,
                )
                for s in report.systems
            ),
        )
        for evaluator in report.evaluators
    )
    panel = BarPanel("", "mean score (1-10)", tuple(report.systems), series)
    width = max(6.0, 0.3 * len(report.systems) * len(report.evaluators) + 2)
    return _figure(
        "means",
        "mean scores",
        "Mean score per system and evaluator on the 1-10 scale (bars rise from 1).",
        [panel],
        panel_size=(min(width, 14.0), 3.4),
    )


def distributions_figure(report: AgreementReport) -> Figure | None:
    parts = report.score_distributions
    if isinstance(parts, NotComputable) or not parts.evaluators:
        return None
    colour = colours(report.evaluators)
    panels = []
    for evaluator, part in parts.evaluators.items():
        title = f"{evaluator} (N={part.n})"
        if part.continuous:
            title += f"\n{part.distinct} distinct scores, rounded"
        panels.append(
            HistogramPanel(
                title,
                tuple(part.counts),
                tuple(part.counts.values()),
                colour.get(evaluator, PALETTE[0]),
                "score bin",
            )
        )
    return _figure(
        "distributions",
        "score distributions",
        "Responses per score bin, per evaluator. Continuous scores (a mean of raters or "
        "seeds, a metric) are rounded to the nearest bin: " + parts.binning + ".",
        panels,
        columns=min(3, len(panels)),
        panel_size=(3.0, 2.3),
    )


def correlations_figure(report: AgreementReport) -> Figure | None:
    if isinstance(report.correlations, NotComputable):
        return None
    pearson = report.correlations.pearson
    evaluators = tuple(report.evaluators)
    matrix = tuple(tuple(pearson.get(a, {}).get(b) for b in evaluators) for a in evaluators)
    return _figure(
        "correlations",
        "correlations",
        "Pearson correlation between evaluators, on the responses both scored.",
        [HeatmapPanel("", evaluators, matrix)],
        panel_size=(1.1 * len(evaluators) + 2, 1.0 * len(evaluators) + 1),
    )


def gold_bins_figure(report: AgreementReport) -> Figure | None:
    bins = report.gold_bins
    if isinstance(bins, NotComputable) or not bins.bins:
        return None
    colour = colours(report.evaluators)
    panels = []
    for evaluator in report.evaluators:
        if evaluator == bins.gold:
            continue
        points = []
        for level in LEVELS:
            entry = bins.bins[str(level)].evaluators.get(evaluator)
            if entry is not None and not isinstance(entry, NotComputable):
                points.append(interval_point(level, entry.mean, entry.ci95, entry.n))
        if points:
            panels.append(
                IntervalPanel(
                    evaluator,
                    f"{bins.gold} score bin",
                    "mean score, 95% CI",
                    (Series(evaluator, colour[evaluator], tuple(points)),),
                    diagonal=True,
                )
            )
    if not panels:
        return None
    return _figure(
        "gold_bins",
        "gold bins",
        f"Each evaluator's mean score on the responses of each {bins.gold} score bin, with "
        f"its 95% t-interval; {N_NOTE}. The grey line is agreement with {bins.gold}.",
        panels,
        columns=min(3, len(panels)),
        panel_size=(3.4, 2.9),
    )


def calibration_figure(report: AgreementReport) -> Figure | None:
    diagnostics = report.diagnostics
    calibration = diagnostics.calibration if not isinstance(diagnostics, NotComputable) else None
    if calibration is None or isinstance(calibration, NotComputable):
        return None
    computed = {j: c for j, c in calibration.items() if not isinstance(c, NotComputable)}
    if not computed:
        return None
    colour = colours(report.evaluators)
    panels = []
    for judge in list(computed)[:MAX_PLOTTED_JUDGES]:
        levels = computed[judge].map
        sized = len(levels) > MAX_LABELLED_LEVELS
        points = tuple(
            interval_point(lv.judge_score, lv.mean_gold, lv.ci95, lv.n, labelled=not sized)
            for lv in levels
        )
        title = judge
        if sized:
            counts = [lv.n for lv in levels]
            title += f"\n{len(levels)} distinct scores, N {min(counts)}-{max(counts)}: area ~ N"
        panels.append(
            IntervalPanel(
                title,
                "judge score (steps: the isotonic map)",
                "mean gold score, 95% CI",
                (
                    Series(
                        judge,
                        colour.get(judge, PALETTE[0]),
                        points,
                        steps=tuple((lv.judge_score, lv.calibrated) for lv in levels),
                        sized=sized,
                    ),
                ),
                diagonal=True,
            )
        )
    return _figure(
        "calibration",
        "reliability plot",
        "Per judge score: the mean gold score of the responses that got it, with its 95% "
        f"t-interval, and the isotonic map (steps); {N_NOTE}.",
        panels,
        columns=min(2, len(panels)),
        panel_size=(3.6, 3.0),
    )


def ppi_figure(report: AgreementReport) -> Figure | None:
    ppi = report.ppi
    if isinstance(ppi, NotComputable) or not ppi.judges:
        return None
    panels = []
    for judge in list(ppi.judges)[:MAX_PLOTTED_JUDGES]:
        systems = [
            (s, e) for s, e in ppi.judges[judge].systems.items() if not isinstance(e, NotComputable)
        ]
        gold, combined, marks = [], [], []
        for row, (_, e) in enumerate(systems):
            gold.append(interval_point(row + 0.15, e.gold_mean, e.gold_ci95, e.n_labelled))
            combined.append(interval_point(row - 0.15, e.ppi_mean, e.ppi_ci95, e.n_labelled))
            if e.all_gold_mean is not None:
                marks.append((float(row), e.all_gold_mean))
        if not systems:
            continue
        panels.append(
            IntervalPanel(
                judge,
                "",
                "mean gold score, 95% CI",
                (
                    Series("gold only", "#8a6100", tuple(gold)),
                    Series("PPI++", "#1f5fa8", tuple(combined)),
                ),
                ticks=tuple(float(row) for row in range(len(systems))),
                tick_labels=tuple(f"{s} (n={e.n_labelled})" for s, e in systems),
                horizontal=True,
                marks=tuple(marks),
            )
        )
    if not panels:
        return None
    return _figure(
        "ppi",
        "PPI system scores",
        "Per system: the mean gold score from the n gold-rated responses alone and with the "
        f"judge's scores (PPI++), 95% CIs; {N_NOTE} (gold-rated responses); a black bar is the "
        "mean over every gold score.",
        panels,
        columns=min(2, len(panels)),
        panel_size=(4.2, 0.5 * max(len(p.ticks) for p in panels) + 1.3),
    )


def breakdown_figure(report: AgreementReport) -> Figure | None:
    breakdown = report.breakdown
    if isinstance(breakdown, NotComputable) or not breakdown.question_type:
        return None
    bins = report.gold_bins
    evaluator = bins.gold if not isinstance(bins, NotComputable) else report.evaluators[0]
    colour = colours(report.systems)
    panels = []
    for column, by_evaluator in breakdown.columns():
        table = by_evaluator.get(evaluator, {})
        categories = tuple(sorted({c for values in table.values() for c in values}))
        series = tuple(
            BarSeries(
                system,
                colour.get(system, PALETTE[0]),
                tuple(
                    bar(values[c].mean, values[c].n, labelled=True)
                    if c in values
                    else bar(None, None, labelled=True)
                    for c in categories
                ),
            )
            for system, values in sorted(table.items())
        )
        panels.append(
            BarPanel(f"{column.replace('_', ' ')} ({evaluator})", "mean score", categories, series)
        )
    return _figure(
        "breakdown",
        "breakdown",
        f"Mean {evaluator} score per question type and answer position, per system; the "
        "number on a bar is its N.",
        panels,
        columns=2,
        panel_size=(4.6, 3.0),
    )


# --- A rater against gold (the study monitor's quality control) ----------------------------


def rater_figure(
    rater: str,
    pairs: Sequence[tuple[float, float]],
    scores: Sequence[float],
    scale_max: int,
    correlation: float | None,
    note: str,
) -> Figure:
    """One participant: their ratings against the gold scores of the same
    responses (each distinct pair once, its area growing with how many items
    share it), and how their ratings spread over the study's scale."""
    counted: dict[tuple[float, float], int] = {}
    for gold, mine in pairs:
        counted[(float(gold), float(mine))] = counted.get((float(gold), float(mine)), 0) + 1
    scale = tuple(float(level) for level in range(1, scale_max + 1))
    title = f"r = {correlation:.2f} with gold" if correlation is not None else note
    scatter = ScatterPanel(
        title,
        "gold score",
        "rating",
        tuple((x, y, n) for (x, y), n in sorted(counted.items())),
        tuple(float(level) for level in LEVELS),
        scale,
        agreement_line=((1.0, 1.0), (10.0, float(scale_max))),
    )
    counts = [0] * scale_max
    for score in scores:
        if 1 <= score <= scale_max:
            counts[int(score) - 1] += 1
    histogram = HistogramPanel(
        f"{len(scores)} rating{'s' if len(scores) != 1 else ''}",
        tuple(str(level) for level in range(1, scale_max + 1)),
        tuple(counts),
        PALETTE[0],
        "rating",
        "items",
    )
    return Figure(
        f"rater-{rater}",
        f"{rater}: ratings against gold and their distribution",
        "",
        (scatter, histogram),
        columns=2,
        panel_size=(1.9, 1.7),
    )
