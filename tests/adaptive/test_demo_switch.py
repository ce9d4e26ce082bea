"""The demo's adaptive study and its simulated participants (demo.simulated),
in process: planned beside the demo data, on Prolific only with the switch
on, and run to its answer by the bots on the fake Prolific server."""

from __future__ import annotations

import pytest

from adaptive import loop
from adaptive.models import AdaptiveStudy
from adaptive.prolific import sync_on_prolific
from annotator.prolific_api import ProlificClient
from corpus.models import Dataset
from demo.fake_prolific import FakeProlific
from demo.simulated import DEMO_ADAPTIVE, TOKEN, ensure_demo_adaptive_study, simulate

pytestmark = pytest.mark.django_db


def test_the_switch_decides_whether_the_demo_study_recruits(paper):
    assert ensure_demo_adaptive_study(paper["dataset"], paper["systems"], False) == "planned"
    adaptive = AdaptiveStudy.objects.get(name=DEMO_ADAPTIVE)
    assert adaptive.on_prolific is False  # never real people because a token is set
    assert ensure_demo_adaptive_study(paper["dataset"], paper["systems"], True) == "kept"
    adaptive.refresh_from_db()
    assert adaptive.on_prolific is True
    assert ensure_demo_adaptive_study(None, [], True) == "kept"


def test_the_planned_demo_study_follows_the_data_the_demo_imported(paper):
    """Planned on other data (the synthetic meeting, before the real archives
    came in): stopped before it began, kept under another name, and planned
    again on the data now imported."""
    other = Dataset.objects.exclude(pk=paper["dataset"].pk).filter(version="qa").first()
    assert ensure_demo_adaptive_study(other, paper["systems"], False) == "planned"
    old = AdaptiveStudy.objects.get(name=DEMO_ADAPTIVE)
    assert ensure_demo_adaptive_study(paper["dataset"], paper["systems"], False) == "planned"
    new = AdaptiveStudy.objects.get(name=DEMO_ADAPTIVE)
    assert new.pk != old.pk and new.dataset_id == paper["dataset"].pk
    old.refresh_from_db()
    assert old.status == AdaptiveStudy.Status.FINISHED and old.name.endswith("other data)")
    # the same data again: kept
    assert ensure_demo_adaptive_study(paper["dataset"], paper["systems"], False) == "kept"


def test_bots_run_the_demo_study_to_its_answer(paper):
    ensure_demo_adaptive_study(paper["dataset"], paper["systems"], True)
    adaptive = AdaptiveStudy.objects.get(name=DEMO_ADAPTIVE)
    with FakeProlific(token=TOKEN, page_size=100) as prolific:
        client = ProlificClient(TOKEN, prolific.url)
        loop.check_start(adaptive)
        for _ in range(60):
            sync_on_prolific(adaptive.pk, client)
            simulate(prolific, seconds=0, per_tick=200, ticks=1, report=lambda _: None)
            loop.check_advance(adaptive.pk)
            adaptive.refresh_from_db()
            if adaptive.status == AdaptiveStudy.Status.FINISHED:
                break
        sync_on_prolific(adaptive.pk, client)
        assert adaptive.status == AdaptiveStudy.Status.FINISHED
        assert adaptive.report["met"], adaptive.report
        # every bot that completed was paid the bonus and thanked
        completed = {
            s["participant_id"]
            for s in prolific.submissions.values()
            if s["status"] == "AWAITING REVIEW"
        }
        assert {who for _, who, _ in prolific.paid} == completed
        assert {m["to"] for m in prolific.messages} == completed
