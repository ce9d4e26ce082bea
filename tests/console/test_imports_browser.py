"""A benchmark imported from the console, in Chromium, as a researcher of a
project that is not the default one would: every format Concord reads
(ELITR-Bench's archives, an L-Eval task file, ZeroSCROLLS rows in Parquet, a
generic CSV whose columns have other names), each previewed (first records,
field mapping, what the import would write) before anything is stored, then
the model outputs for it, uploaded from the benchmarks page's next step. Bad
files are refused by their line or field, a file over the upload limit
before a byte is sent (and by the server if sent anyway), and the database
stays as it was."""

from __future__ import annotations

import csv
import json
import re
import zipfile

import pytest
from django.core.management import call_command

from corpus.importers.samples import write_leval_tasks, write_zeroscrolls_task
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Benchmark, Dataset, Document, QuestionText
from corpus.staging import staging_root
from generation.models import GenerationRun, Response
from judging.importing import run_import_job
from judging.models import BenchmarkImport, JudgingRun
from tests.browsing import sign_in
from tests.conftest import tasks_run_eagerly
from users.models import Membership, Project, User

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def own_var(settings, tmp_path):
    """Uploads wait under this test's own var/ (corpus.staging)."""
    settings.VAR_DIR = tmp_path / "var"


def waiting_uploads() -> list:
    root = staging_root()
    return list(root.iterdir()) if root.is_dir() else []


@pytest.fixture
def team_researcher(transactional_db):
    """Rita, researcher of team-b only (not the default project)."""
    team = Project.objects.create(name="team-b", slug="team-b")
    rita = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    Membership.objects.filter(user=rita).delete()
    Membership.objects.create(user=rita, project=team, role="researcher")
    return rita


def snapshot() -> tuple:
    return (
        Benchmark.objects.count(),
        Dataset.objects.count(),
        Document.objects.count(),
        QuestionText.objects.count(),
    )


def upload(page, live_server, format: str, *files, **fields) -> None:
    page.goto(f"{live_server.url}/console/benchmarks/upload/")
    page.select_option("#id_format", format)
    for name, value in fields.items():
        page.fill(f"#id_{name}", value)
    page.set_input_files("#id_upload", [str(f) for f in files])
    page.click("#submit")


