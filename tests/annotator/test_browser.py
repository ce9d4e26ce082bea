"""The whole rating experience in headless Chromium (Debian's), driven by Playwright.

A crowd worker arrives from a Prolific-style link, reads the guidelines, rates
every item with the keyboard, comes back half-way and resumes, finishes and
lands on Prolific's completion URL; a second worker on a phone-width screen
gets the next meeting; a gold annotator rates through the login path. The
`browser` fixture (Debian's Chromium) is in tests/annotator/conftest.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from annotator.models import Assignment, Item, Rating
from corpus.importers.synthetic import write_synthetic_elitr
from generation.models import System
from judging.importing import import_elitr_bench
from tests.annotator.conftest import entry_url, make_study

pytestmark = [pytest.mark.browser]

COMPLETE = re.compile(r"https://app\.prolific\.com/submissions/complete\?cc=C0DE1234")


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
    gold = make_study(name="Gold pass", kind="gold", raters=1)
    gold.gold_annotators.add(
        django_user_model.objects.create_user("gina", password="pw-gina-123", role="gold_annotator")
    )
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


def test_another_browser_waits_for_the_researcher_to_allow_it(
    browser, live_server, study, researcher
):
    """A worker's PROLIFIC_PID from another browser with another Prolific session
    gets a clear page, not the work; the researcher allows another device in the
    console's quality-control table; the new browser continues where the work
    was, once."""
    desk = browser.new_context(viewport={"width": 1280, "height": 900})
    first = desk.new_page()
    first.goto(live_server.url + entry_url(study, "SWITCHER", "SUB-DESK"))
    first.check("#consent")
    first.click("#start")
    first.wait_for_url(re.compile(r"/item/1/$"))
    rate_with_keyboard(first, "7", "7")
    first.wait_for_url(re.compile(r"/item/2/$"))
    assignment = Assignment.objects.get(participant__prolific_pid="SWITCHER")

    laptop = browser.new_context(viewport={"width": 1280, "height": 900})
    second = laptop.new_page()
    link = live_server.url + entry_url(study, "SWITCHER", "SUB-LAPTOP")
    answer = second.goto(link)
    assert answer.status == 403
    assert second.inner_text("h1") == "Not this browser"
    assert second.get_by_text("message the researchers on Prolific").is_visible()
    assert assignment.token not in second.url and assignment.token not in second.content()
    snapshot(second, "not-this-browser")

    console = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    console.goto(live_server.url + "/accounts/login/?next=/")
    console.fill("#id_username", "rita")
    console.fill("#id_password", "pw-rita-123")
    console.click("#sign-in")
    console.wait_for_url(re.compile(r"/console/$"))
    console.goto(live_server.url + f"/console/studies/{study.pk}/")
    row = console.locator("tr[data-participant='SWITCHER']")
    assert "refused 1× from another browser" in row.inner_text()
    row.locator("[data-action='allow-other-device']").click()
    console.wait_for_selector(
        "tr[data-participant='SWITCHER'] [data-allowed-until]", state="attached"
    )
    assert "may now continue once from another browser" in console.content()
    snapshot(console, "console-other-device-allowed")

    second.goto(link)
    second.wait_for_url(re.compile(r"/item/2/$"))
    assert second.inner_text("#position") == "Item 2 of 18"
    rate_with_keyboard(second, "5", "5")
    second.wait_for_url(re.compile(r"/item/3/$"))
    assert [rating_at(assignment, 1).score, rating_at(assignment, 2).score] == [7, 5]

    third = browser.new_context().new_page()
    assert third.goto(live_server.url + entry_url(study, "SWITCHER", "SUB-THIRD")).status == 403
    for page in (first, second, console, third):
        page.context.close()


# --- The rating page itself: focus, comments and flags, phones, transcript, pairwise ------------


def start_crowd_item(browser, live_server, study, pid: str, **context_options):
    """A crowd worker's first item, on a page of its own; returns (page, assignment)."""
    context = browser.new_context(
        **(context_options or {"viewport": {"width": 1280, "height": 900}})
    )
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    page.goto(live_server.url + entry_url(study, pid))
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(re.compile(r"/item/1/$"))
    return page, Assignment.objects.get(participant__prolific_pid=pid)


def rating_at(assignment, position: int) -> Rating | None:
    return Rating.objects.filter(
        assignment=assignment, item_id=assignment.item_order[position - 1]
    ).first()


