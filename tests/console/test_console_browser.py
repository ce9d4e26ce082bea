"""A researcher runs a study and two runs from the console, in headless
Chromium (Debian's), each effect checked in the database:

signs in, creates a study, opens it, watches it fill while participants
arrive through the participant pages, excludes one, starts a metric run
(eager: the worker is not the point there), starts an LLM judge run against
the fake OpenAI server on a real Celery worker (Redis), watches its progress
and the worker on the workers panel, cancels it, resumes it to the end, and
downloads the study's report in every format. Also: the console at phone
width, and the document viewer's search and question links.
"""

from __future__ import annotations

import contextlib
import re
import uuid

import pytest

from annotator.models import Participant, Study
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Document
from judging.importing import import_elitr_bench
from judging.models import Evaluator, JudgingRun, Judgment
from llm.models import LLMCall
from tests.annotator.conftest import entry_url
from tests.conftest import port_open, require, tasks_run_eagerly
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from tests.workers import app_sends_to, redis_url, start_worker, stop, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def data(transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


def sign_in(browser, live_server, width=1280, height=900):
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(live_server.url + "/accounts/login/?next=/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "pw-rita-123")
    page.click("#sign-in")
    page.wait_for_url(re.compile(r"/console/$"))
    return page


def rate_everything(browser, live_server, study: Study, pid: str, score: str) -> None:
    """A participant from Prolific: consent, rate every item by clicking, finish."""
    context = browser.new_context()
    context.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<h1>done</h1>"),
    )
    page = context.new_page()
    page.goto(live_server.url + entry_url(study, pid))
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(re.compile(r"/item/1/$"))
    while "/finish/" not in page.url:
        position = page.inner_text("#position")
        page.click(f"label.score:has-text('{score}')")
        page.wait_for_selector(f"#status:has-text('Saved: {score}')")
        page.click("#next")
        page.wait_for_function(
            "p => !document.querySelector('#position') || "
            "document.querySelector('#position').innerText !== p",
            arg=position,
        )
    page.click("#finish")
    page.wait_for_url(re.compile(r"/done/$"))
    context.close()


def test_a_researcher_runs_a_study_and_runs_from_the_console(
    browser, live_server, data, researcher, tmp_path, monkeypatch
):
    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    page = sign_in(browser, live_server)

    # --- a study: create, open, watch it fill, exclude a worker ---------------------------
    page.click("#new-study")
    page.fill("#id_name", "Console pilot")
    page.select_option("#id_dataset", value=str(qa_test2().pk))
    for box in page.locator("input[name=systems]").all():
        box.check()
    page.fill("#id_raters_per_task", "1")
    page.fill("#id_completion_code", "C0DE1234")
    page.select_option("#id_gold_evaluator", label="gold-human-eval")
    # a paid study's defaults are on; the gold list holds people's scores only
    assert page.is_checked("#id_attention_checks") and page.is_checked("#id_transcript_for_crowd")
    gold_choices = page.locator("#id_gold_evaluator option").all_text_contents()
    assert "gold-human-eval" in gold_choices and "gpt-4-eval" not in gold_choices
    # this pilot goes without attention checks: the researcher judges the
    # sloppy worker below by the QC table, by hand
    page.uncheck("#id_attention_checks")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/studies/\d+/$"))
    study = Study.objects.get(name="Console pilot")
    assert (study.status, study.tasks.count()) == (Study.Status.CLOSED, 2)
    page.click("#open-study")
    page.wait_for_selector("#study-note:has-text('is now open')")
    study.refresh_from_db()
    assert study.status == Study.Status.OPEN
    assert page.input_value("#prolific-url").startswith(live_server.url + f"/s/{study.public_id}/")

    rate_everything(browser, live_server, study, "STEADY", "7")
    rate_everything(browser, live_server, study, "SLOPPY", "1")
    # the page was not reloaded: its live part shows both completions
    page.wait_for_selector("#progress-total:has-text('2 of 2 completed')", timeout=15_000)
    assert page.locator("#qc tr[data-participant]").count() == 2
    # each participant's reliability column: none until two rate the same responses
    header = page.locator("#qc th:has-text('reliability')")
    assert "Dawid-Skene" in header.get_attribute("title")
    assert page.inner_text("#qc tr[data-participant='SLOPPY'] td[data-reliability]") == "–"
    row = page.locator("#qc tr[data-participant='SLOPPY']")
    row.locator("input[name=reason]").fill("one score everywhere")
    row.locator("button[data-action=exclude]").click()
    page.wait_for_selector("#study-note:has-text('Excluded SLOPPY')")
    sloppy = Participant.objects.get(study=study, prolific_pid="SLOPPY")
    assert (sloppy.status, sloppy.exclusion_reason) == ("excluded", "one score everywhere")
    assert not Judgment.objects.filter(evaluator=study.evaluator, rater="SLOPPY").exists()
    assert Judgment.objects.filter(evaluator=study.evaluator, rater="STEADY").count() == 18
    assert "1 of 2 completed" in page.inner_text("#progress-total")  # the place is open again

    # --- the study's report in every format, through the page's links ---------------------
    page.click("nav >> text=Home")
    links = page.locator(f"a[href*='study={study.pk}'][data-format]")
    formats = {}
    for i in range(links.count()):
        link = links.nth(i)
        answer = page.request.get(live_server.url + link.get_attribute("href"))
        formats[link.get_attribute("data-format")] = (answer.status, answer.headers["content-type"])
    assert formats == {
        "html": (200, "text/html; charset=utf-8"),
        "json": (200, "application/json; charset=utf-8"),
        "csv": (200, "text/csv; charset=utf-8"),
        "csv-wide": (200, "text/csv; charset=utf-8"),
        "latex": (200, "application/x-latex; charset=utf-8"),
    }

    # --- a metric run (eager: it runs inside the request) ---------------------------------
    with tasks_run_eagerly():
        page.click("#new-judging-run")
        page.select_option("#id_evaluator", label="metric: rouge")
        page.select_option("#id_dataset", value=str(qa_test2().pk))
        page.select_option("#id_mode", value="st")
        page.click("#submit")
        page.wait_for_url(re.compile(r"/console/runs/judging/\d+/$"))
        metric_run = JudgingRun.objects.get(evaluator__name="metric: rouge")
        assert metric_run.status == "done" and metric_run.done == 36
        assert "36 / 36 done" in page.inner_text("#run-progress")
        assert Judgment.objects.filter(evaluator__name="metric: rouge").count() == 36

    # --- an LLM judge on a real worker: progress, cancel, resume ---------------------------
    stack = contextlib.ExitStack()
    queue = f"test-console-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(JudgingRun, "queue", lambda self: queue)  # only this test's worker
    worker = start_worker(queue, url, tmp_path, "console-worker", CONCORD_WORKER_BEAT_SECONDS="1")
    try:
        # the live server's enqueue sends to the worker's Redis, whatever CELERY_BROKER_URL says
        stack.enter_context(app_sends_to(url))
        # 18 distinct prompts (the rest come from the ledger), one at a time, 1 s
        # each: the run lasts long enough to watch, cancel and resume
        with FakeOpenAI(latency=1.0) as server:
            Evaluator.objects.create(
                name="fake gpt judge",
                kind="llm_rubric",
                config={
                    "base_url": server.url,
                    "model": "m",
                    "server": "vllm",
                    "max_concurrency": 1,
                    "seeds": [2023],
                    "timeout_s": 5,
                    "price_input_per_million": 10.0,
                    "price_output_per_million": 30.0,
                },
            )
            page.click("nav >> text=Home")
            page.click("#new-judging-run")
            page.select_option("#id_evaluator", label="fake gpt judge")
            page.select_option("#id_dataset", value=str(qa_test2().pk))
            page.fill("#id_budget", "5")
            page.click("#submit")
            page.wait_for_load_state()
            errors = page.locator("#form-errors, .errorlist")
            assert errors.count() == 0, page.inner_text("#console-form")
            page.wait_for_url(re.compile(r"/console/runs/judging/\d+/$"))
            run = JudgingRun.objects.get(evaluator__name="fake gpt judge")
            # progress shows up on the page without a reload (it polls every 2 s)
            page.wait_for_selector("#run-status:has-text('Running')", timeout=30_000)
            page.wait_for_function(
                "() => /^([1-9]\\d*) \\/ 36 done/.test("
                "document.querySelector('#run-progress').innerText)",
                timeout=30_000,
            )
            # the worker shows on the workers panel, running this run (it beats every second)
            panel = page.context.new_page()
            panel.goto(live_server.url + "/console/workers/")
            worker_row = panel.locator("tr[data-worker^='console-worker@']")
            worker_row.wait_for(timeout=15_000)
            assert queue in worker_row.inner_text()
            panel.wait_for_selector(
                f"tr[data-worker^='console-worker@'] >> text=judging run {run.pk}"
            )
            panel.close()

            page.click("#cancel-run")
            page.wait_for_selector("#outcome:has-text('cancelled')")
            run.refresh_from_db()
            assert run.status == "cancelled"
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).lease_owner == "", 20)
            judged = Judgment.objects.filter(evaluator__name="fake gpt judge").count()
            assert 0 < judged < 36
            page.click("#resume-run")
            page.wait_for_selector("#outcome:has-text('queued')")
            page.wait_for_selector("#run-status:has-text('Done')", timeout=60_000)
            assert "36 / 36 done" in page.inner_text("#run-progress")
            assert page.locator("#no-failures").count() == 1
        run.refresh_from_db()
        assert (run.status, run.done, run.failed) == ("done", 36, 0)
        assert Judgment.objects.filter(evaluator__name="fake gpt judge").count() == 36
        # nothing paid twice: each distinct prompt sent once, the rest from the ledger
        assert LLMCall.objects.filter(status="ok").count() == server.count
        assert run.requests + run.cache_hits == 36
        assert run.cost > 0 and "$" in page.inner_text("#cost")
    finally:
        stack.close()
        stop(worker)


def test_console_at_phone_width_and_the_document_viewer(browser, live_server, data, researcher):
    page = sign_in(browser, live_server, width=375, height=740)
    for path in ("/console/", "/console/runs/", "/console/workers/", "/console/documents/"):
        page.goto(live_server.url + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
    document = Document.objects.filter(split="test2").first()
    page = sign_in(browser, live_server)
    page.goto(live_server.url + f"/console/documents/{document.pk}/")
    page.fill("#transcript-search", "recordings")
    page.wait_for_selector("#search-count:has-text('1 of')")
    total = int(page.inner_text("#search-count").split(" of ")[1])
    assert total >= 2
    page.click("#search-next")
    assert page.inner_text("#search-count") == f"2 of {total}"
    page.click("#search-prev")
    assert page.inner_text("#search-count") == f"1 of {total}"
    link = page.locator("a.passage-link").first
    first, last = int(link.get_attribute("data-first")), int(link.get_attribute("data-last"))
    link.click()
    marked = page.locator(".turn.answer")
    assert marked.count() == last - first + 1
    assert marked.first.get_attribute("id") == f"turn-{first}"
