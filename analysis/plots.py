"""The report's figures: what is drawn, as plain data, then drawn.

Every figure is made in two steps. `figures(report)` turns the typed report into
plain descriptions of what will be drawn (`Figure`: panels of points whose
interval ends are already clipped to the 1-10 scale, the N beside every binned
point, which points rest on fewer than FEW responses), so a test reads what a
figure shows without looking at pixels. `draw(figure, fmt)` turns one into PNG
or SVG bytes with matplotlib's object API (no pyplot: no global figure state
shared between a server's threads).

Why clip: a t-interval on 2 responses can span -17 to 33 on a 1-10 scale, and
drawn as it is it sets the axis and flattens every other bin. The interval is
drawn to the end of the scale and ends in a triangle there (not a cap), so a
reader sees that it goes on; the exact ends are in the report's tables and JSON.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.report_types import AgreementReport, NotComputable

SCALE = (1.0, 10.0)
LEVELS = tuple(range(1, 11))
FEW = 5  # a binned point on fewer responses is drawn hollow and lighter
MAX_PLOTTED_JUDGES = 4
# a judge with more distinct scores than this (a metric, a mean of samples) has
# its calibration points sized by N instead of labelled: 175 labels are unreadable
MAX_LABELLED_LEVELS = 12
PAD = 0.45  # room beyond the scale's ends for the markers drawn there
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
FEW_NOTE = f"N < {FEW}: few responses (hollow, lighter)"
CLIPPED_NOTE = "interval clipped at the end of the 1-10 scale (triangle)"
N_NOTE = "the number beside a point is its N"


# --- What is drawn --------------------------------------------------------------------------


@dataclass(frozen=True)
class IntervalPoint:
    """A mean with its 95% interval as drawn: `position` along the category
    axis (a bin, a judge score, a row), `value` on the score scale, the
    interval's ends within the scale (None: no interval) and whether either
    end was cut there."""

    position: float
    value: float
    n: int
    low: float | None = None
    high: float | None = None
    low_clipped: bool = False
    high_clipped: bool = False
    few: bool = False
    label: str = ""  # the N written beside the point ("" when points are sized by N)


def interval_point(
    position: float,
    value: float,
    ci: Sequence[float | None] | None,
    n: int,
    *,
    labelled: bool = True,
    scale: tuple[float, float] = SCALE,
) -> IntervalPoint:
    """The point as drawn: the interval cut to the scale, N < FEW marked."""
    low = high = None
    low_clipped = high_clipped = False
    if ci is not None and ci[0] is not None and ci[1] is not None:
        low_clipped, high_clipped = ci[0] < scale[0], ci[1] > scale[1]
        low, high = max(float(ci[0]), scale[0]), min(float(ci[1]), scale[1])
    return IntervalPoint(
        position=float(position),
        value=min(max(float(value), scale[0]), scale[1]),
        n=int(n),
        low=low,
        high=high,
        low_clipped=low_clipped,
        high_clipped=high_clipped,
        few=n < FEW,
        label=str(n) if labelled else "",
    )


@dataclass(frozen=True)
class Series:
    label: str
    color: str
    points: tuple[IntervalPoint, ...]
    steps: tuple[tuple[float, float], ...] = ()  # calibration's isotonic map: a staircase
    sized: bool = False  # marker area grows with N (too many points to label)


@dataclass(frozen=True)
class IntervalPanel:
    """Means with intervals along a category axis; the value axis is the
    score scale. `horizontal`: values along x, rows along y (a forest plot)."""

    title: str
    category_label: str
    value_label: str
    series: tuple[Series, ...]
    ticks: tuple[float, ...] = LEVELS
    tick_labels: tuple[str, ...] = ()
    diagonal: bool = False
    horizontal: bool = False
    marks: tuple[tuple[float, float], ...] = ()  # (row, value): the all-gold mean

    @property
    def points(self) -> list[IntervalPoint]:
        return [p for s in self.series for p in s.points]


@dataclass(frozen=True)
class Bar:
    value: float | None  # None: no score (nothing drawn, never a bar of 0)
    n: int | None
    few: bool
    label: str


def bar(value: float | None, n: int | None, *, labelled: bool) -> Bar:
    few = n is not None and n < FEW
    return Bar(value, n, few, str(n) if labelled and n is not None and value is not None else "")


@dataclass(frozen=True)
class BarSeries:
    label: str
    color: str
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class BarPanel:
    """Mean scores as bars rising from the bottom of the scale (1)."""

    title: str
    value_label: str
    categories: tuple[str, ...]
    series: tuple[BarSeries, ...]


@dataclass(frozen=True)
class HeatmapPanel:
    title: str
    labels: tuple[str, ...]
    matrix: tuple[tuple[float | None, ...], ...]


@dataclass(frozen=True)
class HistogramPanel:
    title: str
    bins: tuple[str, ...]
    counts: tuple[int, ...]
    color: str
    category_label: str
    value_label: str = "responses"


@dataclass(frozen=True)
class ScatterPanel:
    """Distinct (x, y) pairs with how many items share each (marker area)."""

    title: str
    x_label: str
    y_label: str
    points: tuple[tuple[float, float, int], ...]
    x_ticks: tuple[float, ...]
    y_ticks: tuple[float, ...]
    agreement_line: tuple[tuple[float, float], tuple[float, float]] | None = None


Panel = IntervalPanel | BarPanel | HeatmapPanel | HistogramPanel | ScatterPanel


@dataclass(frozen=True)
class Figure:
    name: str
    alt: str
    caption: str
    panels: tuple[Panel, ...]
    columns: int = 1
    panel_size: tuple[float, float] = (6.0, 3.2)
    notes: tuple[str, ...] = field(default=())  # legend entries: FEW_NOTE, CLIPPED_NOTE


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


# --- Drawing --------------------------------------------------------------------------------


def draw(figure: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: choose from {', '.join(FORMATS)}")
    import matplotlib

    canvas = laid_out(figure)
    buffer = io.BytesIO()
    # SVG: text stays text (smaller, searchable); ids from a fixed salt (the same
    # figure gives the same bytes)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "concord"}):
        canvas.savefig(
            buffer,
            format=fmt,
            dpi=110,
            metadata={"Software": None} if fmt == "png" else {"Date": None, "Creator": None},
        )
    return buffer.getvalue()


def laid_out(figure: Figure):
    """The matplotlib figure, drawn and laid out (tests read its axes)."""
    from matplotlib.figure import Figure as Canvas

    panels = figure.panels
    columns = max(1, min(figure.columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    width, height = figure.panel_size
    canvas = Canvas(figsize=(width * columns, height * rows))
    axes = canvas.subplots(rows, columns, squeeze=False)
    handles: dict[str, object] = {}
    for axis, panel in zip(axes.flat, panels, strict=False):
        handles.update(DRAWERS[type(panel)](axis, panel))
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    _label_outer(list(axes.flat), panels, columns)
    if not _needs_legend(figure):
        handles = {}
    handles.update(_note_handles(figure.notes))
    # the legend below the panels, in a band of its own (tight_layout, not the
    # constrained layout: a third of the time on a grid of panels)
    columns_in_legend = min(4, len(handles)) or 1
    band = 0.24 * math.ceil(len(handles) / columns_in_legend) + 0.08 if handles else 0.0
    canvas.set_size_inches(width * columns, height * rows + band)
    if all(_fixed_margins(panel) for panel in panels):
        _grid(canvas, panels, rows, columns, band)
    else:
        canvas.tight_layout(rect=(0, band / (height * rows + band), 1, 1), pad=0.6)
    if handles:
        canvas.legend(
            handles=list(handles.values()),
            labels=list(handles),
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncols=columns_in_legend,
            fontsize=7,
            frameon=False,
        )
    return canvas


# Margins of a panel whose labels are short and horizontal (numbers 1-10 on
# both axes), in inches: computed, not measured, as tight_layout measures every
# text of the figure (half the drawing time of a grid of small panels).
LEFT, RIGHT, BOTTOM, TITLE_LINE = 0.52, 0.15, 0.42, 0.16


def _fixed_margins(panel: Panel) -> bool:
    return isinstance(panel, HistogramPanel | ScatterPanel) or (
        isinstance(panel, IntervalPanel) and not panel.horizontal
    )


def _grid(canvas, panels: Sequence[Panel], rows: int, columns: int, band: float) -> None:
    """Each panel in its cell, with room for its tick labels, axis labels and
    title (one or two lines), the legend's band below them all."""
    width, height = canvas.get_size_inches()
    lines = max(p.title.count("\n") + 1 if p.title else 0 for p in panels)
    top = TITLE_LINE * lines + 0.08
    axes_width = width / columns - LEFT - RIGHT
    axes_height = (height - band) / rows - top - BOTTOM
    canvas.subplots_adjust(
        left=LEFT / width,
        right=1 - RIGHT / width,
        bottom=(band + BOTTOM) / height,
        top=1 - top / height,
        wspace=(LEFT + RIGHT) / axes_width,
        hspace=(top + BOTTOM) / axes_height,
    )