def test_enter_goes_on_after_the_rubric_was_opened_and_closed(browser, live_server, study):
    page, assignment = start_crowd_item(browser, live_server, study, "FOCUS1")
    page.keyboard.press("7")
    page.wait_for_selector("#status:has-text('Saved: 7')")
    page.click("#rubric summary")
    assert page.is_visible("#rubric-title")
    page.click("#rubric summary")
    assert not page.is_visible("#rubric-title")
    page.keyboard.press("Enter")  # used to re-open the rubric: the focus stayed on <summary>
    page.wait_for_url(re.compile(r"/item/2/$"))
    assert rating_at(assignment, 1).score == 7
    # Opened with the mouse and left open: the keys still rate and Enter still goes on.
    page.click("#rubric summary")
    rate_with_keyboard(page, "4", "4")
    page.wait_for_url(re.compile(r"/item/3/$"))
    assert rating_at(assignment, 2).score == 4
    # The same with the transcript, which a crowd study may offer (collapsed).
    assert not page.locator("#transcript-box").count()
    study.transcript_for_crowd = True
    study.save(update_fields=["transcript_for_crowd"])
    page.reload()
    assert not page.is_visible("#turns")
    page.click("#transcript-box summary")
    assert page.is_visible("#turns") and page.is_visible(".turn .speaker")
    page.click("#transcript-box summary")
    rate_with_keyboard(page, "2", "2")
    page.wait_for_url(re.compile(r"/item/4/$"))
    assert rating_at(assignment, 3).score == 2
    assert page.js_errors == []
    page.context.close()


def test_comment_and_flag_are_saved_without_losing_the_score(browser, live_server, study):
    page, assignment = start_crowd_item(browser, live_server, study, "NOTES1")
    page.keyboard.press("6")
    page.wait_for_selector("#status:has-text('Saved: 6')")
    page.click("#note-box summary")  # opening it puts the cursor in the comment box
    page.wait_for_function("document.activeElement.id === 'comment'")
    page.keyboard.type("The CA names 2 people, 9 or 10?")
    page.keyboard.press("Enter")  # a new line, not the next item
    page.keyboard.type("Second line 1")
    assert page.input_value("#comment") == "The CA names 2 people, 9 or 10?\nSecond line 1"
    assert page.is_checked("input[name=score][value='6']")  # the digits typed did not rate
    page.click("#save-note")
    page.wait_for_selector("#note-status:has-text('Saved.')")
    page.check("input[name=flag][value='cannot_judge']")  # saved at once
    page.wait_for_selector("#note-state:has-text('comment and report saved')")
    snapshot(page, "item-comment-desktop")
    assert re.search(r"/item/1/$", page.url)  # saving a comment never moves on
    rating = rating_at(assignment, 1)
    assert (rating.score, rating.flag) == (6, "cannot_judge")
    # (a form sends a new line as CRLF, as browsers do)
    assert rating.comment.replace("\r\n", "\n") == "The CA names 2 people, 9 or 10?\nSecond line 1"
    assert page.inner_text("#status") == "Saved: 6"

    # Back on the item later: the saved comment and flag are shown; changing the
    # score keeps them, and Enter goes on.
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/item/2/$"))
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(r"/item/1/$"))
    assert page.is_visible("#comment") and page.input_value("#comment").startswith("The CA")
    assert page.is_checked("input[name=flag][value='cannot_judge']")
    rate_with_keyboard(page, "8", "8")
    page.wait_for_url(re.compile(r"/item/2/$"))
    rating.refresh_from_db()
    assert (rating.score, rating.flag, rating.comment.startswith("The CA")) == (
        8,
        "cannot_judge",
        True,
    )
    # A comment typed but not saved goes with the rating when moving on.
    page.keyboard.press("3")
    page.wait_for_selector("#status:has-text('Saved: 3')")
    page.click("#note-box summary")
    page.wait_for_function("document.activeElement.id === 'comment'")
    page.keyboard.type("Unsure")
    page.check("input[name=flag][value='wrong_item']")
    page.wait_for_selector("#note-state:has-text('saved')")
    page.click("#next")
    page.wait_for_url(re.compile(r"/item/3/$"))
    second = rating_at(assignment, 2)
    assert (second.score, second.comment, second.flag) == (3, "Unsure", "wrong_item")
    assert page.js_errors == []
    page.context.close()


def test_phone_keeps_question_and_correct_answer_in_view_over_a_long_answer(
    browser, live_server, study
):
    page, assignment = start_crowd_item(
        browser,
        live_server,
        study,
        "PHONE1",
        viewport={"width": 375, "height": 667},
        is_mobile=True,
        has_touch=True,
    )
    words = " ".join(f"word{n % 97}" for n in range(3000))
    Item.objects.filter(pk=assignment.item_order[0]).update(answer=words)
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert not page.is_visible(".keys")  # no keyboard hint on a touch screen
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_function("window.scrollY > 2000")
    snapshot_viewport(page, "item-phone-long-scrolled")
    for selector in ("#question", "#correct-answer"):
        box = page.locator(selector).bounding_box()  # relative to the viewport
        assert box["y"] >= 0 and box["y"] + box["height"] <= 667, (selector, box)
    assert page.locator("#next").bounding_box()["y"] < 667  # and the bottom of the page is shown
    page.tap("label.score:has-text('5')")
    page.wait_for_selector("#status:has-text('Saved: 5')")
    assert rating_at(assignment, 1).score == 5
    assert page.js_errors == []
    page.context.close()


