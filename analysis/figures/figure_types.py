"""A figure as plain data: what is drawn, before anything is drawn.

`analysis.figures.plots` describes the report's figures (and the study monitor's
rater figures) with these types; `analysis.figures.drawing` draws them. A test reads
what a figure shows (the N beside every binned point, which points rest on
fewer than FEW responses, which interval ends were cut at the end of the
scale) without looking at pixels.

Why clip: a t-interval on 2 responses can span -17 to 33 on a 1-10 scale, and
drawn as it is it sets the axis and flattens every other bin. The interval is
drawn to the end of the scale and ends in a triangle there (not a cap), so a
reader sees that it goes on; the exact ends are in the report's tables and JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
FEW_NOTE = f"N < {FEW}: few responses (hollow, lighter)"
CLIPPED_NOTE = "interval clipped at the end of the 1-10 scale (triangle)"
N_NOTE = "the number beside a point is its N"


# --- Panels and figures ---------------------------------------------------------------------


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
    # another scale than 1-10 (a metric's 0-100): its axis limits and ticks
    value_limits: tuple[float, float] | None = None
    value_ticks: tuple[float, ...] = ()
    category_limits: tuple[float, float] | None = None

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