def _label_outer(axes: list, panels: Sequence[Panel], columns: int) -> None:
    """In a grid of score panels (same 1-10 axes), the scale is labelled on the
    left column and the bottom panel of each column only: less to read, and
    fewer texts to lay out (text is most of matplotlib's time). Histograms keep
    their counts' ticks (each its own scale), not the repeated axis title."""
    if len(panels) < 2:
        return
    for index, (axis, panel) in enumerate(zip(axes, panels, strict=False)):
        below = index + columns < len(panels)
        if isinstance(panel, IntervalPanel) and not panel.horizontal:
            if index % columns:
                axis.set_ylabel("")
                axis.tick_params(labelleft=False)
            if below:
                axis.set_xlabel("")
                axis.tick_params(labelbottom=False)
        elif isinstance(panel, HistogramPanel) and index % columns:
            axis.set_ylabel("")


def _needs_legend(figure: Figure) -> bool:
    """Series are named in a legend where a panel has more than one, or bars."""
    return any(
        (isinstance(p, IntervalPanel) and len(p.series) > 1) or isinstance(p, BarPanel)
        for p in figure.panels
    )


def _note_handles(notes: Sequence[str]) -> dict[str, object]:
    from matplotlib.lines import Line2D

    grey = "#555555"
    out: dict[str, object] = {}
    if FEW_NOTE in notes:
        out[FEW_NOTE] = Line2D(
            [], [], marker="o", color=grey, markerfacecolor="white", alpha=0.5, linestyle=""
        )
    if CLIPPED_NOTE in notes:
        out[CLIPPED_NOTE] = Line2D([], [], marker="^", color=grey, linestyle="")
    return out


