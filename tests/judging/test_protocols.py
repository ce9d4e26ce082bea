"""Judge protocols as classes: their prompts (the authors' strings, byte for
byte), parsers, scales (the Czech 0), common-scale mapping, and what a result
is recorded as (a Judgment, or a PairwiseVerdict with a typed Verdict)."""

import json

import pytest

from generation.models import Response
from judging.evaluators import (
    AnswerError,
    ConfigError,
    JudgeConfig,
    Scale,
    checked_judge,
    judge_class,
    judge_for,
)
from judging.evaluators.judges import (
    Custom,
    HelmetLongQa,
    LevalPairwise,
    LoogleQa,
    LoogleSummary,
    Pairwise,
    Prometheus,
    Rubric,
)
from judging.evaluators.registry import model_judges
from judging.judging_runs import JudgingError, create_judging_run
from judging.models import Evaluator, JudgeItem, Judgment, PairwiseVerdict
from judging.parsers import ParsedScore, ParsedVerdict, Verdict
from tests.conftest import REPO, require
from tests.corpus.fixtures import qa_test2

VECTORS_FILE = REPO.parent / "shared" / "protocols" / "elitr-bench-prompt-vectors.json"
PAIRWISE = {"protocol": "pairwise", "baseline": "Synthetic-Hedge"}


@pytest.fixture(scope="module")
def vectors():
    require(VECTORS_FILE.exists(), f"the protocol vectors are not at {VECTORS_FILE}")
    return json.loads(VECTORS_FILE.read_text())


def judge(**settings):
    return judge_for(JudgeConfig.from_dict(settings))


def unsaved_item(response: str, opponent: str | None = None, order: int = 0) -> JudgeItem:
    return JudgeItem(
        response=Response(text=response),
        opponent=Response(text=opponent) if opponent is not None else None,
        seed=2023,
        order=order,
    )


# --- the registry --------------------------------------------------------------------------------


def test_the_registry_names_each_judge_class():
    registered = model_judges()
    assert registered == {
        "rubric": Rubric,
        "prometheus": Prometheus,
        "custom": Custom,
        "pairwise": Pairwise,
        "leval_pairwise": LevalPairwise,
        "loogle_qa": LoogleQa,
        "loogle_summary": LoogleSummary,
        "helmet_longqa": HelmetLongQa,
    }
    assert type(judge(protocol="prometheus")) is Prometheus
    assert type(judge(**PAIRWISE)) is Pairwise
    assert type(judge()) is Rubric  # the default protocol


def test_an_unknown_protocol_is_refused_naming_the_known_ones():
    known = (
        "the known protocols are rubric, prometheus, custom, pairwise, leval_pairwise, "
        "loogle_qa, loogle_summary, helmet_longqa"
    )
    with pytest.raises(ConfigError, match=f"Unknown judge protocol 'likert'; {known}"):
        judge_class("likert")
    with pytest.raises(ConfigError, match=f"Unknown judge protocol 'likert'; {known}"):
        JudgeConfig.from_dict({"protocol": "likert"})


def test_each_protocol_checks_its_own_settings_and_kind():
    with pytest.raises(ConfigError, match="needs a baseline"):
        JudgeConfig.from_dict({"protocol": "pairwise"})
    with pytest.raises(ConfigError, match=r"Unknown placeholder \{transcript\}"):
        JudgeConfig.from_dict({"protocol": "custom", "template": "{response} {transcript}"})
    assert type(checked_judge("llm_pairwise", PAIRWISE)) is Pairwise
    with pytest.raises(ConfigError, match="pairwise protocol is for evaluators of kind llm_pair"):
        checked_judge("llm_rubric", PAIRWISE)
    with pytest.raises(ConfigError, match="prometheus protocol is for evaluators of kind llm_rub"):
        checked_judge("llm_pairwise", {"protocol": "prometheus"})


# --- messages ------------------------------------------------------------------------------------


def test_scoring_protocols_ask_with_the_authors_prompts(vectors):
    inputs = vectors["inputs"]
    question, response, reference = (
        inputs["judge_question"],
        inputs["judge_response"],
        inputs["judge_reference"],
    )
    expected = vectors["vectors"]
    item = unsaved_item(response)
    rubric = judge()
    assert rubric.messages(question, response, reference) == expected["gpt_judge_messages.english"]
    assert rubric.item_messages(item, question, reference) == expected["gpt_judge_messages.english"]
    czech = judge(language="cs").item_messages(item, question, reference)
    assert czech[1] == {"role": "user", "content": expected["gpt_judge_prompt.czech"]}
    for language, key in (("en", "english"), ("cs", "czech")):
        assert judge(protocol="prometheus", language=language).item_messages(
            item, question, reference
        ) == [{"role": "user", "content": expected[f"prometheus_judge_prompt.{key}"]}]


