"""Runs in the ELITR-Bench JSON layout: the paper's file comes back out
identical, and an exported Concord run imports back."""

import json
import zipfile

import pytest
from django.core.management import CommandError, call_command

from generation.models import GenerationRun, Response
from judging.exports import export_runs
from judging.importing import import_elitr_bench

pytestmark = pytest.mark.django_db

PAPER = ("gpt-4-eval", "prometheus-eval", "gold-human-eval", "silver-human-eval")


def test_the_paper_all_eval_file_round_trips(elitr_data, tmp_path):
    import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
    runs = list(
        GenerationRun.objects.filter(
            dataset__version="qa",
            dataset__language="en",
            dataset__split="test2",
            mode="st",
            system__name__in=["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"],
        )
    )
    exported = export_runs(runs, list(PAPER))
    with zipfile.ZipFile(elitr_data / "generated-responses.zip") as archive:
        original = json.loads(
            archive.read("generated-responses/elitr-bench-qa_test2_st_all-eval.json", pwd=b"utter")
        )
    assert exported == original


def test_export_command_and_reimport(two_meetings, tmp_path):
    runs = GenerationRun.objects.filter(dataset__split="test2", mode="st")
    ids = ",".join(str(r.pk) for r in runs)
    call_command(
        "export_elitr_responses",
        "--runs",
        ids,
        "--evaluators",
        "gpt-4-eval",
        "--output",
        str(tmp_path),
    )
    path = tmp_path / "elitr-bench-qa_test2_st_gpt-4-eval.json"
    data = json.loads(path.read_text())
    first = data["meetings"][0]["questions"][0]["generated-responses"][0]
    assert set(first) == {"model", "generated-response", "gpt-4-eval_score"}
    # a copy with a new judge's scores imports back (any <evaluator>_score field)
    for meeting in data["meetings"]:
        for question in meeting["questions"]:
            for response in question["generated-responses"]:
                response["my-judge_score"] = "7"
    source = tmp_path / "source"
    (source / "generated-responses").mkdir(parents=True)
    (source / "generated-responses" / path.name).write_text(json.dumps(data))
    from corpus.importers.synthetic import write_synthetic_elitr

    write_synthetic_elitr(tmp_path / "corpus", meetings=2)
    import shutil

    for folder in ("data", "czech", "ELITR-English-test"):
        shutil.copytree(tmp_path / "corpus" / folder, source / folder)
    summary = import_elitr_bench(source, with_responses=True)
    assert summary.counts["judgments"].created == 36  # the new judge's, nothing else new
    assert Response.objects.filter(judgments__evaluator__name="my-judge").count() == 36
    with pytest.raises(CommandError, match="No such run"):
        call_command("export_elitr_responses", "--runs", "99999", "--output", str(tmp_path))