def _value_limits() -> tuple[float, float]:
    return SCALE[0] - PAD, SCALE[1] + PAD


def _draw_intervals(axis, panel: IntervalPanel) -> dict[str, object]:
    """One artist per kind of mark and series (lines, caps, clipped ends, full
    and hollow points), not per point: matplotlib's time grows with artists."""
    from matplotlib.lines import Line2D

    def xy(pairs: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
        """(position, value) pairs as the axes' x and y lists."""
        positions = [a for a, _ in pairs]
        values = [b for _, b in pairs]
        return (values, positions) if panel.horizontal else (positions, values)

    from matplotlib.transforms import offset_copy

    ends = ("<", ">") if panel.horizontal else ("v", "^")
    # an N label sits a few points beside its point (above it in a forest plot)
    beside = offset_copy(
        axis.transData,
        fig=axis.figure,
        x=0 if panel.horizontal else 4,
        y=5 if panel.horizontal else 0,
        units="points",
    )
    cap = "|" if panel.horizontal else "_"
    handles: dict[str, object] = {}
    count = len(panel.series)
    for index, series in enumerate(panel.series):
        # several series in one panel: shifted a little so that their intervals
        # do not hide each other (the forest plot places its rows itself)
        dodge = 0.0 if panel.horizontal else (index - (count - 1) / 2) * 0.14
        largest = max((p.n for p in series.points), default=1)
        for few in (False, True):
            points = [p for p in series.points if p.few is few]
            if not points:
                continue
            alpha = 0.45 if few else 1.0
            style = {"color": series.color, "alpha": alpha, "linestyle": ""}
            # (position, low, high, low cut, high cut) of the points with an interval
            spans = [
                (p.position + dodge, p.low, p.high, p.low_clipped, p.high_clipped)
                for p in points
                if p.low is not None and p.high is not None
            ]
            if spans:
                (axis.hlines if panel.horizontal else axis.vlines)(
                    [at for at, *_ in spans],
                    [low for _, low, *_ in spans],
                    [high for _, _, high, *_ in spans],
                    color=series.color,
                    alpha=alpha,
                    linewidth=1.1,
                )
                capped = [(at, low) for at, low, _, cut, _ in spans if not cut]
                capped += [(at, high) for at, _, high, _, cut in spans if not cut]
                if capped:
                    axis.plot(*xy(capped), marker=cap, markersize=6, **style)
                low_cut = [(at, low) for at, low, _, cut, _ in spans if cut]
                high_cut = [(at, high) for at, _, high, _, cut in spans if cut]
                for marker, cut_ends in ((ends[0], low_cut), (ends[1], high_cut)):
                    if cut_ends:
                        axis.plot(*xy(cut_ends), marker=marker, markersize=5, **style)
            centres = [(p.position + dodge, p.value) for p in points]
            face = "white" if few else series.color
            if series.sized:
                xs, ys = xy(centres)
                axis.scatter(
                    xs,
                    ys,
                    s=[(2.5 + 7 * math.sqrt(p.n / largest)) ** 2 for p in points],
                    facecolors=face,
                    edgecolors=series.color,
                    alpha=alpha,
                )
            else:
                axis.plot(*xy(centres), marker="o", markersize=5, markerfacecolor=face, **style)
            for p, (at, value) in zip(points, centres, strict=True):
                if p.label:
                    axis.text(
                        *((value, at) if panel.horizontal else (at, value)),
                        p.label,
                        transform=beside,
                        fontsize=6,
                        color="#333333",
                        va="bottom" if panel.horizontal else "center",
                        ha="center" if panel.horizontal else "left",
                    )
        if series.steps:
            axis.step(
                [x for x, _ in series.steps],
                [y for _, y in series.steps],
                where="mid",
                color=series.color,
                linewidth=1,
            )
        handles[series.label] = Line2D([], [], marker="o", color=series.color, linestyle="")
    if panel.marks:
        axis.plot(*xy(list(panel.marks)), marker="|", color="black", markersize=14, linestyle="")
    if panel.diagonal:
        axis.plot([1, 10], [1, 10], color="grey", linewidth=0.5)
    value_axis, category_axis = (
        (axis.xaxis, axis.yaxis) if panel.horizontal else (axis.yaxis, axis.xaxis)
    )
    limits = _value_limits()
    (axis.set_xlim if panel.horizontal else axis.set_ylim)(*limits)
    value_axis.set_ticks(LEVELS)
    category_axis.set_ticks(panel.ticks, panel.tick_labels or [f"{t:g}" for t in panel.ticks])
    if panel.horizontal:
        axis.set_ylim(-0.6, len(panel.ticks) - 0.4)
    else:
        axis.set_xlim(0.5, 10.5)
    (axis.set_xlabel if panel.horizontal else axis.set_ylabel)(panel.value_label, fontsize=8)
    (axis.set_ylabel if panel.horizontal else axis.set_xlabel)(panel.category_label, fontsize=8)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=7)
    return handles


