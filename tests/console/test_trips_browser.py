"""What a researcher used to trip on, one browser test each (headless Debian
Chromium through Playwright, a live server, the synthetic meetings):

the failed-check code beside the completion URL; downloads named after what
they hold; a friendly 404 for a mistyped link, with DEBUG on as in the demo;
the report and the QC table at 375 px; "Study created" with the navigation and
a link to the monitor; form labels above their controls; counts in words
("1 task"); audit entries in words; "Refill the quota" saying what it did; the
whole rubric on the consent page; a gold annotator's items meeting by meeting;
and the synthetic meeting's scores labelled as invented.
"""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from annotator.actions.arrival import check_start_assignment
from annotator.actions.participants import check_refill_quota
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import Assignment, Item, Study
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from corpus.services import SYNTHETIC_ELITR_BENCH
from judging.importing import import_elitr_bench
from judging.models import Evaluator
from tests.annotator.conftest import entry_url, make_study
from tests.browsing import create_study_from_report, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 375, "height": 740}


@pytest.fixture
def data(transactional_db, tmp_path):
    """Two synthetic meetings (test2, 6 questions, 3 systems), as the real ELITR-Bench."""
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


def rate_everything(assignment: Assignment, score: int, *, pass_checks: bool = True) -> None:
    """`score` on every item; the attention checks inside their range, or not."""
    items = {i.pk: i for i in Item.objects.filter(pk__in=assignment.item_order)}
    for position, pk in enumerate(assignment.item_order, 1):
        item, value = items[pk], score
        if item.is_attention_check:
            inside = item.expected_min
            value = inside if pass_checks else (1 if inside > 1 else 10)
        check_rate_item(assignment, position, score=value)
    check_complete_assignment(Assignment.objects.get(pk=assignment.pk))


@pytest.fixture
def worked_study(data) -> Study:
    """A crowd study with attention checks (2 meetings, 3 raters each): three
    participants finished, then one who failed a check, and one still at work."""
    study = make_study(
        name="Pilot: week 2",
        raters=3,
        attention_checks=True,
        gold_evaluator=Evaluator.objects.get(name="gold-human-eval"),
    )
    for n, score in enumerate([8, 7, 9, 1, None]):
        assignment = check_start_assignment(study, pid=f"5f00demo{n:02d}", session_id=f"S{n}")
        if score is not None:
            rate_everything(assignment, score, pass_checks=score != 1)
    return study


def monitor(page, live_server, study: Study) -> None:
    page.goto(live_server.url + f"/console/studies/{study.pk}/")
    page.wait_for_selector("#study-live")


def test_failed_check_code_beside_the_completion_url(browser, live_server, data, researcher):
    checked = make_study(name="With checks", attention_checks=True)
    plain = make_study(name="Without checks")
    practice = make_study(name="With a qualification round")
    Study.objects.filter(pk=practice.pk).update(practice_items=[{"question": "q"}])
    page = sign_in(browser, live_server)
    monitor(page, live_server, checked)
    completion = page.locator("#completion-url")
    code = page.locator("#failed-check-code")
    assert completion.inner_text() == (
        f"https://app.prolific.com/submissions/complete?cc={checked.completion_code}"
    )
    assert code.inner_text() == checked.failed_attention_code
    assert "fails the attention checks" in page.inner_text("#failed-check")
    # beside it: in the same list, right under the completion URL
    below = code.bounding_box()["y"] - completion.bounding_box()["y"]
    assert 0 < below < 80
    monitor(page, live_server, plain)
    assert page.locator("#completion-url").is_visible()
    assert page.locator("#failed-check-code").count() == 0
    monitor(page, live_server, practice)
    assert "fails the qualification round" in page.inner_text("#failed-check")


