"""What the OpenAPI schema declares for the operations whose answers are not
a model's serializer (the schemathesis test checks the answers themselves)."""

import pytest

from analysis.report.selection import MODES, VERSIONS


def operation(openapi_spec: dict, path: str, method: str) -> dict:
    return openapi_spec["paths"][path][method]


def body_schema(openapi_spec: dict, answer: dict, media: str = "application/json") -> dict:
    schema = answer["content"][media]["schema"]
    if "$ref" in schema:
        return openapi_spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


@pytest.mark.parametrize("action", ["open", "pause", "close", "build", "refill"])
def test_study_actions_take_no_body_and_answer_what_they_return(openapi_spec, action):
    post = operation(openapi_spec, f"/api/studies/{{id}}/{action}/", "post")
    assert "requestBody" not in post
    answer = body_schema(openapi_spec, post["responses"]["200"])
    expected = {
        "open": {"status"},
        "pause": {"status"},
        "close": {"status"},
        "build": {"tasks", "items", "responses"},
        "refill": {"released", "open_places", "prolific_places"},
    }[action]
    assert set(answer["properties"]) == expected


def test_study_lists_and_exports_are_what_they_are(openapi_spec):
    for action in ("quality", "feedback"):
        answer = operation(openapi_spec, f"/api/studies/{{id}}/{action}/", "get")["responses"][
            "200"
        ]
        assert answer["content"]["application/json"]["schema"]["type"] == "array"
    export = operation(openapi_spec, "/api/studies/{id}/export/{layout}/", "get")
    assert list(export["responses"]["200"]["content"]) == ["text/csv"]
    layout = next(p for p in export["parameters"] if p["name"] == "layout")
    assert layout["schema"]["enum"] == ["tidy", "wide"]


def test_errors_are_declared(openapi_spec):
    delete = operation(openapi_spec, "/api/studies/{id}/", "delete")["responses"]
    assert {"204", "401", "403", "404", "409"} <= set(delete)
    patch = operation(openapi_spec, "/api/evaluators/{id}/", "patch")["responses"]
    assert {"200", "400", "404", "409"} <= set(patch)
    refill = operation(openapi_spec, "/api/studies/{id}/refill/", "post")["responses"]
    assert "502" in refill
    assert sorted(body_schema(openapi_spec, delete["409"])["required"]) == ["code", "detail"]


def test_the_report_parameters_take_the_values_the_analysis_accepts(openapi_spec):
    parameters = {
        p["name"]: p["schema"]
        for p in operation(openapi_spec, "/api/reports/agreement/", "get")["parameters"]
    }
    assert sorted(parameters["dataset_version"]["enum"]) == sorted(VERSIONS)
    assert sorted(parameters["mode"]["enum"]) == sorted(MODES)
    assert parameters["study"] == {"type": "integer", "minimum": 0}


@pytest.mark.parametrize(
    "path",
    [
        "/api/judging-runs/{id}/cancel/",
        "/api/judging-runs/{id}/resume/",
        "/api/judging-runs/{id}/retry-failed/",
        "/api/runs/{id}/cancel/",
        "/api/runs/{id}/resume/",
    ],
)
def test_run_actions_take_no_body_and_answer_an_outcome(openapi_spec, path):
    post = operation(openapi_spec, path, "post")
    assert "requestBody" not in post
    for status in ("200", "409", "503"):
        assert set(body_schema(openapi_spec, post["responses"][status])["properties"]) == {
            "detail",
            "changed",
            "code",
        }


def test_generation_run_creation_declares_the_run_it_answers(openapi_spec):
    post = operation(openapi_spec, "/api/runs/", "post")
    request = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert request.endswith("/GenerationStart")
    assert post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/GenerationRun"
    )


def test_bodies_that_refuse_unknown_fields_say_so(openapi_spec):
    components = openapi_spec["components"]["schemas"]
    for name in ("Evaluator", "PatchedEvaluator", "Study", "PatchedStudy", "Reason"):
        assert components[name]["additionalProperties"] is False, name