def _draw_bars(axis, panel: BarPanel) -> dict[str, object]:
    from matplotlib.patches import Patch

    handles: dict[str, object] = {}
    count = max(1, len(panel.series))
    width = 0.8 / count
    for index, series in enumerate(panel.series):
        for position, b in enumerate(series.bars):
            if b.value is None:
                continue
            x = position - 0.4 + width * (index + 0.5)
            axis.bar(
                x,
                b.value - SCALE[0],
                width,
                bottom=SCALE[0],
                color=series.color,
                alpha=0.35 if b.few else 1.0,
                hatch="///" if b.few else None,
                edgecolor=series.color,
                linewidth=0.5,
            )
            if b.label:
                axis.text(x, b.value, b.label, ha="center", va="bottom", fontsize=5.5)
        handles[series.label] = Patch(color=series.color)
    axis.set_xticks(range(len(panel.categories)), panel.categories, rotation=20, ha="right")
    axis.set_ylim(SCALE[0], SCALE[1] + PAD)
    axis.set_yticks(LEVELS)
    axis.set_ylabel(panel.value_label, fontsize=8)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=7)
    return handles


def _draw_heatmap(axis, panel: HeatmapPanel) -> dict[str, object]:
    import numpy as np

    matrix = np.array(
        [[np.nan if v is None else v for v in row] for row in panel.matrix], dtype=float
    )
    image = axis.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    axis.set_xticks(range(len(panel.labels)), panel.labels, rotation=30, ha="right", fontsize=7)
    axis.set_yticks(range(len(panel.labels)), panel.labels, fontsize=7)
    for i, row in enumerate(panel.matrix):
        for j, value in enumerate(row):
            if value is not None:
                axis.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7)
    axis.figure.colorbar(image, ax=axis, shrink=0.8)
    return {}