def test_downloads_are_named_after_what_they_hold(browser, live_server, worked_study, researcher):
    today = timezone.localdate().isoformat()
    page = sign_in(browser, live_server)
    monitor(page, live_server, worked_study)
    names = {}
    for selector in (
        "a:has-text('Ratings, one row per rating')",
        "a:has-text('Ratings, one column per rater')",
        "a:has-text('CSV (long)')",
        "a:has-text('CSV (wide)')",
        "a:has-text('JSON')",
        "a:has-text('LaTeX')",
    ):
        with page.expect_download() as download:
            page.click(selector)
        names[selector.split("'")[1]] = download.value.suggested_filename
    assert names == {
        "Ratings, one row per rating": f"concord-ratings-pilot-week-2-{today}.csv",
        "Ratings, one column per rater": f"concord-ratings-pilot-week-2-wide-{today}.csv",
        "CSV (long)": f"concord-report-pilot-week-2-{today}.csv",
        "CSV (wide)": f"concord-report-pilot-week-2-wide-{today}.csv",
        "JSON": f"concord-report-pilot-week-2-{today}.json",
        "LaTeX": f"concord-report-pilot-week-2-{today}.tex",
    }
    # a selection's report, from the console's home: named after the selection
    page.goto(live_server.url + "/console/")
    with page.expect_download() as download:
        page.locator("a[data-format=csv][href*='benchmark=']").first.click()
    assert download.value.suggested_filename == (
        f"concord-report-elitr-bench-qa-test2-st-{today}.csv"
    )


def test_a_mistyped_link_answers_the_friendly_404_with_debug_on(
    browser, live_server, data, researcher, settings
):
    settings.DEBUG = True  # as in the demo
    study = make_study()
    participant = browser.new_context(viewport=PHONE).new_page()
    for path in (
        f"/s/{str(study.public_id)[:-4]}/?PROLIFIC_PID=5f00demo01&STUDY_ID=P&SESSION_ID=S",
        f"/s/{study.public_id}/".replace(str(study.public_id)[:8], "00000000"),
        "/r/a-token-copied-wrongly/",
    ):
        answer = participant.goto(live_server.url + path)
        assert answer.status == 404, path
        text = participant.inner_text("main")
        assert "This link does not lead to a study" in text
        assert "Open the study again from Prolific" in text and "researchers" in text
        assert "URLconf" not in participant.content() and participant.locator("form").count() == 0
        assert participant.evaluate("document.documentElement.scrollWidth") <= 375
    page = sign_in(browser, live_server)
    answer = page.goto(live_server.url + "/console/studies/987654/")
    assert answer.status == 404
    assert page.inner_text("h1") == "Not found"
    assert "URLconf" not in page.content()
    page.click("a:has-text('Your start page')")
    page.wait_for_url(re.compile(r"/console/$"))