def snapshot_viewport(page, name: str) -> None:
    folder = os.environ.get("CONCORD_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def test_gold_annotator_searches_the_transcript_beside_the_item(
    browser, live_server, transactional_db, tmp_path, django_user_model
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data"), with_responses=True)
    gold = make_study(name="Gold pass", kind="gold", raters=1)
    gold.gold_annotators.add(
        django_user_model.objects.create_user("gina", password="pw-gina-123", role="gold_annotator")
    )
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(live_server.url + "/gold/")
    page.fill("#id_username", "gina")
    page.fill("#id_password", "pw-gina-123")
    page.click("#sign-in")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r"/item/1/$"))
    panel = page.locator("aside.side")
    assert panel.is_visible()
    side, item = panel.bounding_box(), page.locator("#context").bounding_box()
    assert side["x"] >= item["x"] + item["width"]  # beside the item, not below it
    assert page.inner_text(".turn:first-child .speaker") == "PERSON1"
    assert page.locator(".turn").count() > 100
    page.fill("#transcript-search", "spreadsheet")
    page.wait_for_selector("#turns mark.current")
    marks = page.locator("#turns mark")
    assert marks.count() >= 1
    assert {t.lower() for t in marks.all_inner_texts()} == {"spreadsheet"}
    turns, current = (
        page.locator("#turns").bounding_box(),
        page.locator("mark.current").bounding_box(),
    )
    assert turns["y"] <= current["y"] <= turns["y"] + turns["height"]  # scrolled into view
    assert page.evaluate("window.scrollY") == 0  # the panel scrolled, not the page
    assert re.match(r"1 of \d+", page.inner_text("#search-count"))
    snapshot_viewport(page, "item-gold-transcript")
    # Typing digits in the search box does not rate; Escape gives the keys back.
    page.fill("#transcript-search", "14")
    page.press("#transcript-search", "Escape")
    assert not Rating.objects.exists()
    rate_with_keyboard(page, "9", "9")
    page.wait_for_url(re.compile(r"/item/2/$"))
    assert Rating.objects.get().score == 9
    page.context.close()


