"""The report's Bradley-Terry rankings (analysis.report.rankings) on the
paper's data: the battles are the ones a plain loop over the questions makes,
their ratings FastChat's (transcribed in test_bradley_terry), and the
rank-sets are what the ratings' simultaneous differences allow."""

from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.report_types import AgreementReport, is_computed
from analysis.report.scores import score_table
from analysis.report.selection import Selection
from tests.analysis.test_bradley_terry import fastchat_fit_bt, fastchat_schedule
from tests.analysis.test_trust import paper, paper_once  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

PAPER_SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")
TEST2 = Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)


def loop_battles(selection: Selection, evaluator: str):
    """The battles of one evaluator, by a loop over questions: each pair of
    systems on a question, the higher mean score winning."""
    table = score_table(selection)
    table = table[table["evaluator"] == evaluator]
    scores: dict = defaultdict(list)
    for row in table.itertuples():
        scores[(row.question_pk, row.mode, row.dataset_version), str(row.system)].append(row.score)
    by_question: dict = defaultdict(dict)
    for (question, system), values in scores.items():
        by_question[question][system] = sum(values) / len(values)
    names = sorted({s for q in by_question.values() for s in q})
    first, second, outcome = [], [], []
    for answers in by_question.values():
        for a, b in combinations(sorted(answers), 2):
            first.append(names.index(a))
            second.append(names.index(b))
            diff = answers[a] - answers[b]
            outcome.append(1.0 if diff > 0 else 0.0 if diff < 0 else 0.5)
    return names, np.array(first), np.array(second), np.array(outcome)


@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    """The paper's data imported once for the class (test_trust's fixture)."""

    def test_ratings_from_scores_are_fastchats_on_the_questions_battles(self):
        report = build_report(TEST2)
        assert is_computed(report.rankings)
        for evaluator in ("gold-human-eval", "gpt-4-eval", "prometheus-eval"):
            ranking = report.rankings.from_scores[evaluator]
            names, first, second, outcome = loop_battles(TEST2, evaluator)
            expected = fastchat_fit_bt(*fastchat_schedule(first, second, outcome), len(names))
            got = {s.system: s.rating for s in ranking.systems}
            for name, value in zip(names, expected, strict=True):
                assert got[name] == pytest.approx(value, abs=1e-3)
            assert ranking.battles == len(first) == 390  # 130 questions, 3 pairs each
            assert ranking.clusters == 8
        # the reference first, then the others by name
        assert list(report.rankings.from_scores)[0] == report.scope.reference == "gold-human-eval"
        gold = report.rankings.from_scores["gold-human-eval"]
        assert [s.system for s in gold.systems] == ["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"]
        top = gold.systems[0]
        assert top.rank == 1 and top.rank_set == [1, 1]
        assert top.ci95[0] < top.rating < top.ci95[1]
        # the page shows each ranking: its order, ratings with intervals and rank-sets
        page = to_html(report)
        assert "Rankings with intervals (Bradley-Terry)" in page
        assert (
            "<b>gold-human-eval</b> (from scores): GPT-4 &gt; Vicuna-13B-v1.5 &gt; LongAlpaca-7B"
            in page
        )
        low, high = top.ci95
        assert (
            f"<td>GPT-4</td><td>{top.rating:.0f} [{low:.0f}, {high:.0f}]</td><td>{{1}}</td>" in page
        )

    def test_rank_sets_are_what_the_simultaneous_differences_allow(self):
        """On test2's three systems: a system's best rank is one more than the
        systems whose lead over it is settled, its worst the systems less those
        it settledly leads; the report reads back as it was written."""
        report = build_report(TEST2)
        ranking = report.rankings.from_scores["gpt-4-eval"]
        k = len(ranking.systems)
        assert k == 3 and ranking.ci_note is None
        ahead = defaultdict(int)
        behind = defaultdict(int)
        for d in ranking.differences:
            low, high = d.ci95
            assert low <= d.difference <= high
            if low > 0:
                behind[d.other] += 1
                ahead[d.system] += 1
            elif high < 0:
                behind[d.system] += 1
                ahead[d.other] += 1
        for s in ranking.systems:
            assert s.rank_set == [1 + behind[s.system], k - ahead[s.system]]
            assert s.rank_set[0] <= s.rank <= s.rank_set[1]
        # the dev split's nine systems in ten meetings: below two meetings a system
        dev = build_report(
            Selection(dataset_version="qa", split="dev", mode="st", evaluators=("gpt-4-eval",))
        ).rankings.from_scores["gpt-4-eval"]
        assert len(dev.systems) == 9 and "10, 8 more (below 18" in dev.ci_note
        assert AgreementReport.from_json(report.to_json()).rankings == report.rankings