def test_the_report_and_the_qc_table_at_375_px(browser, live_server, worked_study, researcher):
    page = sign_in(browser, live_server, viewport=PHONE)
    for path in (
        f"/analysis/report/?study={worked_study.pk}",
        "/analysis/report/?dataset_version=qa&split=test2&mode=st",
        f"/console/studies/{worked_study.pk}/",
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
        # the wide tables are there, and scroll inside their own box (the report's)
        boxes = page.locator(".table-wrap")
        assert boxes.count() > 0, path
        if path.startswith("/analysis/"):
            assert any(b.evaluate("b => b.scrollWidth > b.clientWidth") for b in boxes.all()), path
    # the QC table: each participant a card, every measure named, nothing to scroll sideways
    qc = page.locator("#qc").locator("xpath=..")
    assert qc.evaluate("b => b.scrollWidth <= b.clientWidth")
    first = page.locator("#qc tbody tr").first
    label = first.locator("td[data-label=ratings]").evaluate(
        "td => getComputedStyle(td, '::before').content"
    )
    assert label == '"ratings: "'  # the card names the measure the header named
    assert first.locator("button[data-action=exclude]").is_visible()
    # a short card: one line per measure (the reliability added one, about 20 px)
    assert first.bounding_box()["height"] < 345
    assert page.evaluate("window.scrollX") == 0


def test_the_qc_table_fits_1280_px(browser, live_server, worked_study, researcher):
    """Every column, the action's included, within its card; a row a few lines high."""
    page = sign_in(browser, live_server, path=f"/console/studies/{worked_study.pk}/")
    qc = page.locator("#qc").locator("xpath=..")
    assert qc.evaluate("b => b.scrollWidth <= b.clientWidth")
    rows = page.locator("#qc tbody tr").all()
    assert rows
    for row in rows:
        box = row.bounding_box()
        assert box["x"] + box["width"] <= 1280 and box["height"] < 150
        exclude = row.locator("button[data-action=exclude]")
        if exclude.count():
            assert exclude.is_visible() and exclude.bounding_box()["x"] < 1280


def test_study_created_has_the_navigation_and_a_link_to_its_monitor(
    browser, live_server, data, researcher
):
    page = sign_in(browser, live_server)
    page.goto(live_server.url + "/analysis/report/?dataset_version=qa&split=test2&mode=st")
    create_study_from_report(page, count=6, method="random", kind="crowd", name="Disputed answers")
    assert page.inner_text("h1") == "Study created: Disputed answers"
    nav = page.locator("nav[aria-label=Console]")
    assert nav.is_visible() and nav.locator("a", has_text="Runs").count() == 1
    assert "6 responses" in page.inner_text("#created")
    study = Study.objects.get(name="Disputed answers")
    page.click("#study-monitor-link")
    page.wait_for_url(re.compile(rf"/console/studies/{study.pk}/$"))
    assert page.inner_text("h1") == "Disputed answers"
    # the console's own creation lands on the monitor too, saying what was made
    page.click("nav >> text=Home")
    create_console_study(page, "From the console", raters=2)
    assert "Study created: From the console, 2 tasks, 16 items." in page.inner_text("#messages")
    assert page.locator("nav[aria-label=Console]").is_visible()


def create_console_study(page, name: str, raters: int) -> None:
    """Create a crowd study on the first system of the English QA test2 set from the
    console, with the form's defaults (attention checks on: two more items a task)."""
    page.click("#new-study")
    page.fill("#id_name", name)
    page.select_option(
        "#id_dataset", value=str(Dataset.objects.get(version="qa", language="en", split="test2").pk)
    )
    page.locator("#field-systems input[type=checkbox]").first.check()
    page.fill("#id_raters_per_task", str(raters))
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/studies/\d+/$"))


LABELLED = (
    "form input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=submit]),"
    " form select, form textarea"
)


def labels_above_controls(page) -> list[str]:
    """Each visible text field, select and text area of the page's forms whose
    label is missing or not above it; and each group of boxes whose legend is
    not above them."""
    return page.evaluate(
        """selector => {
        const wrong = [];
        for (const control of document.querySelectorAll(selector)) {
            if (!control.offsetParent) continue;  // not shown
            const label = (control.id && document.querySelector(`label[for="${control.id}"]`))
                || control.closest('label');
            const name = control.name || control.id;
            if (!label) { wrong.push(`${name}: no label`); continue; }
            const l = label.getBoundingClientRect(), c = control.getBoundingClientRect();
            if (l.bottom > c.top + 1) wrong.push(`${name}: label below (${l.bottom} > ${c.top})`);
        }
        for (const group of document.querySelectorAll('form fieldset')) {
            const legend = group.querySelector('legend');
            const first = group.querySelector('input, label');
            if (!group.offsetParent || !first) continue;
            if (!legend) { wrong.push('a group without a legend'); continue; }
            if (legend.getBoundingClientRect().bottom > first.getBoundingClientRect().top + 1)
                wrong.push(`${legend.innerText}: legend not above`);
        }
        return wrong;
    }""",
        LABELLED,
    )


def test_form_labels_sit_above_their_controls(browser, live_server, worked_study, researcher):
    Study.objects.filter(pk=worked_study.pk).update(raters_per_task=5)  # room for two more
    pages = []
    for viewport in ({"width": 1280, "height": 900}, PHONE):
        page = sign_in(browser, live_server, viewport=viewport)
        for path in (
            "/console/studies/new/",
            "/console/runs/judging/new/",
            "/console/runs/generation/new/",
            f"/console/studies/{worked_study.pk}/",
        ):
            page.goto(live_server.url + path)
            assert page.locator(LABELLED).count() > 0, path
            pages.append((path, viewport["width"], labels_above_controls(page)))
        # the systems' name above their boxes, not below them
        page.goto(live_server.url + "/console/studies/new/")
        legend = page.locator("#field-systems legend").bounding_box()
        first_box = page.locator("#field-systems input[type=checkbox]").first.bounding_box()
        assert legend["y"] + legend["height"] <= first_box["y"]
        # the participant's pages: sign-in, consent, the item with its comment box open
        participant = browser.new_context(viewport=viewport).new_page()
        participant.goto(live_server.url + "/accounts/login/")
        pages.append(("login", viewport["width"], labels_above_controls(participant)))
        participant.goto(live_server.url + entry_url(worked_study, f"5f00late{viewport['width']}"))
        pages.append(("consent", viewport["width"], labels_above_controls(participant)))
        participant.check("#consent")
        participant.click("#start")
        participant.wait_for_url(re.compile(r"/item/1/$"))
        participant.click("#note-box summary")
        assert participant.locator("#comment").is_visible()
        pages.append(("item", viewport["width"], labels_above_controls(participant)))
    assert [p for p in pages if p[2]] == []


ONE_MANY = re.compile(
    r"\b1 (tasks|items|participants|places|raters|questions|turns|speakers|responses|words)\b"
)


def test_counts_say_1_task_and_2_tasks(
    browser, live_server, transactional_db, tmp_path, researcher
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "one", meetings=1), with_responses=True)
    page = sign_in(browser, live_server)
    create_console_study(page, "One meeting", raters=1)
    assert "Study created: One meeting, 1 task, 8 items." in page.inner_text("#messages")
    study = Study.objects.get(name="One meeting")
    check_set_study_status(study, Study.Status.OPEN)
    check_start_assignment(study, pid="5f00one")
    monitor(page, live_server, study)
    text = page.inner_text("main")
    assert "1 rater per task" in text and "(8 items)" in text
    assert "1 participant" in page.inner_text("#arrivals-title")
    assert "Items built: 1 task, 8 items (6 responses)" in page.inner_text("#audit")
    assert not ONE_MANY.search(text), ONE_MANY.search(text)
    for path in ("/console/", f"/console/documents/{study.tasks.get().document_id}/"):
        page.goto(live_server.url + path)
        assert not ONE_MANY.search(page.inner_text("main")), path


