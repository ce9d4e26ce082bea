"""The report's deferring judges (analysis.report.deferral): a panel of
gpt-4-eval and prometheus-eval defers by its members' spread; its thresholds
are a plain loop's fixed sequence on the calibration meetings (each test an
exact binomial bound and a clustered score test by meeting), and what the
report says of the held-out meetings is what a loop over them finds (16
synthetic meetings). On the paper's 8 meetings, 4 calibrate: too few for a
guarantee by meeting, and the report says so."""

import numpy as np
import pytest
from scipy.special import betaincinv
from scipy.stats import t as student

from analysis.report.build import build_report
from analysis.report.deferral import TOKEN_SIGNAL
from analysis.report.render import to_html
from analysis.report.report_types import AgreementReport, DeferringJudge, is_computed
from analysis.report.scope import resolve
from analysis.report.selection import Selection
from analysis.statistics.deferral import clopper_pearson
from judging.models import Evaluator, Judgment
from tests.analysis.test_panels import TEST2
from tests.analysis.test_trust import paper, paper_once  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def loop_threshold(calibration, alpha, delta):
    """The largest spread whose fixed sequence of tests, from the smallest
    spread up, passes every test on the way (None: the first fails)."""
    chosen = None
    for limit in sorted({s for s, _, _ in calibration}):
        kept = [(w, m) for s, w, m in calibration if s <= limit]
        if len(kept) < 30:
            continue
        n = len(kept)
        errors = sum(w for w, _ in kept)
        bound = 1.0 if errors >= n else betaincinv(errors + 1, n - errors, 1 - delta)
        meetings = {m for _, m in kept}
        by_meeting = [
            (sum(w for w, k in kept if k == m), sum(1 for _, k in kept if k == m)) for m in meetings
        ]
        k = len(meetings)
        variance = max(
            k / (k - 1) * sum((e - alpha * size) ** 2 for e, size in by_meeting) / n**2
            if k > 1
            else 0.0,
            alpha * (1 - alpha) / n,
        )
        score = (alpha - errors / n) / np.sqrt(variance)
        if k < 2 or score <= student.ppf(1 - delta / 2, k - 1):
            bound = 2.0  # the clustered test does not reject
        if bound > alpha:
            return chosen
        chosen = limit
    return chosen


def panel_rows(selection):
    """Per response of the selection: its meeting, the panel's spread and
    whether the panel's mean is more than 2 points from the gold's."""
    table = resolve(selection).table
    scores = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean()
    scores = scores.unstack()
    meeting = table.drop_duplicates("response_id").set_index("response_id")["meeting"]
    rows = []
    for response, row in scores.iterrows():
        a, b = row["gpt-4-eval"], row["prometheus-eval"]
        if np.isnan(a) or np.isnan(b) or np.isnan(row["gold-human-eval"]):
            continue
        spread = abs(a - b) / 2  # the SD of two scores
        wrong = abs((a + b) / 2 - row["gold-human-eval"]) > 2
        rows.append((str(meeting[response]), spread, wrong))
    return rows


def make_panel():
    Evaluator.objects.create(
        name="panel",
        kind="panel",
        config={"members": ["gpt-4-eval", "prometheus-eval"], "rule": "mean"},
    )


@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    def test_four_calibration_meetings_are_too_few_and_the_report_says_so(self):
        make_panel()
        report = build_report(TEST2)
        assert AgreementReport.from_json(report.to_json()) == report
        # a judge with one sample per response has no signal, and says so
        assert "no confidence signal" in report.deferral["gpt-4-eval"].reason
        assert report.deferral["panel"].reason == (
            "panel: labels on 8 meetings, 4 to choose the threshold on: a guarantee that "
            "holds when people label whole meetings needs 7 or more there (13 labelled "
            "meetings); with fewer, no threshold can pass, however well the judge agrees"
        )
        # and indeed the loop's test passes nowhere on those 4 meetings
        rows = panel_rows(TEST2)
        names = sorted({m for m, _, _ in rows})
        calibration = [(s, w, m) for m, s, w in rows if names.index(m) % 2 == 0]
        assert all(loop_threshold(calibration, alpha, 0.05) is None for alpha in (0.1, 0.2, 0.3))
        assert "needs 7 or more there" in to_html(report)


