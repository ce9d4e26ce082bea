"""Drawing a figure (analysis.figures.figure_types) as PNG or SVG bytes, with
matplotlib's object API (no pyplot: no global figure state shared between a
server's threads)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from analysis.figures.figure_types import (
    CLIPPED_NOTE,
    FEW_NOTE,
    LEVELS,
    PAD,
    PALETTE,
    SCALE,
    BarPanel,
    Figure,
    HeatmapPanel,
    HistogramPanel,
    IntervalPanel,
    Panel,
    ScatterPanel,
)

if TYPE_CHECKING:  # matplotlib loads with the first figure drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as Canvas

FORMATS = {"png": "image/png", "svg": "image/svg+xml"}


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


def laid_out(figure: Figure) -> Canvas:
    """The matplotlib figure, drawn and laid out (tests read its axes)."""
    from matplotlib.figure import Figure as Canvas

    panels = figure.panels
    columns = max(1, min(figure.columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    width, height = figure.panel_size
    canvas = Canvas(figsize=(width * columns, height * rows))
    axes = canvas.subplots(rows, columns, squeeze=False)
    handles: dict[str, Artist] = {}
    for axis, panel in zip(axes.flat, panels, strict=False):
        handles.update(_draw_panel(axis, panel))
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


def _grid(canvas: Canvas, panels: Sequence[Panel], rows: int, columns: int, band: float) -> None:
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


def _label_outer(axes: list[Axes], panels: Sequence[Panel], columns: int) -> None:
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


def _note_handles(notes: Sequence[str]) -> dict[str, Artist]:
    from matplotlib.lines import Line2D

    grey = "#555555"
    out: dict[str, Artist] = {}
    if FEW_NOTE in notes:
        out[FEW_NOTE] = Line2D(
            [], [], marker="o", color=grey, markerfacecolor="white", alpha=0.5, linestyle=""
        )
    if CLIPPED_NOTE in notes:
        out[CLIPPED_NOTE] = Line2D([], [], marker="^", color=grey, linestyle="")
    return out


def _value_limits() -> tuple[float, float]:
    return SCALE[0] - PAD, SCALE[1] + PAD


def _draw_panel(axis: Axes, panel: Panel) -> dict[str, Artist]:
    """The panel drawn on its axes; the legend handles of its series."""
    if isinstance(panel, IntervalPanel):
        return _draw_intervals(axis, panel)
    if isinstance(panel, BarPanel):
        return _draw_bars(axis, panel)
    if isinstance(panel, HeatmapPanel):
        return _draw_heatmap(axis, panel)
    if isinstance(panel, HistogramPanel):
        return _draw_histogram(axis, panel)
    return _draw_scatter(axis, panel)


def _draw_intervals(axis: Axes, panel: IntervalPanel) -> dict[str, Artist]:
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
        fig=axis.get_figure(root=True),
        x=0 if panel.horizontal else 4,
        y=5 if panel.horizontal else 0,
        units="points",
    )
    cap = "|" if panel.horizontal else "_"
    handles: dict[str, Artist] = {}
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
                    axis.plot(
                        *xy(capped),
                        marker=cap,
                        markersize=6,
                        color=series.color,
                        alpha=alpha,
                        linestyle="",
                    )
                low_cut = [(at, low) for at, low, _, cut, _ in spans if cut]
                high_cut = [(at, high) for at, _, high, _, cut in spans if cut]
                for marker, cut_ends in ((ends[0], low_cut), (ends[1], high_cut)):
                    if cut_ends:
                        axis.plot(
                            *xy(cut_ends),
                            marker=marker,
                            markersize=5,
                            color=series.color,
                            alpha=alpha,
                            linestyle="",
                        )
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
                axis.plot(
                    *xy(centres),
                    marker="o",
                    markersize=5,
                    markerfacecolor=face,
                    color=series.color,
                    alpha=alpha,
                    linestyle="",
                )
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
    limits = panel.value_limits or _value_limits()
    (axis.set_xlim if panel.horizontal else axis.set_ylim)(*limits)
    value_axis.set_ticks(panel.value_ticks or LEVELS)
    category_axis.set_ticks(panel.ticks, panel.tick_labels or [f"{t:g}" for t in panel.ticks])
    if panel.horizontal:
        axis.set_ylim(-0.6, len(panel.ticks) - 0.4)
    else:
        axis.set_xlim(*(panel.category_limits or (0.5, 10.5)))
    (axis.set_xlabel if panel.horizontal else axis.set_ylabel)(panel.value_label, fontsize=8)
    (axis.set_ylabel if panel.horizontal else axis.set_xlabel)(panel.category_label, fontsize=8)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=7)
    return handles


def _draw_bars(axis: Axes, panel: BarPanel) -> dict[str, Artist]:
    from matplotlib.patches import Patch

    handles: dict[str, Artist] = {}
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


def _draw_heatmap(axis: Axes, panel: HeatmapPanel) -> dict[str, Artist]:
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


def _draw_histogram(axis: Axes, panel: HistogramPanel) -> dict[str, Artist]:
    axis.bar(range(len(panel.bins)), panel.counts, 0.8, color=panel.color)
    axis.set_xticks(range(len(panel.bins)), panel.bins)
    axis.set_xlabel(panel.category_label, fontsize=7)
    axis.set_ylabel(panel.value_label, fontsize=7)
    axis.set_title(panel.title, fontsize=8)
    axis.tick_params(labelsize=6)
    return {}


def _draw_scatter(axis: Axes, panel: ScatterPanel) -> dict[str, Artist]:
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