def test_audit_entries_read_as_words(browser, live_server, worked_study, researcher):
    check_set_study_status(worked_study, Study.Status.PAUSED, researcher)
    worked_study.completion_code = "NEWC0DE1"
    check_save_study(worked_study, ["completion_code", "min_gold_correlation"], actor=researcher)
    check_refill_quota(worked_study, researcher)
    page = sign_in(browser, live_server)
    monitor(page, live_server, worked_study)
    audit = page.inner_text("#audit")
    assert "Paused: it was open · by rita" in audit
    assert "Settings changed: completion code, min gold correlation · by rita" in audit
    assert "Quota refilled: no unfinished work was old enough to release;" in audit
    assert "Completed: failed the attention checks · 5f00demo03" in audit
    assert "Assigned a task: task meeting_en_synthetic_00" in audit
    for raw in ("open_places", "prolific_places", "True", "False", "min_gold_correlation"):
        assert raw not in audit, raw


def test_refill_the_quota_says_what_it_did(browser, live_server, worked_study, researcher):
    # one participant's work is stale: refill releases it
    Assignment.objects.filter(participant__prolific_pid="5f00demo04").update(
        started_at=timezone.now() - timezone.timedelta(days=1)
    )
    page = sign_in(browser, live_server)
    monitor(page, live_server, worked_study)
    page.click("#refill")
    page.wait_for_selector("#study-note:has-text('Refilled the quota')")
    assert page.inner_text("#study-note") == (
        "Refilled the quota: released 1 stale place (work left unfinished too long); "
        # 6 places, 3 completed: the stale one and the one given the failed-check code are free
        "3 places are open to new participants."
    )
    released = Assignment.objects.get(participant__prolific_pid="5f00demo04")
    assert released.status == Assignment.Status.TIMED_OUT
    page.wait_for_selector("#audit:has-text('Timed out (released)')")


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, PHONE])
def test_the_consent_page_shows_the_whole_rubric(browser, live_server, data, viewport):
    study = make_study()
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(live_server.url + entry_url(study, "5f00reader"))
    rubric = page.locator(".rubric .rubric-text")
    # not cut (no inner scrolling), not collapsed, every score line on the page
    assert rubric.evaluate("r => r.scrollHeight <= r.clientHeight + 1")
    assert rubric.evaluate("r => getComputedStyle(r).maxHeight") == "none"
    assert page.locator(".rubric details").count() == 0
    for line in study.rubric.splitlines():
        if line.strip():
            assert line.strip() in rubric.inner_text()
    last = page.get_by_text("Score 10: The response to evaluate is essentially equivalent")
    last.scroll_into_view_if_needed()
    assert last.is_visible()
    box, area = last.bounding_box(), rubric.bounding_box()
    assert area["y"] <= box["y"] and box["y"] + box["height"] <= area["y"] + area["height"] + 1
    # on the item page the rubric stays one click away, in its own scrolling box
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(re.compile(r"/item/1/$"))
    assert (
        page.locator("#rubric .rubric-text").evaluate("r => getComputedStyle(r).maxHeight")
        != "none"
    )


