"""Simultaneous arrivals cannot overfill a task: the study row is locked while
a place is chosen (PostgreSQL: SELECT ... FOR UPDATE; SQLite: one writer)."""

import threading

import pytest
from django.db import connections

from annotator import services
from annotator.models import Assignment
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from tests.annotator.conftest import make_study


@pytest.mark.django_db(transaction=True)
def test_simultaneous_arrivals_fill_each_place_once(tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    study = make_study(raters=2)  # 2 meetings x 2 raters = 4 places
    barrier = threading.Barrier(10)
    outcomes: list[str] = []

    def arrive(number: int) -> None:
        try:
            barrier.wait()
            services.start_assignment(study, pid=f"RUSH{number}")
            outcomes.append("assigned")
        except services.QuotaFull:
            outcomes.append("full")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=arrive, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["assigned"] * 4 + ["full"] * 6
    per_task = sorted(Assignment.objects.values_list("task_id", flat=True).order_by("task_id"))
    assert len(per_task) == 4 and len(set(per_task)) == 2
    assert per_task.count(per_task[0]) == 2
