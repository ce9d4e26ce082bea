"""The whole rating experience in headless Chromium (Debian's), driven by Playwright.

A crowd worker arrives from a Prolific-style link, reads the guidelines, rates
every item with the keyboard, comes back half-way and resumes, finishes and
lands on Prolific's completion URL; a second worker on a phone-width screen
gets the next meeting; a gold annotator rates through the login path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.db import connections

from annotator.models import Assignment, Rating
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from tests.annotator.conftest import entry_url, make_study
from tests.conftest import require

pytestmark = [pytest.mark.browser]

CHROMIUM = Path(os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium"))
COMPLETE = re.compile(r"https://app\.prolific\.com/submissions/complete\?cc=C0DE1234")


@pytest.fixture
def browser(monkeypatch, live_server):
    # Depends on live_server so that Chromium closes its connections before the
    # server stops (else a request thread keeps a database connection open).
    # Playwright's sync API keeps an event loop in this thread; the ORM calls the
    # test makes between browser steps are still plain synchronous calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    require(
        CHROMIUM.exists(), f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "the playwright package is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser
        # While Playwright's loop runs, Django keys connections by that context:
        # close the ones this test opened before the loop goes away.
        connections.close_all()
        browser.close()


@pytest.fixture
def study(transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    return make_study(raters=2)


def snapshot(page, name: str) -> None:
    """With CONCORD_SCREENSHOTS=DIR, keep screenshots of the pages for a person to look at."""
    folder = os.environ.get("CONCORD_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def fake_prolific(context) -> None:
    """No internet here: answer Prolific's completion page locally."""
    context.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(
            status=200, content_type="text/html", body="<h1>Prolific: submission complete</h1>"
        ),
    )


def rate_with_keyboard(page, score_key: str, expected: str) -> None:
    page.keyboard.press(score_key)
    page.wait_for_selector(f"#status:has-text('Saved: {expected}')")
    page.keyboard.press("Enter")


def test_crowd_worker_rates_everything_with_the_keyboard(browser, live_server, study):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    fake_prolific(context)
    page = context.new_page()
    page.goto(live_server.url + entry_url(study, "WORKER1"))
    assert page.get_by_text(
        "Score 10: The response to evaluate is essentially equivalent"
    ).is_visible()
    snapshot(page, "consent")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(re.compile(r"/item/1/$"))
    assert page.inner_text("#position") == "Item 1 of 18"
    snapshot(page, "item-desktop")
    assignment = Assignment.objects.get(participant__prolific_pid="WORKER1")

    keys = ["0", "9", "8", "7", "6", "5", "4", "3", "2"]  # "0" means 10
    for position, key in enumerate(keys, 1):
        assert page.inner_text("#position") == f"Item {position} of 18"
        rate_with_keyboard(page, key, "10" if key == "0" else key)
        page.wait_for_url(re.compile(rf"/item/{position + 1}/$"))

    # Half-way: a reload stays, a return from the Prolific link resumes at item 10.
    page.reload()
    assert page.inner_text("#position") == "Item 10 of 18"
    page.goto(live_server.url + entry_url(study, "WORKER1"))
    page.wait_for_url(re.compile(r"/item/10/$"))
    # Back revisits item 9 with its score, then the arrow goes on again.
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(r"/item/9/$"))
    assert page.is_checked("input[name=score][value='2']")
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"/item/10/$"))

    for position in range(10, 19):
        rate_with_keyboard(page, "1", "1")
        if position < 18:
            page.wait_for_url(re.compile(rf"/item/{position + 1}/$"))
    page.wait_for_url(re.compile(r"/finish/$"))
    page.click("#finish")
    page.wait_for_url(re.compile(r"/done/$"))
    assert page.inner_text("#completion-code") == "C0DE1234"
    snapshot(page, "done")
    page.wait_for_url(COMPLETE, timeout=10_000)  # the automatic redirect to Prolific

    ratings = dict(Rating.objects.filter(assignment=assignment).values_list("item_id", "score"))
    assert [ratings[i] for i in assignment.item_order] == [10, 9, 8, 7, 6, 5, 4, 3, 2] + [1] * 9
    assert all(
        s > 0
        for s in Rating.objects.filter(assignment=assignment).values_list("seconds", flat=True)
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.COMPLETED

    # A second worker, on a phone, gets the other meeting and can rate by tapping.
    phone = browser.new_context(
        viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True
    )
    second = phone.new_page()
    second.goto(live_server.url + entry_url(study, "WORKER2"))
    second.check("#consent")
    second.click("#start")
    second.wait_for_url(re.compile(r"/item/1/$"))
    assert second.evaluate("document.documentElement.scrollWidth") <= 375  # no sideways scroll
    snapshot(second, "item-phone")
    second.tap("label.score:has-text('7')")
    second.wait_for_selector("#status:has-text('Saved: 7')")
    second.tap("#next")
    second.wait_for_url(re.compile(r"/item/2/$"))
    other = Assignment.objects.get(participant__prolific_pid="WORKER2")
    assert other.task_id != assignment.task_id
    context.close()
    phone.close()


def test_gold_annotator_rates_through_the_login(
    browser, live_server, transactional_db, tmp_path, django_user_model
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data"), with_responses=True)
    make_study(name="Gold pass", kind="gold", raters=1)
    django_user_model.objects.create_user("gina", password="pw-gina-123", role="gold_annotator")
    page = browser.new_context().new_page()
    page.goto(live_server.url + "/gold/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "gina")
    page.fill("#id_password", "pw-gina-123")
    page.click("#sign-in")
    page.wait_for_url(re.compile(r"/gold/$"))
    assert "0 of 18 items rated" in page.content()
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r"/item/1/$"))
    for position in range(1, 19):
        rate_with_keyboard(page, "8", "8")
        page.wait_for_url(
            re.compile(r"/finish/$" if position == 18 else rf"/item/{position + 1}/$")
        )
    page.click("#finish")
    page.wait_for_selector("text=Your gold ratings are saved")
    assert Rating.objects.filter(assignment__participant__user__username="gina").count() == 18
