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


def test_a_bot_refused_mid_task_returns_its_place_and_the_bots_go_on(paper, monkeypatch):
    """The study closes under a bot between two ratings (the loop finishing, a
    researcher closing it): the round is reported, the bot's place is returned
    on Concord's side and on Prolific's, and simulate goes on instead of
    stopping the demo's processes with it."""
    import demo.bots
    from annotator.actions.status import check_set_study_status
    from annotator.models import Assignment, Study

    ensure_demo_adaptive_study(paper["dataset"], paper["systems"], True)
    adaptive = AdaptiveStudy.objects.get(name=DEMO_ADAPTIVE)
    real_rate = demo.bots.check_rate_item
    closed = []

    def close_then_rate(assignment, position, **rating):
        if position == 2 and not closed:
            study = assignment.task.study
            check_set_study_status(study, Study.Status.CLOSED)
            closed.append(study.pk)
        return real_rate(assignment, position, **rating)

    monkeypatch.setattr(demo.bots, "check_rate_item", close_then_rate)
    reports: list[str] = []
    with FakeProlific(token=TOKEN, page_size=100) as prolific:
        loop.check_start(adaptive)
        sync_on_prolific(adaptive.pk, ProlificClient(TOKEN, prolific.url))
        simulate(prolific, seconds=0, per_tick=1, ticks=2, report=reports.append)
    refused = [r for r in reports if "a bot stopped" in r]
    assert len(refused) == 1 and "This study is closed" in refused[0], reports
    # the others went on rating in the batches still open
    assert any("1 bot(s) completed" in r for r in reports), reports
    left = Assignment.objects.filter(task__study_id=closed[0])
    assert list(left.values_list("status", flat=True)) == [Assignment.Status.RETURNED]
    pid = left.get().participant.prolific_pid
    assert [s["status"] for s in prolific.submissions.values() if s["participant_id"] == pid] == [
        "RETURNED"
    ]


def test_the_fake_prolific_takes_another_port_when_its_own_is_held():
    """run_demo binds the fake Prolific's socket before it tells the web server
    and the worker where it is: a port another program holds (the web server's
    + 790 is an ephemeral port that any connection may hold) moves it to a
    free one instead of stopping the demo when the bots' process starts."""
    import json
    import socket
    import urllib.request

    from demo.management.commands.run_demo import listening_socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        held = holder.getsockname()[1]
        listening = listening_socket(held)
        assert listening.getsockname()[1] != held
        with FakeProlific(token=TOKEN, listening=listening) as prolific:
            assert prolific.url.endswith(f":{listening.getsockname()[1]}/api/v1/")
            request = urllib.request.Request(
                prolific.url + "studies/nothing/", headers={"Authorization": f"Token {TOKEN}"}
            )
            try:
                urllib.request.urlopen(request, timeout=5)
            except urllib.error.HTTPError as answer:
                assert answer.code == 404 and "error" in json.loads(answer.read())
            else:
                raise AssertionError("an unknown study must be a 404")
    free = listening_socket(0)
    assert free.getsockname()[1] > 0
    free.close()
