"""Reports end to end: command, page, API, formats, stamps; human-study ratings
in the report; ratings imported from files."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from analysis.report.build import build_report
from analysis.report.report_types import NotComputable
from analysis.report.selection import Selection
from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from judging.models import Judgment
from tests.analysis.report_csv import preamble_and_rows, table_rows
from tests.annotator.conftest import make_study
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


def test_every_format_from_the_command(two_meetings, tmp_path):
    for fmt in ("html", "json", "csv", "csv-wide", "latex"):
        out = tmp_path / f"report.{fmt}"
        call_command(
            "agreement_report",
            "--format",
            fmt,
            "--output",
            str(out),
            "--dataset-version",
            "qa",
            "--split",
            "test2",
            "--mode",
            "st",
        )
        text = out.read_text()
        if fmt == "html":
            assert "data:image/png;base64," in text  # plots embedded
            assert 'src="http' not in text and "<script src" not in text  # self-contained
            assert "Agreement report" in text and "Synthetic-Echo" in text
        elif fmt == "json":
            report = json.loads(text)
            assert set(report["mean_scores"]["Synthetic-Echo"]) == {
                "gold-human-eval",
                "gpt-4-eval",
                "prometheus-eval",
                "silver-human-eval",
            }
            assert report["mean_scores"]["Synthetic-Echo"]["gold-human-eval"] == 9.0
            assert report["correlations"]["pearson"]["gpt-4-eval"]["gold-human-eval"] > 0.9
            assert report["stamp"]["selection"]["split"] == "test2"
            assert len(report["stamp"]["data_sha256"]) == 64
            assert report["stamp"]["packages"]["pingouin"]
        elif fmt == "csv":
            preamble, rows = preamble_and_rows(text)
            assert len(rows) == 2 * 6 * 3 * 4
            assert any(
                line.startswith("# reference: gold-human-eval: 36 of 36 responses")
                for line in preamble
            )
        elif fmt == "csv-wide":
            rows = table_rows(text)
            assert len(rows) == 36 and "gold-human-eval" in rows[0]
        else:
            assert r"\begin{tabular}" in text and "Synthetic-Echo" in text


def test_bad_selections_are_refused(two_meetings, tmp_path):
    out = str(tmp_path / "r.json")
    with pytest.raises(CommandError, match="Unknown evaluator"):
        call_command(
            "agreement_report", "--format", "json", "--output", out, "--evaluators", "gpt-5-eval"
        )
    with pytest.raises(CommandError, match="study 'x'"):
        call_command("agreement_report", "--format", "json", "--output", out, "--study", "x")
    with pytest.raises(CommandError, match="no such folder"):
        call_command(
            "agreement_report", "--format", "json", "--output", str(tmp_path / "missing" / "r.json")
        )


def test_empty_selection_explains_itself(two_meetings):
    report = build_report(Selection(split="test2", mode="mt"))  # valid, but nothing matches
    assert report.counts.judgments == 0
    assert report.scope.reference is None and report.scope.responses == 0
    assert report.mean_scores == NotComputable.because("empty selection: no judgment matches it")
    assert json.loads(report.to_json())["mean_scores"] == {
        "computable": False,
        "reason": "empty selection: no judgment matches it",
    }


def test_stamp_changes_with_the_data_only(two_meetings):
    first = build_report(Selection(split="test2")).stamp
    again = build_report(Selection(split="test2")).stamp
    assert first.data_sha256 == again.data_sha256
    judgment = Judgment.objects.filter(evaluator__name="gpt-4-eval").first()
    Judgment.objects.filter(pk=judgment.pk).update(score=1 + (judgment.score % 9))
    assert build_report(Selection(split="test2")).stamp.data_sha256 != first.data_sha256


def test_page_and_api_permissions(two_meetings, client, researcher, gold_annotator):
    assert client.get("/analysis/report/").status_code == 302  # to the login
    client.force_login(gold_annotator)
    assert client.get("/analysis/report/").status_code == 403
    client.force_login(researcher)
    page = client.get("/analysis/report/", {"split": "test2"})
    assert page.status_code == 200 and b"Mean score per system and evaluator" in page.content
    latex = client.get("/analysis/report/", {"format": "latex"})
    today = timezone.localdate().isoformat()
    # no selection: the default one, named after its setting
    assert (
        latex["Content-Disposition"]
        == f'attachment; filename="concord-report-elitr-bench-qa-test2-st-{today}.tex"'
    )
    assert client.get("/analysis/report/", {"mode": "xx"}).status_code == 400
    api = APIClient()
    assert api.get("/api/reports/agreement/").status_code == 401
    api.force_login(researcher)
    body = api.get("/api/reports/agreement/", {"systems": "Synthetic-Echo,Synthetic-Hedge"}).json()
    assert set(body["mean_scores"]) == {"Synthetic-Echo", "Synthetic-Hedge"}
    assert api.get("/api/reports/agreement/", {"dataset_version": "chat"}).status_code == 400


def test_crowd_study_ratings_reach_the_report(two_meetings):
    # these simulated raters answer at once: no speed threshold (not what is tested here)
    study = make_study(raters=3, min_median_seconds=0)
    quality = {"Synthetic-Echo": 9, "Synthetic-Hedge": 2, "Synthetic-Terse": 5}
    echo_ratings: dict[int, list[int]] = {}
    for number, pid in enumerate(("P1", "P2", "P3", "P4", "P5", "P6")):
        assignment = check_start_assignment(study, pid=pid)
        for position, item_id in enumerate(assignment.item_order, 1):
            item = study.items.select_related("response__run__system").get(pk=item_id)
            system = item.response.run.system.name
            # the item order is shuffled per participant, so which responses get
            # the extra point differs from run to run
            score = min(10, quality[system] + (number + position) % 2)
            check_rate_item(assignment, position, score=score)
            if system == "Synthetic-Echo":
                echo_ratings.setdefault(item.response_id, []).append(score)
        check_complete_assignment(assignment)
    report = build_report(Selection(study=study.pk))
    crowd = "crowd human (Crowd pilot)"
    assert crowd in report.evaluators
    assert report.counts.raters[crowd] == 6
    agreement = report.rater_agreement[crowd]
    meeting = agreement.per_meeting["meeting_en_synthetic_001"]
    assert (meeting.items, meeting.raters) == (18, 3)
    assert meeting.forms[4].form == "ICC(A,k)" and meeting.forms[4].icc > 0.9
    assert agreement.overall.raters_per_item == 3
    assert agreement.krippendorff_alpha_interval.alpha > 0.9
    # the crowd score of a response is the mean of its raters; a system's score
    # is the mean over its responses
    per_response = [sum(scores) / len(scores) for scores in echo_ratings.values()]
    assert {len(scores) for scores in echo_ratings.values()} == {3}
    expected = sum(per_response) / len(per_response)
    assert 9 < expected < 10
    assert report.mean_scores["Synthetic-Echo"][crowd] == pytest.approx(expected, abs=1e-9)
    assert report.correlations.pearson[crowd]["gold-human-eval"] > 0.95


def write(path, text):
    path.write_text(text)
    return path


def test_import_external_ratings(two_meetings, tmp_path):
    from generation.models import Response

    response = Response.objects.filter(run__system__name="Synthetic-Echo").first()
    good = write(
        tmp_path / "ratings.csv",
        (
            "response,system,dataset_version,split,mode,meeting,question_id,evaluator,rater,score,scale\n"
            f"{response.pk},,,,,,,expert-panel,ann1,4,1-5\n"
            ",Synthetic-Hedge,qa,test2,st,meeting_en_synthetic_002,3,expert-panel,ann1,1,1-5\n"
            ",Synthetic-Hedge,qa,test2,st,meeting_en_synthetic_002,3,expert-panel,ann2,2,1-5\n"
        ),
    )
    call_command("import_ratings", str(good))
    judgments = Judgment.objects.filter(evaluator__name="expert-panel").order_by("raw_score")
    assert [(j.raw_score, j.score) for j in judgments] == [(1, 1), (2, 3.25), (4, 7.75)]
    before = database_snapshot()
    call_command("import_ratings", str(good))
    assert database_snapshot() == before
    report = build_report(Selection(evaluators=("expert-panel",)))
    assert report.counts.raters == {"expert-panel": 2}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("response,evaluator,score\n999999,x,5\n", "line 2: no such response"),
        ("response,evaluator,score\n1,x,11\n", "line 2: score '11' is not a number from 1 to 10"),
        ("response,evaluator,score,scale\n1,x,3,5-1\n", "scale '5-1' is not 'MIN-MAX'"),
        ("response,evaluator,score\n1,,3\n", "'evaluator' is missing"),
        ("evaluator,score\nx,3\n", "give 'response' (an id) or all of"),
        ("response,evaluator,score,colour\n1,x,3,red\n", "unknown field(s) colour"),
        ("response,evaluator,score\n1,live-judge,3\n", "did not come from a ratings file"),
        (
            "response,evaluator,rater,score\n1,gold-human-eval,zed,3\n",
            "did not come from a ratings file",
        ),
        ("response,evaluator,score\n1,gpt-4-eval,1\n", "did not come from a ratings file"),
        ("response,evaluator,score\n1,filed-judge,6\n", "already holds score 5"),
        ("response,evaluator,rater,score\n1,x,a,3\n1,x,a,4\n", "line 3: the same evaluator"),
    ],
)
def test_bad_rating_files_change_nothing(two_meetings, tmp_path, body, message):
    from generation.models import Response
    from judging.models import Evaluator

    Evaluator.objects.create(name="live-judge", kind="llm_rubric")
    first = (
        Response.objects.filter(judgments__evaluator__name="gpt-4-eval", judgments__score__gt=1)
        .order_by("pk")
        .first()
        .pk
    )
    # an evaluator that came from an earlier ratings file: its scores are never overwritten
    call_command(
        "import_ratings",
        str(write(tmp_path / "ok.csv", f"response,evaluator,score\n{first},filed-judge,5\n")),
    )
    path = write(tmp_path / "bad.csv", body.replace("\n1,", f"\n{first},"))
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_ratings", str(path))
    assert message in str(error.value)
    assert database_snapshot() == before


def test_jsonl_ratings(two_meetings, tmp_path):
    from generation.models import Response

    ids = list(Response.objects.values_list("pk", flat=True)[:2])
    path = write(
        tmp_path / "r.jsonl",
        "\n".join(
            json.dumps({"response": i, "evaluator": "another-judge", "score": 7}) for i in ids
        )
        + "\n{oops\n",
    )
    with pytest.raises(CommandError, match="line 3: not valid JSON"):
        call_command("import_ratings", str(path))
    path.write_text(
        "\n".join(
            json.dumps({"response": i, "evaluator": "another-judge", "score": 7}) for i in ids
        )
    )
    call_command("import_ratings", str(path))
    assert Judgment.objects.filter(evaluator__name="another-judge").count() == 2


def test_the_reference_is_chosen_by_kind_and_coverage_never_by_a_name(two_meetings):
    from analysis.report.scope import EvaluatorInfo, choose_reference

    info = {
        "golden-judge": EvaluatorInfo("imported", 1, 9),  # a ratings file: not a human kind
        "gold-human-eval": EvaluatorInfo("gold_human", 1, 3),
        "silver-human-eval": EvaluatorInfo("crowd_human", 10, 4),
        "gold human (new study)": EvaluatorInfo("gold_human", 1, 20),
    }
    full = {"golden-judge": 36, "gold-human-eval": 36, "silver-human-eval": 36}
    humans = ["gold-human-eval", "silver-human-eval"]
    assert choose_reference(full, humans, info) == "gold-human-eval"  # experts before crowd
    # a newer expert study covering as much does not take over: the oldest wins ties
    both = full | {"gold human (new study)": 36}
    assert choose_reference(both, [*humans, "gold human (new study)"], info) == "gold-human-eval"
    # covering more does
    wider = full | {"gold human (new study)": 40}
    assert (
        choose_reference(wider, [*humans, "gold human (new study)"], info)
        == "gold human (new study)"
    )
    assert choose_reference(full, [], info) is None
    report = build_report(Selection(split="test2"))
    assert report.scope.reference == "gold-human-eval"
    assert report.scope.reference_coverage == "gold-human-eval: 36 of 36 responses"
    chosen = build_report(Selection(split="test2", reference="silver-human-eval"))
    assert chosen.scope.reference == "silver-human-eval"
    assert chosen.scope.reference_rule == "chosen for this report"