def test_each_format_is_previewed_then_imported_from_the_console(
    browser, live_server, team_researcher, tmp_path
):
    page = sign_in(browser, live_server, path="/console/")
    page.click("nav a:has-text('Benchmarks')")
    assert "No benchmark yet" in page.inner_text("main")
    page.click("#import-benchmark")

    # L-Eval: the first records as they are, the format's fixed mapping, the counts
    quality, _ = write_leval_tasks(tmp_path / "leval")
    upload(page, live_server, "leval", quality)
    page.wait_for_selector("#preview-summary")
    assert "THE NIGHT SHIFT AT HARROW RIDGE" in page.inner_text("#preview-rows")
    assert "instructions[i]" in page.inner_text("#preview-mapping")
    assert "2 documents, 3 questions" in page.inner_text("#preview-summary")
    assert snapshot() == (0, 0, 0, 0)  # a preview stores nothing
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr.just-imported")
    assert "Imported L-Eval (test): 2 documents, 3 questions" in page.inner_text("main")
    assert QuestionText.objects.filter(dataset__task="quality").count() == 3
    assert not waiting_uploads()  # the upload is not kept once imported

    # ZeroSCROLLS rows as Parquet, as the Hugging Face dataset stores them
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in write_zeroscrolls_task(tmp_path / "zs").open()]
    parquet = tmp_path / "qasper.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    upload(page, live_server, "zeroscrolls", parquet)
    page.wait_for_selector("#preview-summary")
    assert "input[query_start_index:query_end_index]" in page.inner_text("#preview-mapping")
    assert "qasper" in page.inner_text("#preview-tasks")
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr[data-benchmark=zeroscrolls]")
    assert Dataset.objects.get(benchmark__slug="zeroscrolls").split == "validation"

    # a generic CSV whose columns have their own names: the mapping is guessed,
    # a column it could not guess is chosen by hand, and what is left out is named
    generic = tmp_path / "reports.csv"
    with generic.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["doc_id", "context", "query", "gold", "item", "annotator_note"])
        writer.writerow(
            ["r1", "The plant closed in May.", "When did it close?", "In May", "a", "x"]
        )
        writer.writerow(["r1", "", "What closed?", "The plant", "b", "y"])
    upload(page, live_server, "generic", generic, benchmark="reports")
    page.wait_for_selector("#preview-mapping")
    assert page.input_value("#map-document") == "context"
    assert page.input_value("#map-answer") == "gold"
    assert "annotator_note" in page.inner_text("#left-out")
    page.select_option("#map-question_id", "item")
    page.click("#apply-mapping")
    page.wait_for_selector("#preview-summary")
    assert "1 document, 2 questions" in page.inner_text("#preview-summary")
    assert "annotator_note" in page.inner_text("#left-out") and "item" not in page.inner_text(
        "#left-out"
    )
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr[data-benchmark=reports]")
    stored = QuestionText.objects.filter(dataset__benchmark__slug="reports").order_by("pk")
    assert [(t.question.external_id, t.text) for t in stored] == [
        ("a", "When did it close?"),
        ("b", "What closed?"),
    ]

    # the next step: outputs for this dataset, the dataset already chosen
    page.click("#datasets tr[data-benchmark=reports] a.import-outputs")
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(
        "".join(
            json.dumps({"document_id": "r1", "question_id": q, "response": r, "system": "mine"})
            + "\n"
            for q, r in (("a", "May"), ("b", "A plant"))
        )
    )
    assert "reports" in page.locator("#id_dataset option:checked").inner_text()
    page.set_input_files("#id_file", str(outputs))
    page.click("#submit")
    page.wait_for_selector("#preview-systems")
    assert "mine" in page.inner_text("#preview-systems")
    assert "responses: 2 new" in page.inner_text("#preview-summary")
    assert not GenerationRun.objects.exists()  # the dry run left nothing
    page.click("#confirm-import")
    page.wait_for_url(re.compile(r"/console/runs/generation/\d+/$"))
    run = GenerationRun.objects.get(system__name="mine")
    assert run.project.slug == "team-b"
    assert Response.objects.filter(run=run).count() == 2

    # then judge them (a metric, run in the request) and open the run's report
    page.click("nav a:has-text('Benchmarks')")
    with tasks_run_eagerly():
        page.click("#datasets tr[data-benchmark=reports] a:has-text('Judge')")
        assert "reports" in page.locator("#id_dataset option:checked").inner_text()
        page.select_option("#id_evaluator", label="metric: rouge")
        page.click("#submit")
        page.wait_for_url(re.compile(r"/console/runs/judging/\d+/$"))
    judged = JudgingRun.objects.get(evaluator__name="metric: rouge")
    assert (judged.status, judged.done, judged.project.slug) == ("done", 2, "team-b")
    page.locator("#run-live a.button", has_text="HTML").first.click()
    page.wait_for_url(re.compile(r"/analysis/report/"))
    assert "metric: rouge" in page.inner_text("body")


def test_elitr_archives_are_previewed_then_imported_by_a_worker_with_progress(
    browser, live_server, team_researcher, tmp_path
):
    folder = write_synthetic_elitr(tmp_path / "data", meetings=2)
    archive = tmp_path / "elitr.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(folder).as_posix())
    page = sign_in(browser, live_server, path="/console/benchmarks/upload/")
    page.select_option("#id_format", "elitr_bench")
    page.set_input_files("#id_upload", str(archive))
    page.click("#submit")
    page.wait_for_selector("#preview-summary")
    summary = page.inner_text("#preview-summary")
    assert "test2" in summary and "Responses: " in summary
    assert snapshot() == (0, 0, 0, 0)
    page.click("#confirm-import")
    page.wait_for_url(re.compile(r"/console/benchmarks/imports/\d+/$"))
    job = BenchmarkImport.objects.get()
    assert page.get_attribute("#import-live", "data-status") == "queued"
    run_import_job(job.pk)  # what the worker does with the queued task
    page.wait_for_selector("#import-live[data-status=done]")  # the page follows it
    assert "meetings" in page.inner_text("#import-summary")
    assert page.locator("#next-steps a:has-text('Judge responses')").count() == 1
    assert Document.objects.filter(benchmark__slug="elitr-bench").count() == 2
    assert not waiting_uploads()  # the archive is not kept once imported


