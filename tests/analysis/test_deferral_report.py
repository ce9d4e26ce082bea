"""The report's deferring judges (analysis.report.deferral) on the paper's
data: a panel of gpt-4-eval and prometheus-eval defers by its members'
spread; its thresholds are a plain loop's fixed sequence on the calibration
meetings (each test's counts shrunk by the meetings' design effect), and what
the report says of the held-out meetings is what a loop over them finds."""

import numpy as np
import pytest
from scipy.special import betaincinv

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import AgreementReport, is_computed
from analysis.report.scope import resolve
from analysis.statistics.deferral import clopper_pearson
from judging.models import Evaluator
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
        rate = sum(w for w, _ in kept) / n
        meetings = {m for _, m in kept}
        errors = {m: sum(w for w, k in kept if k == m) for m in meetings}
        sizes = {m: sum(1 for _, k in kept if k == m) for m in meetings}
        effect = 1.0
        if len(meetings) > 1 and 0 < rate < 1:
            spread = sum((errors[m] - rate * sizes[m]) ** 2 for m in meetings)
            variance = len(meetings) / (len(meetings) - 1) * spread / n**2
            effect = max(1.0, variance / (rate * (1 - rate) / n))
        n_eff = n / effect
        bound = 1.0 if rate >= 1 else betaincinv(rate * n_eff + 1, n_eff - rate * n_eff, 1 - delta)
        if bound > alpha:
            return chosen
        chosen = limit
    return chosen


@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    def test_a_panel_defers_by_its_members_spread(self):
        Evaluator.objects.create(
            name="panel",
            kind="panel",
            config={"members": ["gpt-4-eval", "prometheus-eval"], "rule": "mean"},
        )
        report = build_report(TEST2)
        assert AgreementReport.from_json(report.to_json()) == report
        # a judge with one sample per response has no signal, and says so
        assert "no confidence signal" in report.deferral["gpt-4-eval"].reason
        part = report.deferral["panel"]
        assert is_computed(part)

        # the same, by a loop over the responses
        table = resolve(TEST2).table
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
        names = sorted({m for m, _, _ in rows})
        calibration = [(s, w, m) for m, s, w in rows if names.index(m) % 2 == 0]
        held = [(s, w) for m, s, w in rows if names.index(m) % 2 == 1]
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
        assert kept_some >= 1  # a level where the panel keeps some responses
        html = to_html(report)
        section = html[html.index('id="deferral-panel"') :]
        assert "the spread (SD) of its members" in section
