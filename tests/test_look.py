"""One look: the colour pairs the stylesheets put text on meet WCAG 2.1 AA
contrast (4.5:1 for text), focus is visible, and every page carries the mark."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

CONCORD_CSS = REPO / "static" / "concord" / "concord.css"
RATE_CSS = REPO / "annotator" / "static" / "annotator" / "rate.css"


def tokens(path) -> dict[str, str]:
    root = re.search(r":root\s*\{(.*?)\}", path.read_text(), re.S)[1]
    found = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?)\b", root))
    # #fff is #ffffff
    return {k: v if len(v) == 7 else "#" + "".join(c * 2 for c in v[1:]) for k, v in found.items()}


def luminance(hex_colour: str) -> float:
    """WCAG 2.1 relative luminance (sRGB)."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_known_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near-miss


# (text, background) pairs the console's stylesheet uses
CONSOLE_PAIRS = [
    ("ink", "bg"),
    ("ink", "card"),
    ("muted", "bg"),
    ("muted", "card"),
    ("muted", "soft"),
    ("accent-ink", "bg"),
    ("accent-ink", "card"),
    ("accent-ink", "accent-soft"),
    ("ok", "ok-soft"),
    ("warn", "warn-soft"),
    ("error", "error-soft"),
    ("error", "card"),
]


@pytest.mark.parametrize(("text", "background"), CONSOLE_PAIRS)
def test_console_text_meets_aa(text, background):
    colours = tokens(CONCORD_CSS)
    assert contrast(colours[text], colours[background]) >= 4.5


def test_buttons_and_participant_pages_meet_aa():
    console = tokens(CONCORD_CSS)
    assert contrast("#ffffff", console["accent"]) >= 4.5  # white on a primary button
    assert contrast("#ffffff", console["accent-ink"]) >= 4.5  # hovered
    rate = tokens(RATE_CSS)
    for text, background in [("ink", "bg"), ("muted", "bg"), ("muted", "card"), ("accent", "card")]:
        assert contrast(rate[text], rate[background]) >= 4.5, (text, background)
    assert contrast("#ffffff", rate["accent"]) >= 4.5
    assert rate["accent"] == console["accent"] and rate["ink"] == console["ink"]  # one look


def test_focus_is_visible_everywhere():
    assert re.search(r":focus-visible\s*\{\s*outline:\s*3px solid", CONCORD_CSS.read_text())
    admin_css = (REPO / "static" / "concord" / "admin.css").read_text()
    assert "focus-visible" in admin_css and "outline: 3px solid" in admin_css


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/", "/no-such-page/", "/gold/"])
def test_pages_carry_the_mark(client, gold_annotator, path):
    if path == "/gold/":
        client.force_login(gold_annotator)
    html = client.get(path, follow=True).content.decode()
    assert "favicon.svg" in html and "Concord" in html
    assert "Django administration" not in html


def test_the_500_page_is_the_products_and_the_api_answers_json(rf):
    from core.api import server_error

    page = server_error(rf.get("/console/"))
    assert page.status_code == 500
    html = page.content.decode()
    assert "Something went wrong on our side" in html and "concord/concord.css" in html
    api = server_error(rf.get("/api/studies/"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"
