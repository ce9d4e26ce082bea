"""A new study's selection chosen in the console's form, in Chromium: the
dataset's meetings (its tasks) appear once the dataset is chosen, without
losing what was typed, and "items per task" draws that many responses of
each chosen meeting, spread over the systems. A pairwise study keeps the
baseline's answer beside each response drawn."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from annotator.actions.items import sample_per_task
from annotator.models import Item, Study
from corpus.importers.synthetic import write_synthetic_elitr
from generation.models import System
from judging.importing import import_elitr_bench
from tests.browsing import sign_in
from tests.corpus.fixtures import qa_test2
from users.models import User

pytestmark = pytest.mark.browser


def test_meetings_and_items_per_task_are_chosen_in_the_form(
    browser, live_server, transactional_db, tmp_path
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=3), with_responses=True)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = sign_in(browser, live_server, path="/console/studies/new/")
    assert "Choose the dataset first" in page.inner_text("#field-documents")
    page.fill("#id_name", "Two meetings, six items each")
    page.select_option("#id_dataset", value=str(qa_test2().pk))
    page.wait_for_selector("#field-documents input[type=checkbox]")
    meetings = page.locator("#field-documents input[type=checkbox]")
    assert meetings.count() == 3
    assert page.input_value("#id_name") == "Two meetings, six items each"  # kept
    meetings.nth(0).check()
    meetings.nth(1).check()
    for box in page.locator("input[name=systems]").all():
        box.check()
    page.fill("#id_items_per_task", "6")
    page.fill("#id_raters_per_task", "2")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/studies/\d+/$"))
    study = Study.objects.get(name="Two meetings, six items each")
    assert study.tasks.count() == 2
    for task in study.tasks.all():
        rated = Item.objects.filter(task=task, kind=Item.Kind.RESPONSE)
        assert rated.count() == 6  # and the attention checks on top
        assert Item.objects.filter(task=task, kind=Item.Kind.ATTENTION).exists()
        per_system = Counter(rated.values_list("response__run__system__name", flat=True))
        assert sorted(per_system.values()) == [2, 2, 2]  # spread over the three systems
    assert "2 tasks, " in page.inner_text("#messages")


def test_a_pairwise_draw_keeps_the_baseline_answer_beside_each_response(transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    systems = list(System.objects.order_by("name"))
    study = Study.objects.create(
        name="pairs",
        dataset=qa_test2(),
        rating_type=Study.RatingType.PAIRWISE,
        baseline_system=systems[0],
    )
    study.systems.set(systems)
    drawn = sample_per_task(study, 3)
    chosen = study.responses.model.objects.filter(pk__in=drawn).select_related("run__system")
    judged = [r for r in chosen if r.run.system_id != systems[0].pk]
    baseline = {r.question_id for r in chosen if r.run.system_id == systems[0].pk}
    assert len(judged) == 6  # three of each of the two meetings
    assert {r.question_id for r in judged} <= baseline
    assert sample_per_task(study, 3) == drawn  # the same study draws the same
