import os
from pathlib import Path

import pytest
from django.db import connections

from annotator import services
from annotator.models import Study
from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator
from tests.conftest import require

CHROMIUM = Path(os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium"))


def make_study(name="Crowd pilot", kind=Study.Kind.CROWD, raters=2, **fields) -> Study:
    """A study over every system's test2 QA responses, saved (and built) as the
    admin and the API save one, then opened."""
    study = Study(
        name=name,
        kind=kind,
        raters_per_task=raters,
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        completion_code="C0DE1234",
        **fields,
    )
    services.save_study(study, [], after_save=lambda saved: saved.systems.set(System.objects.all()))
    services.set_study_open(study, True)
    return study


@pytest.fixture
def crowd_study(two_meetings) -> Study:
    return make_study(gold_evaluator=Evaluator.objects.get(name="gold-human-eval"))


@pytest.fixture
def gold_study(two_meetings) -> Study:
    return make_study(name="Gold pass", kind=Study.Kind.GOLD, raters=1)


def entry_url(study: Study, pid: str, session: str = "SESSION1") -> str:
    return f"/s/{study.public_id}/?PROLIFIC_PID={pid}&STUDY_ID=PSTUDY&SESSION_ID={session}"


@pytest.fixture
def browser(monkeypatch, live_server):
    """Debian's Chromium driven by Playwright (never a downloaded browser).

    Depends on live_server so that Chromium closes its connections before the
    server stops (else a request thread keeps a database connection open).
    Playwright's sync API keeps an event loop in this thread; the ORM calls a
    test makes between browser steps are still plain synchronous calls."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    require(
        CHROMIUM.exists(), f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "the playwright package is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        yield chromium
        # While Playwright's loop runs, Django keys connections by that context:
        # close the ones this test opened before the loop goes away.
        connections.close_all()
        chromium.close()
