"""Settings that can never work are refused when saved, with a 400 (or a form
error) that says why, and nothing stored: a server address that is not an
http(s) URL with a host, a prompt template whose braces are not known
placeholders or doubled literals, a negative budget or price, a reason that
is not a text."""

from __future__ import annotations

import pytest

from corpus.models import Dataset
from generation.config import GenerationConfig, GenerationConfigError
from judging.importing import import_elitr_bench
from judging.judging_runs import ensure_metric_evaluators
from judging.models import Evaluator, JudgingRun
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db

GOOD = "http://127.0.0.1:18210/v1"
NEVER_WORK = [
    "file:///etc/passwd",
    "ftp://127.0.0.1/v1",
    "javascript:alert(1)",
    "http:///v1",
    "127.0.0.1:18210/v1",
    "",
    " http://127.0.0.1:18210/v1",
    "http://user:secret@127.0.0.1:18210/v1",
    "http://127.0.0.1:port/v1",
    "http://127.0.0.1:18210/v1?key=1",
]


def judge(**config) -> dict:
    body = {"server": "openai", "model": "gpt-4o", "base_url": GOOD, "protocol": "custom",
            "template": "Q: {question}\nA: {response}\nRef: {reference}"}  # fmt: skip
    return {"name": "a judge", "kind": "llm_rubric", "config": body | config}


@pytest.mark.parametrize("base_url", NEVER_WORK)
def test_a_judges_server_that_cannot_be_called_is_refused(researcher_api, base_url):
    before = database_snapshot()
    answer = researcher_api.post("/api/evaluators/", judge(base_url=base_url), format="json")
    assert answer.status_code == 400, answer.content
    assert "base_url" in str(answer.json())
    assert database_snapshot() == before


@pytest.mark.parametrize("base_url", NEVER_WORK)
def test_a_systems_server_that_cannot_be_called_is_refused(base_url):
    with pytest.raises(GenerationConfigError, match="base_url"):
        GenerationConfig.from_dict({"backend": "openai", "model": "m", "base_url": base_url})


def test_a_callable_server_is_taken(researcher_api):
    answer = researcher_api.post("/api/evaluators/", judge(), format="json")
    assert answer.status_code == 201, answer.content
    for url in ("https://api.openai.com/v1", "http://[::1]:8000/v1", "http://llm.lab:8000"):
        GenerationConfig.from_dict({"backend": "openai", "model": "m", "base_url": url})


@pytest.mark.parametrize(
    "template",
    ["Ref: {reference.", "Ref: {reference}}", "Ref: { reference }", "Ref: {{reference}",
     "Ref: {reference-answer}"],
)  # fmt: skip
def test_a_template_that_would_leave_the_reference_out_is_refused(researcher_api, template):
    before = database_snapshot()
    body = judge(template="Q: {question}\nA: {response}\n" + template)
    answer = researcher_api.post("/api/evaluators/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert "placeholder" in str(answer.json()) or "brace" in str(answer.json())
    assert database_snapshot() == before


@pytest.mark.parametrize(
    "setting", [{"price_input_per_million": -1}, {"price_output_per_million": -0.5},
                {"temperature": -0.1}, {"timeout_s": 0}],
)  # fmt: skip
def test_negative_prices_and_settings_are_refused(researcher_api, setting):
    answer = researcher_api.post("/api/evaluators/", judge(**setting), format="json")
    assert answer.status_code == 400 and next(iter(setting)) in str(answer.json())


@pytest.fixture
def meetings(synthetic_source):
    import_elitr_bench(synthetic_source, with_responses=True)
    ensure_metric_evaluators()
    return Dataset.objects.get(version="qa", language="en", split="test2")


@pytest.mark.parametrize("budget", ["-1", "-0.01"])
def test_a_negative_budget_is_refused_on_a_metric_and_on_a_priced_judge(
    researcher_api, meetings, budget
):
    priced = Evaluator.objects.create(
        name="priced judge", kind="llm_rubric",
        config=judge(price_input_per_million=5, price_output_per_million=15)["config"],
    )  # fmt: skip
    before = database_snapshot()
    for evaluator in ("metric: f1", priced.name):
        answer = researcher_api.post(
            "/api/judging-runs/",
            {"evaluator": evaluator, "dataset": meetings.pk, "mode": "st", "budget": budget,
             "confirm_over_budget": True},
            format="json",
        )  # fmt: skip
        assert answer.status_code == 400, (evaluator, answer.status_code, answer.content[:300])
        assert "budget" in str(answer.json())
    assert database_snapshot() == before
    assert not JudgingRun.objects.exists()


@pytest.mark.parametrize("reason", [0, 1.5, True, ["spam"], {"why": "spam"}, "", "   "])
def test_a_reason_is_a_text_that_says_something(researcher_api, two_meetings, reason):
    from annotator.actions.arrival import check_start_assignment
    from tests.annotator.conftest import make_study

    participant = check_start_assignment(make_study(), pid="WORKER1").participant
    before = database_snapshot()
    url = f"/api/participants/{participant.pk}/exclude/"
    answer = researcher_api.post(url, {"reason": reason}, format="json")
    assert answer.status_code == 400 and "reason" in answer.json(), answer.content
    assert database_snapshot() == before
    assert (
        researcher_api.post(url, {"reason": "answered at random"}, format="json").status_code == 200
    )
