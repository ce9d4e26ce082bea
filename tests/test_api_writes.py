"""What the API lets a researcher write: malformed bodies are 400s (never 500s)
and change nothing; judged data cannot be changed or deleted through it."""

import json

import pytest

from corpus.models import Dataset, QuestionText
from generation.models import GenerationRun, Response, System
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db

LLM_CONFIG = {"server": "openai", "model": "gpt-4o", "base_url": "http://127.0.0.1:9/v1"}


@pytest.fixture
def data(synthetic_data):
    """The synthetic data, with more evaluators and systems to write against."""
    Evaluator.objects.create(name="fresh judge", kind="llm_rubric", config=LLM_CONFIG)
    Evaluator.objects.create(name="metric: f1", kind="metric", config={"metric": "f1"})
    System.objects.create(
        name="api-served",
        model_name="m",
        backend="openai",
        config={"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    System.objects.create(
        name="broken-config", model_name="m", backend="openai", config={"temperature": "hot"}
    )
    System.objects.create(name="list-config", model_name="m", backend="imported", config=[1, 2])


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def qa_dataset() -> int:
    return Dataset.objects.get(version="qa", language="en", split="test2").pk


# Raw bodies (str) are sent as they are; anything else as JSON.
BAD_BODIES = {
    "deeply nested": nested(100_000),
    "nested under the limit of Python's parser": nested(990),
    "nested object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "nested config": '{"name": "n", "kind": "metric", "config": ' + nested(500) + "}",
    "not JSON": "{oops",
    "truncated": '{"name": "x"',
    "bad UTF-8": b'{"name": "\xff\xfe"}',
    "NaN": '{"name": "n", "raw_scale_min": NaN}',
    "huge float": '{"name": "n", "kind": "metric", "raw_scale_min": 1e999}',
    "huge integer": '{"name": "n", "kind": "metric", "raw_scale_max": 1' + "0" * 400 + "}",
    "over-long integer": '{"seed": 1' + "0" * 5000 + "}",
    "a list": [1, 2, 3],
    "a list of objects": [{"name": "n", "kind": "metric"}],
    "a string": "just text",
    "a JSON string": '"just text"',
    "a number": "42",
    "null": "null",
    "empty": "",
    "wrong types": {
        "name": ["x"],
        "kind": {"a": 1},
        "raw_scale_min": "low",
        "evaluator": 5,
        "dataset": "first",
        "mode": ["st"],
        "system": {"name": "x"},
        "seed": "early",
    },
    "booleans for numbers": {
        "name": "b",
        "kind": "metric",
        "raw_scale_min": True,
        "evaluator": "metric: f1",
        "dataset": True,
        "mode": "st",
        "system": "api-served",
        "seed": False,
    },
    "NUL characters": {
        "name": "n\x00",
        "kind": "metric",
        "evaluator": "metric: f1\x00",
        "dataset": "QA",
        "mode": "st",
        "system": "api-served\x00",
    },
    "NUL characters in a list and an object": {
        "config": {"metric\x00": "f1"},
        "evaluator": "metric: f1",
        "dataset": "QA",
        "mode": "st",
        "systems": ["Synthetic-Echo\x00"],
    },
    "numbers out of range": {
        "name": "o",
        "kind": "metric",
        "raw_scale_min": 10,
        "raw_scale_max": 1,
        "evaluator": "metric: f1",
        "dataset": 10**30,
        "mode": "st",
        "system": "api-served",
        "seed": 10**30,
        "budget": 10**30,
    },
    "negative and unknown choices": {
        "name": "c",
        "kind": "oracle",
        "evaluator": "no such evaluator",
        "dataset": -1,
        "mode": "xt",
        "system": "no such system",
        "seed": -5,
        "budget": -1,
    },
    "config not an object": {"name": "c", "kind": "metric", "config": [1, 2]},
    "llm config that cannot run": {
        "name": "c",
        "kind": "llm_rubric",
        "config": {"server": "openai", "top_k": 5, "seeds": "abc"},
    },
    "llm config with wrong types": {
        "name": "t",
        "kind": "llm_rubric",
        "config": {**LLM_CONFIG, "temperature": "hot", "seeds": [-1]},
    },
    "origin claimed": {"name": "o", "kind": "imported", "origin": "paper"},
    "system whose config cannot run": {"system": "broken-config", "dataset": "QA", "mode": "st"},
    "system whose config is a list": {"system": "list-config", "dataset": "QA", "mode": "st"},
    "conv in single-turn": {"system": "api-served", "dataset": "CONV", "mode": "st"},
    "evaluator that is no judge": {"evaluator": "gold-human-eval", "dataset": "QA", "mode": "st"},
    "batch for a metric": {
        "evaluator": "metric: f1",
        "dataset": "QA",
        "mode": "st",
        "use_batch": True,
    },
    "systems not a list": {
        "evaluator": "metric: f1",
        "dataset": "QA",
        "mode": "st",
        "systems": "Synthetic-Echo",
    },
    "unknown field": {"name": "u", "kind": "metric", "raw_scale_mn": 0, "colour": "red"},
}

