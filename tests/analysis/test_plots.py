"""The report's figures as data: what is drawn (interval ends clipped to the
1-10 scale, N beside every binned point, bins with N < 5 marked) is read
without pixels; then that the drawn axes keep to the scale and that PNG and SVG
come out."""

import xml.etree.ElementTree as ET

import pytest

from analysis.figures import drawing, plots
from analysis.figures.figure_types import (
    CLIPPED_NOTE,
    FEW_NOTE,
    SCALE,
    BarPanel,
    IntervalPanel,
    interval_point,
)
from analysis.report.build import build_report
from analysis.report.report_types import (
    Calibration,
    CalibrationLevel,
    GoldBin,
    GoldBins,
    MeanInterval,
    NotComputable,
)
from analysis.report.selection import Selection

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_an_interval_beyond_the_scale_is_cut_at_its_ends_and_says_so():
    # the calibration bin of the issue: N = 2, t-interval -17.4 to 33.4
    point = interval_point(8, 8.0, [-17.41, 33.41], 2)
    assert (point.low, point.high) == SCALE
    assert point.low_clipped and point.high_clipped
    assert point.few and point.label == "2"
    inside = interval_point(3, 5.4, [1.32, 9.48], 5)
    assert (inside.low, inside.high) == (1.32, 9.48)
    assert not inside.low_clipped and not inside.high_clipped and not inside.few
    one = interval_point(10, 9.0, None, 1)
    assert one.low is None and one.high is None and one.few and one.label == "1"
    # only the end beyond the scale is cut
    low = interval_point(4, 1.5, [0.62, 2.42], 5)
    assert (low.low, low.high, low.low_clipped, low.high_clipped) == (1.0, 2.42, True, False)


@pytest.fixture
def report(two_meetings):
    return build_report(Selection(split="test2"))


def with_wide_bins(report):
    """The report with the issue's gold-bin intervals (-2.9 to 12.3) and a bin of 2."""
    bins = report.gold_bins
    three = bins.bins["3"]
    cells = dict(three.evaluators)
    cells["gpt-4-eval"] = MeanInterval(n=4, mean=4.7, ci95=[-2.9, 12.3])
    four = GoldBin(n=2, evaluators={"gpt-4-eval": MeanInterval(n=2, mean=6.0, ci95=[5.0, 7.0])})
    wide = GoldBins(
        gold=bins.gold,
        bins={**bins.bins, "3": GoldBin(n=4, evaluators=cells), "4": four},
        levels=bins.levels,
    )
    return report.model_copy(update={"gold_bins": wide})


def test_gold_bins_show_n_mark_small_bins_and_clip(report):
    figure = plots.gold_bins_figure(with_wide_bins(report))
    panel = next(p for p in figure.panels if p.title == "gpt-4-eval")
    by_bin = {p.position: p for p in panel.points}
    assert (by_bin[3].low, by_bin[3].high) == SCALE and by_bin[3].high_clipped
    assert by_bin[3].few and by_bin[4].few and by_bin[4].label == "2"
    for point in (p for panel in figure.panels for p in panel.points):
        assert point.label == str(point.n)  # every binned point shows its N
        assert point.few == (point.n < 5)
        assert SCALE[0] <= point.value <= SCALE[1]
        if point.low is not None:
            assert SCALE[0] <= point.low <= point.high <= SCALE[1]
    assert figure.notes == (FEW_NOTE, CLIPPED_NOTE)
    # one panel per evaluator other than gold, with the line of agreement
    assert [p.title for p in figure.panels] == [
        e for e in report.evaluators if e != report.gold_bins.gold
    ]
    assert all(p.diagonal for p in figure.panels)


def test_the_legend_says_only_what_is_drawn(report):
    figure = plots.gold_bins_figure(report)  # the synthetic data: no interval leaves 1-10
    points = [p for panel in figure.panels for p in panel.points]
    assert not any(p.low_clipped or p.high_clipped for p in points)
    assert CLIPPED_NOTE not in figure.notes
    assert (FEW_NOTE in figure.notes) == any(p.few for p in points)


def test_calibration_clips_the_bin_of_two_and_sizes_many_levels(report):
    levels = [
        CalibrationLevel(
            judge_score=9.0, n=235, mean_gold=8.16, ci95=[7.93, 8.39], calibrated=8.16
        ),
        CalibrationLevel(judge_score=8.0, n=2, mean_gold=8.0, ci95=[-17.41, 33.41], calibrated=8.1),
    ]
    few = Calibration(n=237, map=levels, calibration_error=0.3, rmse_raw=1.0, rmse_calibrated=0.9)
    many = Calibration(
        n=40,
        map=[
            CalibrationLevel(judge_score=1 + i * 0.2, n=1, mean_gold=5.0, ci95=None, calibrated=5.0)
            for i in range(40)
        ],
        calibration_error=0.3,
        rmse_raw=1.0,
        rmse_calibrated=0.9,
    )
    diagnostics = report.diagnostics.model_copy(
        update={"calibration": {"rubric judge": few, "metric: rouge": many}}
    )
    figure = plots.calibration_figure(report.model_copy(update={"diagnostics": diagnostics}))
    judge, metric = figure.panels
    bin_of_two = next(p for p in judge.points if p.n == 2)
    assert (bin_of_two.low, bin_of_two.high) == SCALE
    assert bin_of_two.low_clipped and bin_of_two.high_clipped and bin_of_two.few
    assert [p.label for p in judge.points] == ["235", "2"]
    assert judge.series[0].steps == ((9.0, 8.16), (8.0, 8.1))
    # 40 distinct scores: sized by N, not labelled, and the title says so
    assert metric.series[0].sized and all(p.label == "" for p in metric.points)
    assert "40 distinct scores, N 1-1" in metric.title
    axes = drawing.laid_out(figure).axes
    for axis in axes:  # both axes of a calibration panel are on the scale
        for low, high in (axis.get_xlim(), axis.get_ylim()):
            assert SCALE[0] - 1 <= low and high <= SCALE[1] + 1