SYNTHETIC = Selection(dataset_version="qa", split="test2", mode="st")


@pytest.fixture
def sixteen_meetings(tmp_path, db):
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "data", meetings=16, seed=3), with_responses=True
    )


def test_a_panel_defers_by_its_members_spread(sixteen_meetings):
    make_panel()
    report = build_report(SYNTHETIC)
    assert AgreementReport.from_json(report.to_json()) == report
    part = report.deferral["panel"]
    assert isinstance(part, DeferringJudge) and is_computed(part)
    assert_levels_are_the_loop_s(part, panel_rows(SYNTHETIC))
    html = to_html(report)
    section = html[html.index('id="deferral-panel"') :]
    assert "the spread (SD) of its members" in section


def assert_levels_are_the_loop_s(part, rows):
    """The report's thresholds and held-out figures equal a plain loop's over
    `rows` (meeting, spread, disagrees): meetings in sorted order, every other
    one calibrates."""
    names = sorted({m for m, _, _ in rows})
    calibration = [(s, w, m) for m, s, w in rows if names.index(m) % 2 == 0]
    held = [(s, w) for m, s, w in rows if names.index(m) % 2 == 1]
    assert part.calibration_meetings == 8
    assert part.calibration_responses == len(calibration)
    assert part.held_out_responses == len(held)
    assert part.held_out_agreement_without_deferral == pytest.approx(
        1 - np.mean([w for _, w in held])
    )
    kept_some = 0
    for level in part.levels:
        chosen = loop_threshold(calibration, level.alpha, part.delta)
        if chosen is None:
            assert level.max_spread_kept is None and level.held_out_kept_share == 0
            continue
        kept_some += 1
        assert level.max_spread_kept == pytest.approx(chosen, abs=1e-12)
        kept = [w for s, w in held if s <= level.max_spread_kept + 1e-12]
        assert level.held_out_kept_share == pytest.approx(len(kept) / len(held))
        agreeing = len(kept) - sum(kept)
        assert level.held_out_agreement == pytest.approx(agreeing / len(kept))
        assert level.held_out_ci95 == pytest.approx(list(clopper_pearson(agreeing, len(kept))))
        assert level.calibration_bound <= level.alpha
    assert kept_some >= 1  # a level where the judge keeps some responses


def test_a_judge_with_token_probabilities_defers_by_them(sixteen_meetings):
    """gpt-4-eval's judgments given token probabilities (high where it is within
    2 points of the gold, spread out where not): it defers by 1 - probability,
    as the loop does, where without them it had no signal at all."""
    before = build_report(SYNTHETIC).deferral["gpt-4-eval"]
    assert "no confidence signal" in before.reason and "logprobs" in before.reason
    table = resolve(SYNTHETIC).table
    scores = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean().unstack()
    meeting = table.drop_duplicates("response_id").set_index("response_id")["meeting"]
    rng = np.random.default_rng(5)
    judgments = list(Judgment.objects.filter(evaluator__name="gpt-4-eval"))
    rows = []
    for judgment in judgments:
        gold = scores.loc[judgment.response_id, "gold-human-eval"]
        wrong = abs(scores.loc[judgment.response_id, "gpt-4-eval"] - gold) > 2
        judgment.probability = 0.25 + 0.7 * rng.random() if wrong else 0.8 + 0.2 * rng.random()
        if not np.isnan(gold):
            rows.append((str(meeting[judgment.response_id]), 1 - judgment.probability, wrong))
    Judgment.objects.bulk_update(judgments, ["probability"])
    assert len(rows) == len({j.response_id for j in judgments})  # one judgment a response

    report = build_report(SYNTHETIC)
    assert AgreementReport.from_json(report.to_json()) == report
    part = report.deferral["gpt-4-eval"]
    assert isinstance(part, DeferringJudge) and part.signal == TOKEN_SIGNAL
    assert_levels_are_the_loop_s(part, rows)
    assert "the probability its tokens gave the score" in to_html(report)