def test_bad_files_are_named_by_line_and_nothing_is_stored(
    browser, live_server, team_researcher, tmp_path, settings
):  # noqa: PLR0915 (one journey)
    quality, _ = write_leval_tasks(tmp_path / "leval")
    page = sign_in(browser, live_server, path="/console/benchmarks/upload/")
    upload(page, live_server, "leval", quality)
    page.wait_for_selector("#confirm-import")
    page.click("#confirm-import")
    page.wait_for_selector("#datasets")
    before = snapshot()

    # a line without its outputs: named by file and line; no Import button
    lines = quality.read_text().splitlines()
    broken = json.loads(lines[1])
    del broken["outputs"]
    bad = tmp_path / "quality.jsonl"
    bad.write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    upload(page, live_server, "leval", bad)
    page.wait_for_selector("#preview-error")
    error = page.inner_text("#preview-error")
    assert "quality.jsonl, line 2: 'outputs' must be a list of strings." in error
    assert str(staging_root()) not in error  # the file's name, not where it waits
    assert page.locator("#confirm-import").count() == 0
    page.click("#discard-upload")
    page.wait_for_selector("#upload-form")
    assert snapshot() == before and not waiting_uploads()

    # a generic file whose mapping lacks the question: the field is named
    generic = tmp_path / "g.jsonl"
    generic.write_text(
        json.dumps({"document_id": "d", "document": "t", "ask": "q?", "answer": "a"})
    )
    upload(page, live_server, "generic", generic, benchmark="g")
    page.wait_for_selector("#preview-error")
    assert "choose the column that holds 'question'" in page.inner_text("#preview-error")
    page.select_option("#map-question", "ask")
    page.click("#apply-mapping")
    page.wait_for_selector("#confirm-import")
    page.click("#discard-upload")  # left, not imported: the upload goes
    page.wait_for_selector("#upload-form")
    assert "Upload discarded" in page.inner_text("main")

    # an archive that holds no ELITR-Bench file: the preview says what it looked for
    notes = tmp_path / "notes.zip"
    with zipfile.ZipFile(notes, "w") as out:
        out.writestr("notes.txt", "not a benchmark")
    page.goto(f"{live_server.url}/console/benchmarks/upload/")
    page.select_option("#id_format", "elitr_bench")
    page.set_input_files("#id_upload", str(notes))
    page.click("#submit")
    page.wait_for_selector("#preview-error")
    assert "no en qa question file found" in page.inner_text("#preview-error")
    assert page.locator("#confirm-import").count() == 0
    page.click("#discard-upload")
    page.wait_for_selector("#upload-form")

    # a file over the upload limit: refused in the browser before it is sent
    settings.CONCORD_UPLOAD_MAX_BYTES = 1000
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 5000)
    upload(page, live_server, "leval", big)
    page.wait_for_selector("#upload-status:has-text('larger than the upload limit')")
    assert "nothing was sent" in page.inner_text("#upload-status")
    # ... and by the server, for a browser that sends it anyway (no script)
    page.evaluate("document.querySelector('#upload-form').removeAttribute('data-upload')")
    page.click("#submit")
    page.wait_for_selector("#field-upload .errorlist")
    assert "larger than the upload limit of 1,000 bytes" in page.inner_text("#field-upload")
    assert snapshot() == before and not waiting_uploads()


def test_a_viewer_sees_no_import_and_may_not_post_one(
    browser, live_server, transactional_db, tmp_path, client
):
    team = Project.objects.create(name="team-b", slug="team-b")
    vic = User.objects.create_user("vic", password="pw-vic-123", role="researcher")
    Membership.objects.filter(user=vic).delete()
    Membership.objects.create(user=vic, project=team, role="viewer")
    page = sign_in(browser, live_server, "vic", "pw-vic-123", path="/console/benchmarks/")
    assert page.locator("#import-benchmark").count() == 0
    client.force_login(vic)
    quality, _ = write_leval_tasks(tmp_path / "leval")
    with quality.open("rb") as handle:
        answer = client.post("/console/benchmarks/upload/", {"format": "leval", "upload": handle})
    assert answer.status_code == 403 and "Viewers may read benchmarks" in answer.content.decode()
    assert snapshot() == (0, 0, 0, 0)


