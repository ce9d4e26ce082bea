"""Scores become rows in one place: `judging.scores` makes every Judgment and
PairwiseVerdict, and maps raw values onto the common 1-10 scale."""

import ast

import pytest

from judging import scores
from tests.conftest import REPO

PRODUCT = ["runs", "llm", "corpus", "generation", "judging", "annotator", "analysis"]
PRODUCT += ["adaptive", "console"]
ROWS = {"Judgment", "PairwiseVerdict"}


def rows_made_outside_the_writer() -> list[str]:
    found = []
    for app in PRODUCT:
        for path in sorted((REPO / app).rglob("*.py")):
            if "migrations" in path.parts or path == REPO / "judging" / "scores.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.Call):
                    continue
                function = node.func
                # Judgment(...), or Judgment.objects.create / bulk_create / get_or_create(...)
                if isinstance(function, ast.Name) and function.id in ROWS:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {function.id}(...)")
                elif (
                    isinstance(function, ast.Attribute)
                    and function.attr in ("create", "get_or_create", "update_or_create")
                    and isinstance(function.value, ast.Attribute)
                    and isinstance(function.value.value, ast.Name)
                    and function.value.value.id in ROWS
                ):
                    found.append(
                        f"{path.relative_to(REPO)}:{node.lineno} {function.value.value.id}"
                    )
    return found


def test_only_the_writer_makes_score_rows():
    assert rows_made_outside_the_writer() == []


def test_the_check_sees_a_row_made_elsewhere(tmp_path, monkeypatch):
    app = tmp_path / "judging"
    app.mkdir()
    (app / "rogue.py").write_text("def f():\n    return Judgment(score=3)\n")
    monkeypatch.setattr("tests.judging.test_one_score_writer.REPO", tmp_path)
    monkeypatch.setattr("tests.judging.test_one_score_writer.PRODUCT", ["judging"])
    assert rows_made_outside_the_writer() == ["judging/rogue.py:2 Judgment(...)"]


@pytest.mark.parametrize(
    ("raw", "low", "high", "common"),
    [(1, 1, 10, 1.0), (10, 1, 10, 10.0), (0.5, 0, 1, 5.5), (3, 1, 5, 5.5), (4, 1, 7, 5.5)],
)
def test_the_common_scale_is_the_linear_map(raw, low, high, common):
    assert scores.common_score(raw, low, high) == pytest.approx(common)


def test_a_protocol_keeps_its_own_map():
    fields = scores.judgment_fields(1, 2, 4, 1, 5, score=8.0, seed=2023)
    assert (fields["score"], fields["raw_score"], fields["seed"], fields["rater"]) == (
        8.0,
        4,
        2023,
        "",
    )
