"""benchmarks/arrival_burst.py at a tiny scale, so that it cannot rot: a
crowd study of 3 tasks x 2 places behind gunicorn (4 workers) on
PostgreSQL, 16 Prolific arrivals at once (link, consent, first item: ten more
than the places, so that consents race for the last places), then 2 late
ones. What the benchmark checks must hold: every place taken exactly once, by
one participant each, the ones beyond the quota refused, the late ones shown
the "Study full" page. (Without the study lock in check_start_assignment a
task gets 3 or 4 participants here.) No timing is asserted."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

from annotator.models import Assignment, Participant
from benchmarks.arrival_burst import (
    build_study,
    check_places,
    import_meetings,
    run_arrivals,
    schedule,
)
from benchmarks.crowd_web import gunicorn, web_env
from tests.conftest import require
from tests.workers import database_url_for_worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_burst_fills_every_place_once_and_refuses_the_rest(tmp_path):
    require(
        connection.vendor == "postgresql",
        f"the arrival burst runs on PostgreSQL (DATABASE_URL); this run uses {connection.vendor}",
    )
    import_meetings(3, tmp_path / "meetings")
    study = build_study("Burst", tasks=3, places=2)
    burst = schedule([f"BURST{n}" for n in range(16)], window=0.0, seed=1)
    late = schedule([f"LATE{n}" for n in range(2)], window=0.2, seed=2)
    with gunicorn(web_env(database_url_for_worker(), tmp_path / "var"), workers=4) as base:
        run_arrivals(base, str(study.public_id), burst)
        run_arrivals(base, str(study.public_id), late)

    stored = check_places(study.pk, burst, late)
    assert stored["problems"] == []
    assert (stored["filled"], stored["tasks_exactly_full"], stored["late_shown_full"]) == (6, 3, 2)
    # the same, read here without the benchmark's help
    outcomes = Counter(a.outcome for a in burst)
    assert outcomes["assigned"] == 6
    assert outcomes["full"] + outcomes["full at consent"] == 10
    assert [a.outcome for a in late] == ["full", "full"]
    loads = Counter(Assignment.objects.filter(task__study=study).values_list("task", flat=True))
    assert sorted(loads.values()) == [2, 2, 2]
    placed = {a.pid: a.token for a in burst if a.outcome == "assigned"}
    stored_tokens = Assignment.objects.filter(task__study=study).values_list(
        "participant__prolific_pid", "token"
    )
    assert dict(stored_tokens) == placed
    assert Participant.objects.filter(study=study).count() == 6
    assert all(set(a.server_ms) == {"link"} for a in late)
