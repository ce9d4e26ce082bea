"""Probe answers (generation.probes): one run per kind of every question of a
dataset, in the asking project, made once; each kind's text is what it says;
the report reads them in its Probes part only, and says how often each fools
a judge, as a loop over the judge's scores finds."""

import re

import numpy as np
import pytest

from analysis.report.build import build_report
from analysis.report.render import to_html
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset, QuestionText
from generation.models import GenerationRun, Response
from generation.probes import PROBE_KINDS, ProbeError, make_probes, wrong_number
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment
from tests.analysis.test_panels import TEST2
from tests.analysis.test_trust import paper, paper_once  # noqa: F401 (fixtures)
from users.models import Project, default_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    return Dataset.objects.get(version="qa", split="test2", language="en")


def test_each_kind_answers_every_question_once(dataset):
    made = make_probes(dataset, default_project())
    texts = QuestionText.objects.filter(dataset=dataset).select_related("question__document")
    assert made == {kind: texts.count() for kind in PROBE_KINDS}
    for kind in PROBE_KINDS:
        run = GenerationRun.objects.get(system__name=f"probe-{kind}", dataset=dataset)
        assert run.project == default_project() and run.system.project is None
        assert run.responses.count() == texts.count()
    for text in texts:
        answer = {
            r.run.system.name: r.text
            for r in Response.objects.filter(question=text.question, run__dataset=dataset)
            .filter(run__system__name__startswith="probe-")
            .select_related("run__system")
        }
        assert text.text.strip() in answer["probe-restate"]
        assert answer["probe-dont-know"] == "I don't know."
        number = int(re.search(r"\d+", answer["probe-wrong-number"]).group())
        assert str(number) not in re.findall(r"\d+", text.reference_answer)
        passage = answer["probe-irrelevant-passage"]
        assert 0 < len(passage) <= 1500 and passage in text.question.document.text
        siblings = [
            t.reference_answer
            for t in texts
            if t.question.document_id == text.question.document_id and t.pk != text.pk
        ]
        assert answer["probe-other-question"] in siblings
    # a second call makes nothing; another project may not add to these runs
    assert make_probes(dataset, default_project()) == {kind: 0 for kind in PROBE_KINDS}
    other = Project.objects.create(name="team-b", slug="team-b")
    with pytest.raises(ProbeError, match="another project"):
        make_probes(dataset, other, ["dont-know"])
    with pytest.raises(ProbeError, match="choose among"):
        make_probes(dataset, other, ["flattery"])


def test_a_wrong_number_is_never_one_the_reference_holds():
    for reference in ("Three people: 3.", "7, 28 and 29 were said", "none", "3 then 16"):
        said = set(re.findall(r"\d+", reference))
        assert not set(re.findall(r"\d+", wrong_number(reference))) & said


@pytest.mark.usefixtures("paper")
class TestOnThePapersData:
    def test_the_report_says_how_often_each_probe_fools_the_judge(self):
        test2 = Dataset.objects.get(version="qa", split="test2", language="en")
        make_probes(test2, default_project(), ["dont-know", "other-question"])
        gpt4 = Evaluator.objects.get(name="gpt-4-eval")
        rng = np.random.default_rng(0)
        probes = Response.objects.filter(run__system__name__startswith="probe-")
        scores = {
            r: float(rng.integers(1, 4) if "dont-know" in r.run.system.name else 9)
            for r in probes.select_related("run__system")
        }
        Judgment.objects.bulk_create(
            Judgment(
                evaluator=gpt4,
                response=r,
                score=score,
                raw_score=score,
                raw_scale_min=1,
                raw_scale_max=10,
            )
            for r, score in scores.items()
        )
        report = build_report(TEST2)
        assert not any(s.startswith("probe-") for s in report.systems)  # read by probes only
        part = report.probes["gpt-4-eval"]
        table = {
            (j.response_id): j.score
            for j in Judgment.objects.filter(evaluator__name="gold-human-eval")
        }
        good = [
            j.score
            for j in Judgment.objects.filter(
                evaluator=gpt4, response_id__in=[r for r, s in table.items() if s >= 8]
            )
            .filter(response__run__system__name__in=TEST2.systems)
            .filter(response__run__dataset=test2, response__run__mode="st")
        ]
        assert part.good_answers == len(good)
        assert part.good_median == pytest.approx(float(np.median(good)))
        dont_know = part.kinds["dont-know"]
        assert dont_know.n == 130 and dont_know.as_good == 0  # 1-3 against a median above 3
        other = part.kinds["other-question"]
        assert other.as_good == (other.n if part.good_median <= 9 else 0)
        assert (
            "prometheus-eval has not scored the probes" in report.probes["prometheus-eval"].reason
        )
        html = to_html(report)
        assert 'id="probes"' in html and "dont-know: " in html
