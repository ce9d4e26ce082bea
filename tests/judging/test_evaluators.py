"""One evaluator interface: every LLM judge, every metric and every source of
precomputed scores is a registered plug-in, found by `plugin_for` from a
stored evaluator; adding a metric is one class plus its registration, as
docs/judging.md shows (its example is run here)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from judging.evaluators import (
    REGISTRY,
    ConfigError,
    Metric,
    ModelJudge,
    Precomputed,
    Scale,
    UnknownEvaluator,
    plugin_for,
    register,
)
from judging.evaluators.judges import Pairwise, Prometheus, Rubric
from judging.evaluators.registry import metrics, model_judges
from judging.judging_runs import JudgingError, create_judging_run, ensure_metric_evaluators
from judging.models import Evaluator, Judgment
from tests.conftest import REPO

METRIC_NAMES = [
    "rouge",
    "f1",
    "exact_match",
    "mc_accuracy",
    "mc_accuracy_faithful",
    "exponential_similarity",
    "concordance_index",
    "zeroscrolls.f1",
    "zeroscrolls.rouge",
    "zeroscrolls.exp_similarity",
    "zeroscrolls.concordance_index",
    "zeroscrolls.accuracy",
    "scrolls.exact_match",
    "leval.exam",
    "leval.exam_choice",
    "leval.exam_coursera",
    "leval.exam_math",
    "leval.exam_code",
    "leval.exam_topics",
    "leval.exam_scifi",
    "leval.f1",
    "leval.rouge",
    "longbench_v2.accuracy",
    "ruler.string_match_all",
    "ruler.string_match_part",
    "babilong.accuracy",
    "loogle.bleu_1",
    "loogle.bleu_4",
    "loogle.rouge_1",
    "loogle.rouge_2",
    "loogle.rouge_l",
    "loogle.exact_match",
    "loogle.partial_match",
    "helmet.exact_match",
    "helmet.f1",
    "helmet.substring_exact_match",
    "helmet.rougeL_f1",
    "helmet.rougeL_recall",
    "helmet.rougeLsum_f1",
    "helmet.rougeLsum_recall",
    "helmet.ruler_recall",
]


def test_one_registry_holds_the_judges_and_the_metrics():
    assert list(model_judges()) == [
        "rubric",
        "prometheus",
        "custom",
        "pairwise",
        "leval_pairwise",
        "loogle_qa",
        "loogle_summary",
        "helmet_longqa",
    ]
    assert list(metrics()) == METRIC_NAMES
    assert set(REGISTRY) == set(model_judges()) | set(metrics())
    for cls in model_judges().values():
        assert issubclass(cls, ModelJudge) and cls.needs_model
    for cls in metrics().values():
        assert issubclass(cls, Metric) and not cls.needs_model
        assert cls().scale == Scale(0.0, 1.0, whole=False) and cls.evaluator_name


def test_a_second_plugin_under_a_taken_name_is_refused():
    class Twin(Metric):
        name = "rouge"
        evaluator_name = "metric: twin"

        def compute(self, prediction: str, references: Sequence[str]) -> float:
            return 0.0

    with pytest.raises(ValueError, match="Two evaluator plug-ins are named 'rouge'"):
        register(Twin)


@pytest.mark.django_db
def test_plugin_for_gives_each_stored_evaluator_its_plugin():
    def evaluator(kind: str, config: dict, low: float = 1, high: float = 10) -> Evaluator:
        return Evaluator(name="e", kind=kind, config=config, raw_scale_min=low, raw_scale_max=high)

    assert type(plugin_for(evaluator("llm_rubric", {}))) is Rubric
    assert type(plugin_for(evaluator("llm_rubric", {"protocol": "prometheus"}))) is Prometheus
    pairwise = {"protocol": "pairwise", "baseline": "GPT-4"}
    assert type(plugin_for(evaluator("llm_pairwise", pairwise))) is Pairwise
    assert plugin_for(evaluator("metric", {"metric": "concordance_index"})).name == (
        "concordance_index"
    )
    for kind in ("imported", "gold_human", "crowd_human"):
        plugin = plugin_for(evaluator(kind, {}, 1, 7))
        assert isinstance(plugin, Precomputed) and plugin.scale == Scale(1, 7, whole=False)
        assert plugin.common_score(4) == 5.5 and plugin.common_score(7) == 10
    with pytest.raises(UnknownEvaluator, match="Unknown metric 'bleu'; known: rouge, f1"):
        plugin_for(evaluator("metric", {"metric": "bleu"}))
    with pytest.raises(ConfigError, match="pairwise protocol is for evaluators of kind"):
        plugin_for(evaluator("llm_rubric", pairwise))


@pytest.mark.django_db  # a new evaluator's project defaults to the default project's row
def test_every_plugin_stores_through_the_one_writer_on_its_own_scale():
    rouge = plugin_for(Evaluator(kind="metric", config={"metric": "rouge"}))
    row = rouge.judgment(3, 4, 0.5, rater="")
    assert (row.raw_score, row.raw_scale_min, row.raw_scale_max, row.score) == (0.5, 0, 1, 5.5)
    prometheus = plugin_for(Evaluator(kind="llm_rubric", config={"protocol": "prometheus"}))
    row = prometheus.judgment(3, 4, 4)
    assert (row.raw_score, row.raw_scale_max, row.score) == (4, 5, 8.0)  # doubled, as the paper
    paper = Precomputed(Scale(1, 10, whole=False))
    assert paper.judgment(3, 4, 7.3).score == 7.3  # exactly: on 1-10 already
    for plugin, bad in ((rouge, 1.5), (prometheus, 6), (paper, float("nan"))):
        with pytest.raises(ValueError):
            plugin.check_answer(bad)


@pytest.mark.django_db
def test_every_registered_metric_can_be_picked_and_run(two_meetings, capsys):
    names = [e.name for e in ensure_metric_evaluators()]
    assert names == [metrics()[n].evaluator_name for n in METRIC_NAMES]
    assert ensure_metric_evaluators()  # twice: nothing new
    assert Evaluator.objects.filter(kind="metric").count() == len(METRIC_NAMES)
    call_command(
        "judge", "--evaluator", "metric: exponential similarity", "--split", "test2", "--now"
    )
    assert "36/36 judged, 0 failed (done)" in capsys.readouterr().out
    stored = Judgment.objects.filter(evaluator__name="metric: exponential similarity")
    assert stored.count() == 36 and all(0 <= j.raw_score <= 1 for j in stored)
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    run = create_judging_run(Evaluator.objects.get(name="metric: concordance index"), dataset, "st")
    assert run.total > 0


@pytest.mark.django_db
def test_a_metric_evaluator_whose_metric_is_gone_is_refused(two_meetings):
    broken = Evaluator.objects.create(
        name="metric: gone",
        kind="metric",
        config={"metric": "gone"},
        raw_scale_min=0,
        raw_scale_max=1,
    )
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    with pytest.raises(JudgingError, match="metric: gone: Unknown metric 'gone'"):
        create_judging_run(broken, dataset, "st")


@pytest.mark.django_db
def test_the_docs_example_metric_is_one_class_and_its_registration(two_meetings):
    """The class docs/judging.md shows under "Adding a metric", run as written:
    it registers, gets its evaluator and scores a run."""
    text = (REPO / "docs" / "judging.md").read_text()
    section = text[text.index("### Adding a metric") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace = {"Metric": Metric, "register": register, "Sequence": Sequence}
    try:
        exec(code.group(1), namespace)  # noqa: S102  (the project's own documentation)
        assert "word_count_ratio" in metrics()
        evaluator = {e.name: e for e in ensure_metric_evaluators()}["metric: word count ratio"]
        call_command("judge", "--evaluator", evaluator.name, "--split", "test2", "--now")
        scores = Judgment.objects.filter(evaluator=evaluator)
        assert scores.count() == 36  # 3 systems x 12 questions
        assert all(0 <= j.raw_score <= 1 and j.score == 1 + 9 * j.raw_score for j in scores)
    finally:
        REGISTRY.pop("word_count_ratio", None)