def test_a_custom_template_is_filled_in():
    custom = judge(protocol="custom", template="Q: {question}\nA: {response}\nR: {reference}")
    assert custom.item_messages(unsaved_item("Bob"), "Who?", "Bob") == [
        {"role": "user", "content": "Q: Who?\nA: Bob\nR: Bob"}
    ]


def test_pairwise_shows_the_judged_response_first_in_order_0_and_second_in_order_1():
    pairwise = judge(**PAIRWISE)
    first = pairwise.item_messages(unsaved_item("JUDGED", "BASELINE", order=0), "Q?", "REF")
    second = pairwise.item_messages(unsaved_item("JUDGED", "BASELINE", order=1), "Q?", "REF")
    assert first == pairwise.messages("Q?", "REF", "JUDGED", "BASELINE")
    assert second == pairwise.messages("Q?", "REF", "BASELINE", "JUDGED")
    user = first[1]["content"]
    assert user.index("JUDGED") < user.index("Assistant B's Answer") < user.index("BASELINE")
    user = second[1]["content"]
    assert user.index("BASELINE") < user.index("Assistant B's Answer") < user.index("JUDGED")
    assert "[The Start of Reference Answer]\nREF\n" in user
    # the projected cost counts both orders' prompts
    assert len(pairwise.estimate_messages("JUDGED", "REF")) == 2
    assert len(judge().estimate_messages("JUDGED", "REF")) == 1


# --- scales, parsing, the common scale -----------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "scale"),
    [
        ({}, Scale(1, 10)),
        ({"language": "cs"}, Scale(0, 10)),
        ({"protocol": "prometheus"}, Scale(1, 5)),
        ({"protocol": "prometheus", "language": "cs"}, Scale(0, 5)),
        # a researcher's template has no "not in Czech" level
        ({"protocol": "custom", "template": "{response}", "language": "cs"}, Scale(1, 10)),
    ],
)
def test_scales_with_the_czech_zero(settings, scale):
    assert judge(**settings).scale == scale


def test_a_czech_zero_parses_only_on_a_czech_scale_and_maps_to_one():
    english, czech = judge(), judge(language="cs")
    assert english.parse("Not Czech. \\boxed{0}").outcome == "out_of_range"
    assert czech.parse("Not Czech. \\boxed{0}") == ParsedScore("ok", 0, span=(18, 19))
    assert (czech.common_score(0), czech.common_score(7), czech.common_score(10)) == (1, 7, 10)
    prometheus = judge(protocol="prometheus", language="cs")
    assert prometheus.parse("Feedback: not Czech [RESULT] 0").value == 0
    assert prometheus.parse("Feedback: \\boxed{4}").outcome == "parse_failure"
    custom = judge(protocol="custom", template="{response}", language="cs")
    assert custom.parse("\\boxed{0}").outcome == "out_of_range"


def test_prometheus_doubles_onto_the_common_scale():
    prometheus = judge(protocol="prometheus")
    assert [prometheus.common_score(n) for n in range(1, 6)] == [2, 4, 6, 8, 10]
    assert prometheus.parse("Feedback: good [RESULT] 6").outcome == "out_of_range"
    assert judge().common_score(5) == 5


def test_pairwise_answers_parse_to_verdicts():
    pairwise = judge(**PAIRWISE)
    assert pairwise.parse("A is closer. [[A]]") == ParsedVerdict("ok", Verdict.A, span=(15, 16))
    assert pairwise.parse("[[A]] no, equal: [[C]]").value is Verdict.TIE
    assert pairwise.parse("\\boxed{2}").outcome == "parse_failure"


def test_answers_are_checked_by_type_and_scale():
    rubric, czech, pairwise = judge(), judge(language="cs"), judge(**PAIRWISE)
    assert rubric.check_answer(10) == 10 and czech.check_answer(0) == 0
    for wrong in (0, 11, 7.5, "7", True, None, Verdict.A):
        with pytest.raises(AnswerError, match="whole number from 1 to 10"):
            rubric.check_answer(wrong)
    assert pairwise.check_answer(Verdict.B) is Verdict.B
    for wrong in (0, 1, 2, "first", "A", None):
        with pytest.raises(AnswerError, match=r"takes a verdict: A \(the answer shown first\)"):
            pairwise.check_answer(wrong)


