"""Steps that several browser tests take: signing in, and creating a study
from the report page's "select items for humans" form."""

from __future__ import annotations

from urllib.parse import quote

# Playwright's 30 s is short for the suite: an agreement report's first
# render takes some 10 s alone (benchmarks/console_pages.py), and under four
# test workers on two cores it passed 30 s in two rehearsals. A page that
# never comes still fails, later.
PAGE_TIMEOUT_MS = 90_000


def sign_in(browser, live_server, user="rita", password="pw-rita-123", path="/", viewport=None):
    """A new page, signed in through the sign-in form, at `path`."""
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/?next={quote(path)}")
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    page.click("#sign-in")
    page.wait_for_load_state()
    return page


def create_study_from_report(page, *, count: int, method: str, kind: str, name: str, raters=None):
    """Fill and send the report page's form that picks items for humans; wait
    for the "Study created" page."""
    form = page.locator("#select-items")
    form.locator("input[name=count]").fill(str(count))
    form.locator("select[name=method]").select_option(method)
    form.locator("select[name=kind]").select_option(kind)
    form.locator("input[name=name]").fill(name)
    if raters is not None:
        form.locator("input[name=raters_per_task]").fill(str(raters))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#created")