def test_a_gold_annotators_items_come_meeting_by_meeting(
    browser, live_server, data, gold_annotator
):
    study = make_study(name="Gold pass", kind="gold", raters=1)
    study.gold_annotators.add(gold_annotator)
    page = sign_in(browser, live_server, user="gina", password="pw-gina-123")
    page.wait_for_url(re.compile(r"/gold/$"))
    meetings = page.locator("ol.meetings li")
    assert meetings.all_inner_texts() == [
        "meeting_en_synthetic_001 0 of 18 rated",
        "meeting_en_synthetic_002 0 of 18 rated",
    ]
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r"/item/1/$"))
    assert page.inner_text("#meeting-place") == "meeting_en_synthetic_001: 1 of 18"
    assert "meeting_en_synthetic_001" in page.inner_text(".side-title")
    page.keyboard.press("8")
    page.wait_for_selector("#status:has-text('Saved: 8')")
    # the rest of the first meeting, rated (as the keyboard would)
    assignment = Assignment.objects.get(participant__study=study)
    for position in range(2, 19):
        check_rate_item(assignment, position, score=7)
    page.goto(live_server.url + "/gold/")
    first = page.locator("li[data-meeting=meeting_en_synthetic_001]")
    second = page.locator("li[data-meeting=meeting_en_synthetic_002]")
    assert "18 of 18 rated" in first.inner_text() and "done" in first.inner_text()
    assert "0 of 18 rated" in second.inner_text()
    second.locator("a:has-text('Start this meeting')").click()
    page.wait_for_url(re.compile(r"/item/19/$"))
    assert page.inner_text("#meeting-place") == "meeting_en_synthetic_002: 1 of 18"
    assert "A new meeting begins: meeting_en_synthetic_002" in page.inner_text("#meeting-note")
    assert "meeting_en_synthetic_002" in page.inner_text(".side-title")


def test_the_synthetic_meetings_scores_are_labelled_invented(
    browser, live_server, transactional_db, tmp_path, django_user_model
):
    """As the demo imports it when no real data can be had."""
    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "synthetic"),
        with_responses=True,
        benchmark_info=SYNTHETIC_ELITR_BENCH,
    )
    django_user_model.objects.create_superuser("boss", "boss@example.org", "pw-boss-123")
    page = sign_in(browser, live_server, user="boss", password="pw-boss-123")
    reports = page.locator("#reports-title + p").inner_text()
    assert "the synthetic demo meeting: invented scores, the human ones included" in reports
    for name in ("gold-human-eval", "silver-human-eval"):
        evaluator = Evaluator.objects.get(name=name)
        page.goto(live_server.url + f"/admin/judging/evaluator/{evaluator.pk}/change/")
        description = page.locator("#id_description").input_value()
        assert description.startswith("INVENTED: made-up scores of the synthetic demo meeting")
    page.goto(live_server.url + "/admin/corpus/benchmark/")
    page.click("text=ELITR-Bench (synthetic demo meeting)")
    assert "no person rated these answers" in page.locator("#id_description").input_value()
