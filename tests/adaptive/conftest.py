from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from adaptive.loop import check_create
from adaptive.models import AdaptiveStudy
from corpus.models import Dataset
from generation.models import System
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment
from tests.conftest import rolled_back_once

SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")


def import_paper(elitr_data: Path) -> dict:
    """Import the paper's data (English) and name what the tests use: primary
    keys, and the gold humans' mean score of each response."""
    import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
    gold = Evaluator.objects.get(name="gold-human-eval")
    truth = {}
    for rid, score in Judgment.objects.filter(evaluator=gold).values_list("response_id", "score"):
        truth.setdefault(rid, []).append(score)
    return {
        "dataset": Dataset.objects.get(version="qa", language="en", split="test2").pk,
        "systems": list(
            System.objects.filter(name__in=SYSTEMS).order_by("name").values_list("pk", flat=True)
        ),
        "judge": Evaluator.objects.get(name="gpt-4-eval").pk,
        "other": Evaluator.objects.get(name="prometheus-eval").pk,
        "silver": Evaluator.objects.get(name="silver-human-eval").pk,
        "truth": {rid: float(np.mean(s)) for rid, s in truth.items()},
    }


def paper_objects(imported: dict) -> dict:
    """The test's own model instances of the imported rows (fresh for each test,
    so that nothing one test changes on an instance reaches another) and its own
    copy of the truth."""
    systems = System.objects.in_bulk(imported["systems"])
    return {
        "dataset": Dataset.objects.get(pk=imported["dataset"]),
        "systems": [systems[pk] for pk in imported["systems"]],
        "judge": Evaluator.objects.get(pk=imported["judge"]),
        "other": Evaluator.objects.get(pk=imported["other"]),
        "silver": Evaluator.objects.get(pk=imported["silver"]),
        "truth": dict(imported["truth"]),
    }


@pytest.fixture(scope="module")
def paper_once(elitr_data_unlocked, django_db_setup, django_db_blocker):
    """The paper's data, imported once for the module (about 2.4 s each time)
    inside a transaction rolled back at the module's end: each test's own
    transaction (pytest-django's `db`) is a savepoint within it, so every test
    still starts from the same rows, with the same primary keys."""
    with rolled_back_once(django_db_blocker):
        imported = import_paper(elitr_data_unlocked)
        # the import's deferred foreign-key checks, run now in this transaction:
        # left pending, each test's teardown (a savepoint's) would run them again
        connection.check_constraints()
        yield imported


@pytest.fixture
def paper(paper_once, db):
    """The module's paper data, in this test's own transaction. A test that
    needs committed data (transactional_db, live_server, a browser, a worker)
    cannot run inside the module's transaction: it uses paper_committed."""
    return paper_objects(paper_once)


@pytest.fixture(autouse=True)
def transactional_tests_outside_paper_once(request):
    """A transactional test run while the module's transaction is open (it
    requests paper, or follows a test that did in its file) would not commit
    what its threads or processes need, and its flush would empty the shared
    rows: it belongs in a file without the shared data, with paper_committed."""
    marker = request.node.get_closest_marker("django_db")
    transactional = marker is not None and (
        marker.kwargs.get("transaction") or (bool(marker.args) and marker.args[0])
    )
    transactional = transactional or {"transactional_db", "live_server"} & set(request.fixturenames)
    if transactional and connection.in_atomic_block:
        pytest.fail("a transactional test inside the module's shared paper data (paper_once)")


@pytest.fixture
def paper_committed(elitr_data_unlocked, transactional_db):
    """The paper's data imported for this test alone, for a test whose data
    must be committed (it is flushed after the test)."""
    return paper_objects(import_paper(elitr_data_unlocked))


def make(paper, researcher=None, groups=None, **fields) -> AdaptiveStudy:
    values = {
        "name": "Adaptive: crowd vs GPT-4",
        "goal": AdaptiveStudy.Goal.MEANS,
        "half_width": 1.0,
        "population": AdaptiveStudy.Population.CROWD,
        "dataset": paper["dataset"],
        "mode": "st",
        "judge": paper["judge"],
        "uncertainty_judge": paper["other"],
        "prior_humans": paper["silver"],
        "budget_pence": 60000,
        "deadline": timezone.now() + timedelta(days=2),
        "draws_per_wave": 80,
        "min_labels": 20,
        "t_opt": 200,
        "scale": 2.5,
    }
    values.update(fields)
    return check_create(AdaptiveStudy(**values), paper["systems"], actor=researcher, groups=groups)