def _draw_histogram(axis, panel: HistogramPanel) -> dict[str, object]:
    axis.bar(range(len(panel.bins)), panel.counts, 0.8, color=panel.color)
    axis.set_xticks(range(len(panel.bins)), panel.bins)
    axis.set_xlabel(panel.category_label, fontsize=7)
    axis.set_ylabel(panel.value_label, fontsize=7)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=6)
    return {}


def _draw_scatter(axis, panel: ScatterPanel) -> dict[str, object]:
    if panel.agreement_line:
        (x0, y0), (x1, y1) = panel.agreement_line
        axis.plot([x0, x1], [y0, y1], color="grey", linewidth=0.5)
    if panel.points:
        xs, ys, ns = zip(*panel.points, strict=True)
        axis.scatter(xs, ys, s=[8 + 10 * n for n in ns], color=PALETTE[0], alpha=0.6, linewidths=0)
        for x, y, n in panel.points:
            if n > 1:
                axis.text(x, y, str(n), ha="center", va="center", fontsize=5)
    axis.set_xlim(panel.x_ticks[0] - 0.5, panel.x_ticks[-1] + 0.5)
    axis.set_ylim(panel.y_ticks[0] - 0.5, panel.y_ticks[-1] + 0.5)
    axis.set_xticks(panel.x_ticks[::3] if len(panel.x_ticks) > 7 else panel.x_ticks)
    axis.set_yticks(panel.y_ticks[::3] if len(panel.y_ticks) > 7 else panel.y_ticks)
    axis.set_xlabel(panel.x_label, fontsize=7)
    axis.set_ylabel(panel.y_label, fontsize=7)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=6)
    return {}


DRAWERS: dict[type, Callable[[Any, Any], dict[str, object]]] = {
    IntervalPanel: _draw_intervals,
    BarPanel: _draw_bars,
    HeatmapPanel: _draw_heatmap,
    HistogramPanel: _draw_histogram,
    ScatterPanel: _draw_scatter,
}