# The fields each target knows: a dict body is cut down to them (so that each
# case tests what it says, not the unknown-field check), except "unknown field".
TARGETS = {
    "post /api/evaluators/": {"name", "kind", "description", "config", "origin"}
    | {"raw_scale_min", "raw_scale_max"},
    "patch evaluator": {"name", "kind", "description", "config", "origin"}
    | {"raw_scale_min", "raw_scale_max"},
    "post /api/judging-runs/": {"evaluator", "dataset", "mode", "systems", "budget"}
    | {"refresh", "use_batch"},
    "post /api/runs/": {"system", "dataset", "mode", "seed"},
}


def body_for(name: str, target: str):
    body = BAD_BODIES[name]
    if not isinstance(body, dict) or name == "unknown field":
        return body
    return {k: v for k, v in body.items() if k in TARGETS[target]}


def send(researcher_api, target: str, body):
    if isinstance(body, dict):
        datasets = {
            "QA": qa_dataset(),
            "CONV": Dataset.objects.get(version="conv", language="en", split="test2").pk,
        }
        body = {k: datasets.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    if target == "patch evaluator":
        url = f"/api/evaluators/{Evaluator.objects.get(name='fresh judge').pk}/"
        return researcher_api.patch(url, raw, content_type="application/json")
    return researcher_api.post(target.split()[1], raw, content_type="application/json")


CASES = [
    (name, target)
    for name in BAD_BODIES
    for target in TARGETS
    # an empty PATCH is a valid PATCH that changes nothing (200)
    if body_for(name, target) not in ({}, "") or not target.startswith("patch")
]


@pytest.mark.parametrize(("name", "target"), CASES)
def test_bad_bodies_answer_400_and_change_nothing(data, researcher_api, name, target):
    before = database_snapshot()
    answer = send(researcher_api, target, body_for(name, target))
    assert answer.status_code == 400, answer.content[:500]
    assert answer.json()  # a message, in JSON
    assert database_snapshot() == before


def test_too_deep_a_body_says_so(data, researcher_api):
    answer = researcher_api.post(
        "/api/evaluators/", nested(100_000), content_type="application/json"
    )
    assert answer.status_code == 400
    assert "nests too deeply" in answer.json()["detail"]


def test_good_bodies_still_work(data, researcher_api):
    created = researcher_api.post(
        "/api/evaluators/",
        {"name": "new judge", "kind": "llm_rubric", "config": LLM_CONFIG, "origin": "concord"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["origin"] == "concord"
    fresh = Evaluator.objects.get(name="fresh judge")
    renamed = researcher_api.patch(
        f"/api/evaluators/{fresh.pk}/",
        {"name": "fresh judge 2", "raw_scale_min": 0, "config": {**LLM_CONFIG, "model": "o"}},
        format="json",
    )
    assert renamed.status_code == 200, renamed.json()
    fresh.refresh_from_db()
    assert (fresh.name, fresh.raw_scale_min, fresh.config["model"]) == ("fresh judge 2", 0, "o")


def test_judged_evaluator_is_frozen_with_409(data, researcher_api, admin_user):
    gpt4 = Evaluator.objects.get(name="gpt-4-eval")
    judgments = Judgment.objects.filter(evaluator=gpt4).count()
    assert judgments > 0
    # the release's evaluators are shared by every project: a researcher may not
    # change them at all, a site admin may change what is not frozen
    assert gpt4.project is None
    assert (
        researcher_api.patch(
            f"/api/evaluators/{gpt4.pk}/", {"description": "x"}, format="json"
        ).status_code
        == 403
    )
    researcher_api.force_login(admin_user)
    before = database_snapshot()
    answer = researcher_api.patch(
        f"/api/evaluators/{gpt4.pk}/",
        {"kind": "metric", "raw_scale_min": -1000, "raw_scale_max": 1000, "name": "renamed-gpt4"},
        format="json",
    )
    assert answer.status_code == 409
    body = answer.json()
    assert sorted(body["frozen_fields"]) == ["kind", "name", "raw_scale_max", "raw_scale_min"]
    assert f"({judgments:,} judgments" in body["detail"]
    assert "description may still change" in body["detail"]
    for change in ({"config": {"x": 1}}, {"origin": "ratings_file"}, {"raw_scale_max": 5}):
        refused = researcher_api.patch(f"/api/evaluators/{gpt4.pk}/", change, format="json")
        assert refused.status_code == 409, change
        assert refused.json()["frozen_fields"] == list(change)
    assert database_snapshot() == before
    # what may change, changes; values equal to the stored ones are no change
    described = researcher_api.patch(
        f"/api/evaluators/{gpt4.pk}/",
        {"description": "GPT-4 as published", "name": "gpt-4-eval", "raw_scale_min": 1},
        format="json",
    )
    assert described.status_code == 200, described.json()
    gpt4.refresh_from_db()
    assert (gpt4.description, gpt4.name, gpt4.kind) == (
        "GPT-4 as published",
        "gpt-4-eval",
        gpt4.kind,
    )


def test_evaluator_with_only_pairwise_verdicts_is_frozen(data, researcher_api):
    from judging.models import PairwiseVerdict

    judge = Evaluator.objects.get(name="fresh judge")
    first, second = Response.objects.all()[:2]
    PairwiseVerdict.objects.create(
        evaluator=judge, response=first, opponent=second, seed=1, order=0, winner="tie"
    )
    answer = researcher_api.patch(f"/api/evaluators/{judge.pk}/", {"name": "x"}, format="json")
    assert answer.status_code == 409 and answer.json()["frozen_fields"] == ["name"]
    assert Evaluator.objects.filter(name="fresh judge").exists()


def test_origin_is_read_only(data, researcher_api):
    fresh = Evaluator.objects.get(name="fresh judge")
    answer = researcher_api.patch(
        f"/api/evaluators/{fresh.pk}/", {"origin": "paper"}, format="json"
    )
    assert answer.status_code == 400 and "origin" in answer.json()
    fresh.refresh_from_db()
    assert fresh.origin == "concord"


def detail_urls() -> list[str]:
    response = Response.objects.filter(judgments__isnull=False).first()
    text = QuestionText.objects.filter(question=response.question).first()
    return [
        f"/api/responses/{response.pk}/",
        f"/api/runs/{response.run_id}/",
        f"/api/judgments/{response.judgments.first().pk}/",
        f"/api/questions/{text.question_id}/",
        f"/api/documents/{text.question.document_id}/",
        f"/api/datasets/{text.dataset_id}/",
        f"/api/systems/{response.run.system_id}/",
        f"/api/evaluators/{Evaluator.objects.get(name='gpt-4-eval').pk}/",
    ]


@pytest.mark.parametrize("method", ["delete", "put", "patch"])
def test_judged_data_cannot_be_changed_or_deleted(data, researcher_api, method):
    before = database_snapshot()
    for url in detail_urls():
        if method == "patch" and url.startswith("/api/evaluators/"):
            continue  # PATCH of an evaluator: the 409 above
        answer = getattr(researcher_api, method)(url, {"text": "edited", "score": 1}, format="json")
        assert answer.status_code == 405, (method, url, answer.status_code)
    for url in ("/api/judgments/", "/api/questions/", "/api/documents/"):
        assert researcher_api.post(url, {"text": "new"}, format="json").status_code == 405, url
    # POST /api/responses/ imports a system's outputs: a body that is no
    # import is refused by name and writes nothing.
    refused = researcher_api.post("/api/responses/", {"text": "new"}, format="json")
    assert refused.status_code == 400 and "text" in refused.json(), refused.json()
    assert database_snapshot() == before


def test_runs_cannot_be_deleted_through_the_api(data, researcher_api):
    run = GenerationRun.objects.first()
    assert researcher_api.delete(f"/api/runs/{run.pk}/").status_code == 405
    assert GenerationRun.objects.filter(pk=run.pk).exists()


def test_html_form_bodies(data, researcher_api):
    """The browsable API posts forms: its CSRF token is no unknown field, and a
    configuration typed into the form is checked like a JSON one."""
    before = database_snapshot()
    deep = researcher_api.post(
        "/api/evaluators/", {"name": "formed", "kind": "metric", "config": nested(100_000)}
    )
    assert deep.status_code == 400 and "config" in deep.json()
    assert database_snapshot() == before
    created = researcher_api.post(
        "/api/evaluators/",
        {
            "name": "formed",
            "kind": "metric",
            "config": '{"metric": "f1"}',
            "csrfmiddlewaretoken": "x",
        },
    )
    assert created.status_code == 201, created.json()
    assert Evaluator.objects.get(name="formed").config == {"metric": "f1"}