def test_a_ruler_task_file_is_previewed_then_imported_as_its_task_at_its_length(
    browser, live_server, team_researcher, tmp_path
):
    from corpus.ruler.prepare import write_data
    from corpus.ruler.tokens import token_counter

    (file,) = write_data(tmp_path, ["vt"], [1024], 3, token_counter("tiktoken:cl100k_base"))
    page = sign_in(browser, live_server, path="/console/")
    upload(page, live_server, "ruler", file)  # no task: its length is unknown
    page.wait_for_selector("#preview-error, .errorlist, #preview-summary")
    assert "give the task with its length" in page.inner_text("main")
    assert snapshot() == (0, 0, 0, 0)
    upload(page, live_server, "ruler", file, task="vt-1024")
    page.wait_for_selector("#preview-summary")
    assert "3 documents, 3 questions" in page.inner_text("#preview-summary")
    assert "outputs (the needle tasks: every one" in page.inner_text("#preview-mapping")
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr[data-benchmark=ruler]")
    dataset = Dataset.objects.get(benchmark__slug="ruler")
    assert (dataset.split, dataset.task) == ("validation", "vt-1024")
    first = QuestionText.objects.filter(dataset=dataset).order_by(
        "question__document__external_id"
    )[0]
    assert first.prompt["max_seq_length"] == 1024 and first.prompt["ruler_task"] == "vt"


def test_a_babilong_file_is_previewed_then_imported_as_its_task_at_its_length(
    browser, live_server, team_researcher, tmp_path
):
    rows = [
        {"input": "Mary went to the garden. The rain fell.", "question": "Where is Mary?",
         "target": "garden"},
        {"input": "John moved to the office.", "question": "Where is John?", "target": "office"},
    ]  # fmt: skip
    file = tmp_path / "rows.json"
    file.write_text(json.dumps(rows), encoding="utf-8")
    page = sign_in(browser, live_server, path="/console/")
    upload(page, live_server, "babilong", file)  # no task: the name does not say it
    page.wait_for_selector("#preview-error, .errorlist, #preview-summary")
    assert "give them (--task qa1-4k)" in page.inner_text("main")
    assert snapshot() == (0, 0, 0, 0)
    upload(page, live_server, "babilong", file, task="qa1-1M")  # as the authors write it
    page.wait_for_selector("#preview-summary")
    assert "2 documents, 2 questions" in page.inner_text("#preview-summary")
    assert "target" in page.inner_text("#preview-mapping")
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr[data-benchmark=babilong]")
    dataset = Dataset.objects.get(benchmark__slug="babilong")
    assert (dataset.split, dataset.task) == ("test", "qa1-1m")
    first = QuestionText.objects.filter(dataset=dataset).order_by("question__external_id")[0]
    assert first.prompt == {"babilong_task": "qa1", "length": "1M", "tokens": 1_000_000}
    assert first.reference_answer == "garden"


