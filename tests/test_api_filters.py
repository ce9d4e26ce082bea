"""Every filter of every list endpoint answers a value it cannot take with 400
and a message naming the filter, never with an empty list or a 500. The
endpoints and their filters come from the OpenAPI schema, so a new filter is
walked without changing this test."""

from __future__ import annotations

import pytest

# Not filters: a page past the end is a 404 and an unknown ordering is ignored
# (core/api.py, LENIENT_QUERY); search is free text.
NOT_FILTERS = {"page", "ordering", "search"}
# A value no filter of Concord takes: not a choice, not a number, not a boolean,
# and not the external id of anything the test stores.
BOGUS = "bogus"


def list_filters(openapi_spec: dict) -> list[tuple[str, str, dict]]:
    """(path, filter, its schema) for every GET without a path parameter."""
    found = []
    for path, operations in sorted(openapi_spec["paths"].items()):
        get = operations.get("get")
        if get is None or "{" in path or path == "/api/schema/":  # (format, lang: not filters)
            continue
        for parameter in get.get("parameters", []):
            if parameter["in"] == "query" and parameter["name"] not in NOT_FILTERS:
                found.append((path, parameter["name"], parameter.get("schema", {})))
    return found


def invalid_value(schema: dict) -> str | None:
    """A value the filter's declared type or choices refuse (None: a free-text
    filter, which any value fits)."""
    if "enum" in schema or schema.get("type") in ("integer", "number", "boolean"):
        return BOGUS
    if schema.get("type") == "array" and invalid_value(schema.get("items", {})) is not None:
        return BOGUS
    return None


@pytest.mark.django_db
def test_every_list_filter_refuses_a_value_it_cannot_take(openapi_spec, researcher_api):
    walked, wrong = [], []
    for path, name, schema in list_filters(openapi_spec):
        value = invalid_value(schema)
        if value is None:
            continue
        walked.append(f"{path}?{name}")
        answer = researcher_api.get(path, {name: value})
        body = answer.json() if answer["Content-Type"].startswith("application/json") else {}
        if answer.status_code != 400 or name not in str(body):  # a message naming the filter
            wrong.append(f"{path}?{name}={value}: {answer.status_code} {body}")
    assert not wrong, "\n".join(wrong)
    # the walk reaches the filters the issue names, so an empty schema cannot pass
    assert {
        "/api/studies/?status",
        "/api/studies/?kind",
        "/api/runs/?mode",
        "/api/evaluators/?kind",
        "/api/judgments/?mode",
        "/api/participants/?flagged",
        "/api/judge-items/?outcome",
    } <= set(walked), walked


@pytest.mark.django_db
def test_choice_filters_declare_their_choices(openapi_spec):
    """So that clients (and the walk above) know what a filter takes."""
    untyped = [
        f"{path}?{name}"
        for path, name, schema in list_filters(openapi_spec)
        if invalid_value(schema) is None and name in CHOICE_FILTERS
    ]
    assert not untyped, untyped


# Filters over a field with choices: they must declare an enum.
CHOICE_FILTERS = {
    "status",
    "kind",
    "mode",
    "rating_type",
    "backend",
    "outcome",
    "version",
    "language",
    "question_type",
    "answer_position",
    "dataset_version",
}


def valid_values(schema: dict) -> list[str]:
    if "enum" in schema:
        return [v for v in schema["enum"] if v]
    return ["true", "false", "1", "0", "TRUE"] if schema.get("type") == "boolean" else []


