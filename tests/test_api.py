"""The read-only REST API: permissions, filters, pagination, schema."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    "/api/datasets/",
    "/api/documents/",
    "/api/questions/",
    "/api/systems/",
    "/api/runs/",
    "/api/responses/",
    "/api/evaluators/",
    "/api/judgments/",
]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_anonymous_users_get_nothing(synthetic_data, url):
    response = APIClient().get(url)
    assert response.status_code in (401, 403)
    assert "results" not in response.json()


@pytest.mark.parametrize("url", ENDPOINTS)
def test_gold_annotators_are_refused(synthetic_data, gold_annotator, url):
    client = APIClient()
    client.force_login(gold_annotator)
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", ENDPOINTS)
def test_researchers_read_everything(synthetic_data, researcher, url):
    client = APIClient()
    client.force_login(researcher)
    response = client.get(url)
    assert response.status_code == 200
    assert response.json()["count"] > 0


def test_token_authentication(synthetic_data, researcher):
    token = Token.objects.create(user=researcher)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/datasets/").json()["count"] == 4
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/datasets/").status_code == 401


def test_inactive_researcher_is_refused(synthetic_data, researcher):
    token = Token.objects.create(user=researcher)
    researcher.is_active = False
    researcher.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/datasets/").status_code in (401, 403)


def test_filters_and_nested_data(synthetic_data, researcher):
    client = APIClient()
    client.force_login(researcher)
    who = client.get("/api/questions/", {"question_type": "who"}).json()
    assert who["count"] == 2
    assert {q["answer_position"] for q in who["results"]} == {"S", "B"}
    texts = who["results"][0]["texts"]
    assert {(t["version"], t["language"]) for t in texts} == {
        ("qa", "en"),
        ("conv", "en"),
        ("qa", "cs"),
        ("conv", "cs"),
    }
    responses = client.get("/api/responses/", {"system": "Synthetic-Echo", "mode": "st"}).json()
    assert responses["count"] == 6
    scores = {j["evaluator"] for j in responses["results"][0]["judgments"]}
    assert scores == {"gpt-4-eval", "prometheus-eval", "gold-human-eval", "silver-human-eval"}
    gold = client.get("/api/judgments/", {"evaluator": "gold-human-eval", "score_min": 9}).json()
    assert gold["count"] == 6 and {j["system"] for j in gold["results"]} == {"Synthetic-Echo"}
    search = client.get("/api/questions/", {"search": "deadline"}).json()
    assert search["count"] == 1


def test_document_list_leaves_out_the_text_and_detail_has_it(synthetic_data, researcher):
    client = APIClient()
    client.force_login(researcher)
    listing = client.get("/api/documents/").json()["results"][0]
    assert "text" not in listing and listing["question_count"] == 6
    detail = client.get(f"/api/documents/{listing['id']}/").json()
    assert detail["text"].startswith("(PERSON1) Hi")
    assert detail["word_count"] == len(detail["text"].split())


def test_pagination(synthetic_data, researcher):
    client = APIClient()
    client.force_login(researcher)
    page = client.get("/api/judgments/", {"page": 2}).json()
    assert page["count"] == 72 and len(page["results"]) == 22 and page["next"] is None
    assert client.get("/api/judgments/", {"page": 9}).status_code == 404


def test_read_only(synthetic_data, researcher):
    client = APIClient()
    client.force_login(researcher)
    assert client.post("/api/systems/", {"name": "x"}).status_code == 405


def test_schema_and_docs_are_public():
    client = APIClient()
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"openapi: 3" in schema.content
    assert b"/api/responses/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