def test_a_loogle_cloze_file_is_previewed_then_imported_with_its_masks(
    browser, live_server, team_researcher, tmp_path
):
    pairs = [
        {"Q": "<mask-0> sang in <mask-1>.", "S": ["Britney sang."],
         "A": {"<mask-0>": "Britney Spears", "<mask-1>": "Kentwood"}},
        {"Q": "<mask-0> left.", "S": ["She left."], "A": {"<mask-0>": "Britney Spears"}},
    ]  # fmt: skip
    line = {"input": "Britney sang in Kentwood.\nBritney sang.\nShe went.", "title": "Its-Britney",
            "qa_pairs": repr(pairs), "output": "None"}  # fmt: skip
    file = tmp_path / "lines.jsonl"
    file.write_text(json.dumps(line) + "\n", encoding="utf-8")
    page = sign_in(browser, live_server, path="/console/")
    upload(page, live_server, "loogle", file)  # no task: the name does not say it
    page.wait_for_selector("#preview-error, .errorlist, #preview-summary")
    assert "give it (--task shortdep_qa" in page.inner_text("main")
    assert snapshot() == (0, 0, 0, 0)
    upload(page, live_server, "loogle", file, task="shortdep_cloze")
    page.wait_for_selector("#preview-summary")
    assert "1 document, 2 questions" in page.inner_text("#preview-summary")
    assert "qa_pairs" in page.inner_text("#preview-mapping")
    page.click("#confirm-import")
    page.wait_for_selector("#datasets tr[data-benchmark=loogle]")
    dataset = Dataset.objects.get(benchmark__slug="loogle")
    assert (dataset.split, dataset.task) == ("test", "shortdep_cloze")
    texts = QuestionText.objects.filter(dataset=dataset).order_by("question__external_id")
    assert [json.loads(t.reference_answer) for t in texts] == [p["A"] for p in pairs]
    assert texts[0].prompt == {"title": "Its-Britney", "evidence": ["Britney sang."], "type": ""}

    # the document viewer shows each question's evidence and where the text holds it
    document = Document.objects.get(benchmark__slug="loogle")
    page.goto(f"{live_server.url}/console/documents/{document.pk}/")
    evidence = page.locator("#q-1-1 .evidence")
    assert "Evidence (1 sentence, as the authors mark it)" in evidence.inner_text()
    assert "(not found in the text)" in page.inner_text("#q-1-2 .evidence")  # "She left." is not
    evidence.locator("a.evidence-link").click()
    assert page.url.endswith("#turn-1")  # the line that holds "Britney sang." whole


def test_ruler_is_made_from_the_console_by_a_worker_as_make_ruler_makes_it(
    browser, live_server, team_researcher, tmp_path
):
    """The console's "Make RULER": a bad order is refused on the form with the
    command's words and queues nothing; a good one is made by a worker, the
    page follows it, and the data are what `make_ruler` makes with the same
    order."""
    page = sign_in(browser, live_server, path="/console/")
    page.click("nav a:has-text('Benchmarks')")
    page.click("#make-ruler")
    # vt: the needle tasks first build a word list of 6.2 million words (20 s alone)
    page.uncheck("input[name=tasks][value=niah_single_1]")
    page.check("input[name=tasks][value=vt]")
    page.fill("#id_lengths", "1024,4k")
    page.fill("#id_samples", "2")
    page.click("#submit")
    page.wait_for_selector("#form-errors")
    assert "whole numbers with commas" in page.inner_text("#form-errors")
    assert BenchmarkImport.objects.count() == 0
    page.fill("#id_lengths", "1024,2048")
    page.fill("#id_seed", "7")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/benchmarks/imports/\d+/$"))
    assert "RULER, made here" in page.inner_text("h1")
    job = BenchmarkImport.objects.get()
    assert job.options == {
        "tasks": ["vt"], "lengths": [1024, 2048], "samples": 2, "seed": 7,
        "tokenizer": "tiktoken:cl100k_base",
    }  # fmt: skip
    run_import_job(job.pk)  # what the worker does with the queued task
    page.wait_for_selector("#import-live[data-status=done]")
    assert "2 task files, 4 documents, 4 questions" in page.inner_text("#import-summary")
    datasets = Dataset.objects.filter(benchmark__slug="ruler").order_by("task")
    assert [d.task for d in datasets] == ["vt-1024", "vt-2048"]
    call_command(
        "make_ruler", "--output", str(tmp_path / "cli"), "--tasks", "vt",
        "--lengths", "2048", "--samples", "2", "--seed", "7", stdout=None,
    )  # fmt: skip
    made = tmp_path / "cli" / "2048" / "data" / "vt" / "validation.jsonl"
    lines = [json.loads(line) for line in made.read_text().splitlines()]
    stored = QuestionText.objects.filter(dataset=datasets[1]).select_related("question__document")
    assert sorted(t.question.document.text for t in stored) == sorted(x["input"] for x in lines)