def test_pairwise_study_rated_with_a_b_t(browser, live_server, transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    study = make_study(
        name="Pairwise pilot",
        rating_type="pairwise",
        baseline_system=System.objects.get(name="Synthetic-Terse"),
        raters=2,
    )
    page, assignment = start_crowd_item(browser, live_server, study, "PAIR1")
    total = len(assignment.item_order)
    assert page.inner_text("#position") == f"Item 1 of {total}"
    assert page.is_visible("#answer-a") and page.is_visible("#answer-b")
    a_box, b_box = (
        page.locator("#answer-a").bounding_box(),
        page.locator("#answer-b").bounding_box(),
    )
    assert b_box["x"] > a_box["x"] + a_box["width"] - 1 and abs(a_box["y"] - b_box["y"]) < 2
    snapshot(page, "item-pairwise-desktop")
    keys = {
        "a": "A is better",
        "b": "B is better",
        "t": "Tie",
        "1": "A is better",
        "2": "Tie",
        "3": "B is better",
    }
    choices = {"a": "A", "b": "B", "t": "tie", "1": "A", "2": "tie", "3": "B"}
    pressed = [list(keys)[n % len(keys)] for n in range(total)]
    for position, key in enumerate(pressed, 1):
        rate_with_keyboard(page, key, keys[key])
        page.wait_for_url(
            re.compile(r"/finish/$" if position == total else rf"/item/{position + 1}/$")
        )
    page.click("#finish")
    page.wait_for_url(re.compile(r"/done/$"))
    stored = dict(Rating.objects.filter(assignment=assignment).values_list("item_id", "choice"))
    assert [stored[i] for i in assignment.item_order] == [choices[k] for k in pressed]
    assert not Rating.objects.filter(assignment=assignment, score__isnull=False).exists()
    assert page.js_errors == []
    page.context.close()


def test_pairwise_on_a_phone_stacks_the_answers(browser, live_server, transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    study = make_study(
        name="Pairwise phone",
        rating_type="pairwise",
        baseline_system=System.objects.get(name="Synthetic-Terse"),
    )
    page, assignment = start_crowd_item(
        browser, live_server, study, "PAIR2", viewport={"width": 375, "height": 667}, has_touch=True
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    a_box, b_box = (
        page.locator("#answer-a").bounding_box(),
        page.locator("#answer-b").bounding_box(),
    )
    assert b_box["y"] >= a_box["y"] + a_box["height"]  # stacked
    snapshot(page, "item-pairwise-phone")
    page.tap("label.choice:has-text('B is better')")
    page.wait_for_selector("#status:has-text('Saved: B is better')")
    assert rating_at(assignment, 1).choice == "B"
    assert page.js_errors == []
    page.context.close()


def rate_practice(page, assignment, position: int, inside: bool) -> None:
    """Rate practice item `position` inside (or outside) its expected range."""
    item = Item.objects.get(pk=assignment.item_order[position - 1])
    assert item.is_practice
    score = item.expected_min if inside else (1 if item.expected_min > 3 else 10)
    page.keyboard.press("0" if score == 10 else str(score))
    page.wait_for_selector("#feedback:not([hidden])")
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Well done") if inside else verdict.startswith("The expected rating")
    assert item.feedback in page.inner_text("#feedback-text")


def test_qualification_round_shows_feedback_then_goes_on_or_ends(
    browser, live_server, transactional_db, tmp_path
):
    from annotator import defaults

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    study = make_study(practice_items=defaults.PRACTICE_ITEMS, practice_pass=2)
    practice = len(defaults.PRACTICE_ITEMS)

    # Passing: feedback after every practice item, the rating stays as given, Enter goes on.
    page, assignment = start_crowd_item(browser, live_server, study, "QUAL1")
    assert page.is_visible("#practice-note")
    rate_practice(page, assignment, 1, inside=True)
    snapshot(page, "item-practice-feedback")
    page.keyboard.press("5")  # the practice rating is given once
    assert (
        rating_at(assignment, 1).score == Item.objects.get(pk=assignment.item_order[0]).expected_min
    )
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/item/2/$"))
    for position in range(2, practice + 1):
        rate_practice(page, assignment, position, inside=position != 2)
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(rf"/item/{position + 1}/$"))
    assert not page.is_visible("#practice-note") and not page.is_visible("#feedback")
    rate_with_keyboard(page, "7", "7")
    page.wait_for_url(re.compile(rf"/item/{practice + 2}/$"))
    assignment.refresh_from_db()
    assert assignment.practice_passed is True

    # Failing: after the last practice item, the done page says so kindly, with the code.
    context = browser.new_context()
    fake_prolific(context)
    second = context.new_page()
    second.goto(live_server.url + entry_url(study, "QUAL2"))
    second.check("#consent")
    second.click("#start")
    second.wait_for_url(re.compile(r"/item/1/$"))
    failing = Assignment.objects.get(participant__prolific_pid="QUAL2")
    for position in range(1, practice + 1):
        if position < practice:
            rate_practice(second, failing, position, inside=False)
            second.keyboard.press("Enter")
            second.wait_for_url(re.compile(rf"/item/{position + 1}/$"))
        else:
            last = Item.objects.get(pk=failing.item_order[position - 1])
            second.keyboard.press("1" if last.expected_min > 3 else "0")  # outside: failed
    second.wait_for_url(re.compile(r"/done/$"))
    assert second.is_visible("#not-qualified")
    failing.refresh_from_db()
    assert (
        second.inner_text("#completion-code")
        == failing.completion_code
        == study.failed_attention_code
    )
    snapshot(second, "done-not-qualified")
    assert page.js_errors == []
    page.context.close()
    context.close()


def test_a_score_clicked_before_the_page_script_ran_is_saved(browser, live_server, study):
    """A slow page: the person clicks a score before rate.js has run (here it is
    held back, then run). The script saves what the page shows, as a click
    would; the server's stored value, not the page's state, says what is saved."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    script = Path(__file__).resolve().parents[2] / "annotator" / "static" / "annotator" / "rate.js"
    context.route("**/annotator/rate.js", lambda route: route.fulfill(body="", status=200))
    page = context.new_page()
    page.goto(live_server.url + entry_url(study, "EARLY"))
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(re.compile(r"/item/1/$"))
    page.click("label.score:has-text('7') >> nth=0")
    assert not Rating.objects.exists()  # no script yet: nothing sent
    page.add_script_tag(content=script.read_text())
    page.wait_for_selector("#status:has-text('Saved: 7')")
    rating = Rating.objects.get()
    assert (rating.score, rating.assignment.participant.prolific_pid) == (7, "EARLY")
    # the page again, its script on time: the stored 7 is shown and not sent again
    context.unroute("**/annotator/rate.js")
    page.reload()
    page.wait_for_selector("input[name=score][value='7']:checked")
    page.wait_for_timeout(300)
    assert "Saving" not in page.inner_text("#status")
    assert Rating.objects.count() == 1
    context.close()
