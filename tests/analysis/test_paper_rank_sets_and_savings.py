"""The report's prediction-powered rank-sets (analysis.report.prediction_
powered) and savings ceiling (analysis.statistics.savings) on the paper's
data: gpt-4-eval and prometheus-eval against the gold annotator on test2's
three systems."""

from __future__ import annotations

import pytest

from analysis.report.build import build_report
from analysis.report.render import to_html
from analysis.report.selection import Selection
from judging.importing import import_elitr_bench
from tests.conftest import rolled_back_once

pytestmark = pytest.mark.django_db

PAPER_SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")


@pytest.fixture(scope="module")
def paper_once(django_db_setup, django_db_blocker, elitr_data):
    with rolled_back_once(django_db_blocker):
        import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
        yield


@pytest.fixture
def paper(paper_once, db):
    return None


def test_rank_sets_on_the_paper_data(paper):
    """40 labelled questions of 130 (the default): both judges' rank-sets
    hold the gold's ranks, lambda in [0, 1], and no set wider than the
    gold's alone; the report page shows them."""
    selection = Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)
    report = build_report(selection)
    part = report.model_dump(mode="json", by_alias=True)["rankings"]["prediction_powered"]
    assert part["reference"] == "gold-human-eval"
    assert sorted(part["judges"]) == ["gpt-4-eval", "prometheus-eval"]
    for found in part["judges"].values():
        assert found["labelled_questions"] == 40 and found["questions"] == 130
        # every question answered by all three systems: three battles each
        assert found["battles"] == {"labelled": 120, "unlabelled": 270}
        assert found["labelled_meetings"] == 8 and found["ci_note"] is None
        powered, alone = found["prediction_powered"], found["humans_alone"]
        assert 0.0 <= powered["lambda"] <= 1.0 and alone["lambda"] is None
        assert [s["system"] for s in powered["systems"]] == [
            "GPT-4",
            "Vicuna-13B-v1.5",
            "LongAlpaca-7B",
        ]
        for side in (powered, alone):
            assert all(s["holds"] for s in side["systems"])
            assert all(s["se"] > 0 for s in side["systems"])
        assert powered["mean_rank_set_size"] <= alone["mean_rank_set_size"]
        # the all-label win rates: the gold's, the same for every judge
        truth = {s["system"]: s["all_labels_win_rate"] for s in powered["systems"]}
        assert truth["GPT-4"] == pytest.approx(0.7346153846, abs=1e-9)
    page = to_html(report)
    section = page[page.index('id="prediction-powered-ranking"') :]
    for judge in ("gpt-4-eval", "prometheus-eval"):
        assert f"{judge}</b>: GPT-4 {{1}}, Vicuna-13B-v1.5 {{2}}, LongAlpaca-7B {{3}}" in section
    assert "0.73, 1</td><td>yes</td>" in section


def test_too_few_labelled_questions_give_no_rank_set(paper):
    """5 labelled questions lie in at most 5 meetings, below the 6 three
    systems need: the win rates are given, the rank-sets are not."""
    selection = Selection(
        dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS, ppi_labelled=5
    )
    part = build_report(selection).model_dump(mode="json", by_alias=True)["rankings"][
        "prediction_powered"
    ]
    found = part["judges"]["gpt-4-eval"]
    assert found["ci_note"].startswith("not enough labelled meetings for rank-sets")
    assert found["battles"]["labelled"] == 15
    assert all(
        s["rank_set"] is None and s["holds"] is None for s in found["prediction_powered"]["systems"]
    )


def test_the_savings_ceiling_on_the_paper_data(paper):
    """gpt-4-eval's scores correlate with the gold's within each system
    (r about 0.8): at most about two thirds fewer gold ratings, with an
    interval from the 8 meetings; prometheus-eval's far less."""
    selection = Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)
    report = build_report(selection)
    ceiling = report.model_dump(mode="json", by_alias=True)["diagnostics"]["savings"]
    gpt4, prometheus = ceiling["gpt-4-eval"], ceiling["prometheus-eval"]
    assert gpt4["responses"] == 390 and gpt4["clusters"] == 8 and gpt4["ci_note"] is None
    assert 0.7 < gpt4["within_system_r"] < 0.9
    low, high = gpt4["share_saved_ci95"]
    assert 0 < low < gpt4["share_saved"] < high <= 1
    assert gpt4["labels_worth"] == pytest.approx(1 / (1 - gpt4["share_saved"]))
    assert prometheus["share_saved"] < gpt4["share_saved"] / 2
    page = to_html(report)
    table = page[page.index('id="savings"') :]
    share = f"{gpt4['share_saved']:.0%}"
    assert f"<td>gpt-4-eval</td><td>{gpt4['within_system_r']:.2f}" in table
    assert share in table.split("</tr>")[1]


def test_length_controlled_rankings_on_the_paper_data(paper):
    """Asked for (length_control=1): every evaluator's ranking from scores
    also comes with the answers' length difference held fixed, and its
    weight; with style_control=1, with the answers' markdown held fixed too;
    not asked, the reason says how to ask."""
    plain = build_report(
        Selection(dataset_version="qa", split="test2", mode="st", systems=PAPER_SYSTEMS)
    )
    assert "length_control=1" in plain.rankings.length_controlled.reason
    assert "style_control=1" in plain.rankings.style_controlled.reason
    selection = Selection(
        dataset_version="qa",
        split="test2",
        mode="st",
        systems=PAPER_SYSTEMS,
        length_control=True,
        style_control=True,
    )
    report = build_report(selection)
    assert report.stamp.selection.length_control is True
    assert report.stamp.selection.style_control is True
    controlled = report.model_dump(mode="json", by_alias=True)["rankings"]["length_controlled"]
    assert set(controlled) == {
        "gold-human-eval",
        "silver-human-eval",
        "gpt-4-eval",
        "prometheus-eval",
    }
    gold = controlled["gold-human-eval"]
    assert gold["battles"] == 390 and gold["clusters"] == 8
    # 8 meetings: the ratings and the length's weight, no interval (10 needed)
    assert gold["ci_note"].startswith(
        "not enough meetings for a style-controlled interval: 8, 2 more"
    )
    (length,) = gold["covariates"]
    assert length["name"] == "length" and length["ci95"] == [None, None]
    assert -1.0 < length["weight"] < 1.0
    assert [s["system"] for s in gold["systems"]][0] == "GPT-4"
    assert all(s["rank_set"] == [None, None] for s in gold["systems"])
    page = to_html(report)
    section = page[page.index('id="length-controlled"') :]
    assert (
        "The length difference&#x27;s weight" in section
        or "The length difference's weight" in section
    )
    # style-controlled: the length and the markdown elements the answers differ in
    styled = report.model_dump(mode="json", by_alias=True)["rankings"]["style_controlled"]
    gold = styled["gold-human-eval"]
    # the answers have list items and bold spans (GPT-4's most), no header
    assert [c["name"] for c in gold["covariates"]] == ["length", "lists", "bold"]
    assert gold["covariates_left_out"] == ["headers"]
    assert gold["ci_note"].startswith("no interval for style control beyond the length")
    assert [s["system"] for s in gold["systems"]] == ["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"]
    section = page[page.index('id="style-controlled"') :]
    assert "The lists difference" in section and "Left out: headers" in section