def test_score_axes_stay_within_the_scale(report):
    wide = with_wide_bins(report)
    for figure in plots.figures(wide).values():
        canvas = drawing.laid_out(figure)
        for axis, panel in zip(canvas.axes, figure.panels, strict=False):
            if isinstance(panel, IntervalPanel):
                limits = axis.get_xlim() if panel.horizontal else axis.get_ylim()
            elif isinstance(panel, BarPanel):
                limits = axis.get_ylim()
            else:
                continue
            assert SCALE[0] - 0.5 <= limits[0] < limits[1] <= SCALE[1] + 0.5, figure.name


def test_a_missing_mean_is_no_bar_of_zero(report):
    means = {s: dict(v) for s, v in report.mean_scores.items()}
    system = report.systems[0]
    del means[system]["gpt-4-eval"]
    figure = plots.means_figure(report.model_copy(update={"mean_scores": means}))
    (panel,) = figure.panels
    gpt4 = next(s for s in panel.series if s.label == "gpt-4-eval")
    assert gpt4.bars[panel.categories.index(system)].value is None
    assert all(b.value is None or b.value >= SCALE[0] for s in panel.series for b in s.bars)


def test_breakdown_bars_carry_their_n(report):
    figure = plots.breakdown_figure(report)
    for panel in figure.panels:
        for series in panel.series:
            for b in series.bars:
                assert b.value is None or (b.label == str(b.n) and b.few == (b.n < 5))


def test_every_figure_of_a_report(report):
    figures = plots.figures(report)
    # 12 responses per system: PPI's sample of at most half is 6, below the 10
    # labels an interval needs, so there is no PPI figure
    assert list(figures) == [
        "means",
        "distributions",
        "correlations",
        "gold_bins",
        "breakdown",
        "calibration",
    ]
    distributions = figures["distributions"]
    parts = report.score_distributions.evaluators
    assert [p.counts for p in distributions.panels] == [
        tuple(parts[e].counts.values()) for e in parts
    ]
    empty = build_report(Selection(split="test2", mode="mt"))
    assert plots.figures(empty) == {}


def test_the_ppi_figure_with_enough_labels(four_meetings):
    """Four meetings (24 responses per system): PPI keeps 12 labels per system."""
    report = build_report(Selection(split="test2"))
    figure = plots.figures(report)["ppi"]
    assert figure.panels[0].horizontal
    points = [p for panel in figure.panels for p in panel.points]
    assert points and all(SCALE[0] <= p.low <= p.high <= SCALE[1] for p in points)


def test_a_figure_is_drawn_as_png_and_svg(report):
    figure = plots.gold_bins_figure(with_wide_bins(report))
    png = drawing.draw(figure, "png")
    assert png.startswith(PNG_MAGIC)
    svg = drawing.draw(figure, "svg")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = " ".join(root.itertext())  # text stays text in the SVG
    assert FEW_NOTE in text and CLIPPED_NOTE in text and "gpt-4-eval" in text
    assert drawing.draw(figure, "svg") == svg  # the same figure, the same bytes
    with pytest.raises(ValueError, match="choose from png, svg"):
        drawing.draw(figure, "gif")


def test_a_report_without_a_part_has_no_figure_of_it(report):
    reason = NotComputable.because("no gold evaluator in the selection")
    assert plots.gold_bins_figure(report.model_copy(update={"gold_bins": reason})) is None
    assert "gold_bins" not in plots.figures(report.model_copy(update={"gold_bins": reason}))


def test_a_rater_against_gold():
    figure = plots.rater_figure(
        "P1", [(9, 5), (9, 5), (2, 1), (7, 4)], [5, 5, 1, 4, 3], 5, 0.97, "4 items"
    )
    scatter, histogram = figure.panels
    assert scatter.points == ((2.0, 1.0, 1), (7.0, 4.0, 1), (9.0, 5.0, 2))
    assert scatter.title == "r = 0.97 with gold"
    assert scatter.agreement_line == ((1.0, 1.0), (10.0, 5.0))  # the rating scale is 1-5
    assert histogram.bins == ("1", "2", "3", "4", "5") and histogram.counts == (1, 0, 1, 1, 2)
    unknown = plots.rater_figure("P2", [], [8], 10, None, "not computable: 0 items")
    assert unknown.panels[0].title == "not computable: 0 items"
    assert drawing.draw(unknown, "svg").startswith(b"<?xml")