# --- recording -----------------------------------------------------------------------------------


def llm_judge(name: str, kind: str = "llm_rubric", **settings) -> Evaluator:
    config = {"server": "vllm", "base_url": "http://127.0.0.1:9/v1", "model": "m", **settings}
    return Evaluator.objects.create(name=name, kind=kind, config=config)


def run_of(evaluator: Evaluator):
    run = create_judging_run(evaluator, qa_test2(), "st")
    config = JudgeConfig.from_dict(evaluator.config)
    return run, judge_for(config)


@pytest.mark.parametrize(
    ("settings", "answer", "raw", "score", "scale"),
    [
        ({}, "Close enough. \\boxed{7}", 7, 7, (1, 10)),
        ({"language": "cs"}, "Not in Czech. \\boxed{0}", 0, 1, (0, 10)),
        ({"protocol": "prometheus", "top_p": None}, "Feedback: good [RESULT] 4", 4, 8, (1, 5)),
        ({"protocol": "prometheus", "language": "cs"}, "Feedback: [RESULT] 0", 0, 1, (0, 5)),
    ],
)
def test_a_parsed_score_is_recorded_once_as_a_judgment(
    two_meetings, settings, answer, raw, score, scale
):
    evaluator = llm_judge("judge", **settings)
    run, protocol = run_of(evaluator)
    item = JudgeItem.objects.filter(run=run).first()
    parsed = protocol.parse(answer)
    assert parsed.ok
    protocol.record(run, item, parsed.value, answer)
    protocol.record(run, item, parsed.value, answer)  # a redelivered task: nothing doubled
    judgment = Judgment.objects.get(evaluator=evaluator)
    assert (judgment.raw_score, judgment.score) == (raw, score)
    assert (judgment.raw_scale_min, judgment.raw_scale_max) == scale
    assert (judgment.response_id, judgment.seed, judgment.order) == (item.response_id, 2023, 0)
    assert judgment.feedback == answer


def test_a_verdict_is_recorded_as_a_pairwise_verdict_for_its_order(two_meetings):
    evaluator = llm_judge("battle", kind="llm_pairwise", **PAIRWISE)
    run, protocol = run_of(evaluator)
    assert set(JudgeItem.objects.filter(run=run).values_list("order", flat=True)) == {0, 1}
    swapped = JudgeItem.objects.filter(run=run, order=1).select_related("response").first()
    protocol.record(run, swapped, protocol.parse("The first is better. [[A]]").value, "[[A]]")
    verdict = PairwiseVerdict.objects.get(evaluator=evaluator)
    assert (verdict.response_id, verdict.opponent_id) == (swapped.response_id, swapped.opponent_id)
    assert (verdict.order, verdict.winner, verdict.seed) == (1, "first", 2023)
    # in order 1 the baseline's answer is shown first: the judged response lost
    assert verdict.outcome == "loss"
    assert not Judgment.objects.filter(evaluator=evaluator).exists()


def test_a_value_of_the_wrong_kind_is_never_recorded(two_meetings):
    battle = llm_judge("battle", kind="llm_pairwise", **PAIRWISE)
    run, pairwise = run_of(battle)
    item = JudgeItem.objects.filter(run=run).first()
    with pytest.raises(AnswerError):
        pairwise.record(run, item, 0, "a number is no verdict")
    rubric_judge = llm_judge("rubric")
    rubric_run, rubric = run_of(rubric_judge)
    rubric_item = JudgeItem.objects.filter(run=rubric_run).first()
    for wrong in (Verdict.A, 11, True):
        with pytest.raises(AnswerError):
            rubric.record(rubric_run, rubric_item, wrong, "")
    assert (
        not PairwiseVerdict.objects.exists()
        and not Judgment.objects.filter(evaluator__in=[battle, rubric_judge]).exists()
    )


def test_a_run_refuses_a_protocol_for_another_kind_of_judge(two_meetings):
    with pytest.raises(JudgingError, match="mixed: the pairwise protocol is for evaluators of"):
        create_judging_run(llm_judge("mixed", **PAIRWISE), qa_test2(), "st")