@pytest.mark.django_db
def test_every_valid_value_is_still_taken(openapi_spec, researcher_api, two_meetings):
    wrong = [
        f"{path}?{name}={value}: {answer.status_code}"
        for path, name, schema in list_filters(openapi_spec)
        for value in valid_values(schema)
        if (answer := researcher_api.get(path, {name: value})).status_code != 200
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.django_db
def test_a_valid_choice_still_filters(researcher_api, two_meetings):
    every = researcher_api.get("/api/responses/", {"mode": "st"}).json()["count"]
    who = researcher_api.get("/api/responses/", {"mode": "st", "question_type": "who"}).json()[
        "count"
    ]
    assert 0 < who < every
    assert (
        researcher_api.get("/api/responses/", {"mode": "mt"}).json()["count"] == 0
    )  # none imported
    assert researcher_api.get("/api/judge-items/", {"outcome": "ok"}).json()["count"] == 0


@pytest.mark.django_db
def test_the_boolean_filter_filters(researcher_api, two_meetings):
    from annotator.actions.arrival import check_start_assignment
    from annotator.models import Participant
    from tests.annotator.conftest import make_study

    crowd_study = make_study()
    flagged = check_start_assignment(crowd_study, pid="FLAGGED").participant
    check_start_assignment(crowd_study, pid="FINE")
    Participant.objects.filter(pk=flagged.pk).update(flagged=True)
    for value, expected in (("true", ["FLAGGED"]), ("0", ["FINE"])):
        rows = researcher_api.get("/api/participants/", {"flagged": value}).json()["results"]
        assert [row["rater"] for row in rows] == expected, value
    rows = researcher_api.get("/api/participants/").json()["results"]
    assert [row["rater"] for row in rows] == ["FLAGGED", "FINE"]  # left out: every one
    empty = researcher_api.get("/api/participants/", {"flagged": ""})
    assert empty.status_code == 400 and "flagged" in empty.json()


@pytest.mark.django_db
def test_every_filter_refuses_an_empty_value(openapi_spec, researcher_api):
    """`?status=` meant a value and sent none: a 400 naming the filter, not every
    row as if filtered."""
    walked, wrong = [], []
    for path, name, _schema in list_filters(openapi_spec):
        if path.startswith("/api/reports/"):
            continue  # a report's form: an empty field is its default (docs/api.md)
        walked.append(f"{path}?{name}")
        answer = researcher_api.get(path, {name: ""})
        body = answer.json() if answer["Content-Type"].startswith("application/json") else {}
        if answer.status_code != 400 or name not in str(body):
            wrong.append(f"{path}?{name}=: {answer.status_code} {body}")
    assert not wrong, "\n".join(wrong)
    assert {"/api/studies/?status", "/api/studies/?kind", "/api/runs/?mode"} <= set(walked)


@pytest.mark.django_db
def test_every_whole_number_filter_refuses_a_fraction(openapi_spec, researcher_api):
    walked, wrong = [], []
    for path, name, schema in list_filters(openapi_spec):
        if schema.get("type") != "integer":
            continue
        walked.append(f"{path}?{name}")
        answer = researcher_api.get(path, {name: "0.5"})
        if answer.status_code != 400 or name not in str(answer.json()):
            wrong.append(f"{path}?{name}=0.5: {answer.status_code}")
    assert not wrong, "\n".join(wrong)
    assert {"/api/questions/?dataset", "/api/runs/?seed"} <= set(walked), walked


@pytest.mark.django_db
def test_an_id_beyond_a_bigint_is_refused_not_a_server_error(openapi_spec, researcher_api):
    """Schemathesis found `?dataset=1454537874460590473216` answered 500 on
    SQLite (OverflowError): no number filter answers such a number with a
    server error, and a related object's id beyond a bigint is a 400 naming
    the filter."""
    huge = str(2**70)
    walked, errors = [], []
    for path, name, schema in list_filters(openapi_spec):
        if schema.get("type") != "integer":
            continue
        walked.append(f"{path}?{name}")
        if researcher_api.get(path, {name: huge}).status_code >= 500:
            errors.append(f"{path}?{name}")
    assert {"/api/questions/?dataset", "/api/responses/?run", "/api/runs/?seed"} <= set(walked)
    assert not errors, "\n".join(errors)
    for path, name in (("/api/questions/", "dataset"), ("/api/responses/", "run")):
        answer = researcher_api.get(path, {name: huge})
        assert answer.status_code == 400 and name in str(answer.json()), answer.content
