"""The planner's "select items for humans" action: which responses it picks
(against direct computations), the study it creates through
annotator.actions.settings.check_save_study (exactly those responses), refusals that change nothing,
the command, the API, a race of two creations on PostgreSQL, and the report
page's form driven in Chromium."""

from __future__ import annotations

import re
import threading
import traceback

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections
from rest_framework.test import APIClient

from analysis.planning.items_for_humans import (
    choose_items,
    create_study,
    inclusion_probabilities,
    systematic_pps,
)
from analysis.report.selection import Selection, SelectionError
from annotator.errors import StudyError
from annotator.models import InclusionProbability, Study
from corpus.importers.synthetic import write_synthetic_elitr
from generation.models import Response
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment
from tests.browsing import create_study_from_report
from tests.conftest import database_snapshot, require

SELECTION = Selection(dataset_version="qa", split="test2", mode="st")


def frame_of(rows):
    table = pd.DataFrame(rows)
    wide = table.pivot_table(index="response_id", columns="evaluator", values="score")
    meta = table.drop_duplicates("response_id").set_index("response_id")[["system", "meeting"]]
    return table, wide.join(meta)


def synthetic(seed=0, n=60):
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(n):
        system, meeting = f"S{r % 3}", f"m{r % 4}"
        quality = rng.integers(1, 11)
        for judge, noise in (("j1", 0.5), ("j2", 2.5), ("j3", 1.0)):
            for seed_ in (1, 2, 3) if judge == "j1" else (1,):
                rows.append(
                    {
                        "response_id": r,
                        "evaluator": judge,
                        "rater": "",
                        "judgment_seed": seed_,
                        "score": float(np.clip(round(quality + rng.normal(0, noise)), 1, 10)),
                        "system": system,
                        "meeting": meeting,
                    }
                )
    return frame_of(rows)


def test_disagreement_samples_with_probabilities_rising_with_the_spread():
    table, frame = synthetic()
    pick = choose_items(table, frame, ["j1", "j2", "j3"], "disagreement", 10)
    spread = frame[["j1", "j2", "j3"]].std(axis=1, ddof=0)
    p = pick.probabilities
    assert len(pick.chosen) == 10 and len(set(pick.chosen)) == 10
    assert p.sum() == pytest.approx(10) and p.max() <= 1
    # proportional to the spread mixed with a 50% uniform floor: p = c * (0.5 * s / mean(s) + 0.5)
    expected = 0.5 * spread / spread.mean() + 0.5
    expected = expected / expected.sum() * 10
    assert p.sort_index().to_numpy() == pytest.approx(expected.sort_index().to_numpy())
    assert p.min() >= 0.5 * 10 / len(frame) - 1e-12  # the floor: no probability is tiny
    assert pick.scores == pytest.approx({r: spread[r] for r in pick.chosen})
    # the same seed picks the same responses
    assert choose_items(table, frame, ["j1", "j2", "j3"], "disagreement", 10).chosen == pick.chosen


def test_systematic_sampling_picks_each_response_with_its_probability():
    """Over many seeds, each response is picked as often as its probability
    says (the property inverse-probability weighting rests on)."""
    table, frame = synthetic(3)
    probabilities = choose_items(table, frame, ["j1", "j2", "j3"], "disagreement", 12).probabilities
    runs = 4000
    counts = pd.Series(0, index=frame.index)
    for seed in range(runs):
        chosen = systematic_pps(probabilities, seed)
        assert len(chosen) == 12
        counts[chosen] += 1
    frequency = counts / runs
    # within 4 binomial standard errors of each probability
    error = np.sqrt(probabilities * (1 - probabilities) / runs)
    assert (np.abs(frequency - probabilities) <= 4 * error + 1e-9).all()


def test_probabilities_above_one_are_capped_and_the_rest_rescaled():
    weights = pd.Series([100.0, 1.0, 1.0, 1.0, 1.0, 1.0], index=list("abcdef"))
    p = inclusion_probabilities(weights, 3)
    assert p["a"] == 1.0 and p.sum() == pytest.approx(3)
    assert p[list("bcdef")].to_numpy() == pytest.approx([0.4] * 5)
    assert systematic_pps(p, seed=1)[0] == "a"  # certain


def test_uncertainty_samples_by_the_spread_of_repeated_samples():
    table, frame = synthetic(1)
    pick = choose_items(table, frame, ["j1", "j2", "j3"], "uncertainty", 8)
    samples = table[table["evaluator"] == "j1"].groupby("response_id")["score"].std(ddof=1)
    expected = 0.5 * samples / samples.mean() + 0.5
    expected = (expected / expected.sum() * 8).clip(upper=1)
    assert len(pick.chosen) == 8
    if (expected < 1).all():
        assert pick.probabilities.sort_index().to_numpy() == pytest.approx(
            expected.sort_index().to_numpy()
        )
    assert pick.scores == pytest.approx({r: samples[r] for r in pick.chosen})


def test_random_is_stratified_by_system_and_meeting():
    table, frame = synthetic(2, n=120)  # 12 cells of 10 responses
    pick = choose_items(table, frame, ["j1"], "random", 36)
    cells = frame.loc[pick.chosen].groupby(["system", "meeting"]).size()
    assert len(cells) == 12 and set(cells) == {3}
    assert set(pick.probabilities.round(12)) == {0.3}
    uneven = choose_items(table, frame, ["j1"], "random", 40).chosen  # 40/12: 3 or 4 per cell
    assert set(frame.loc[uneven].groupby(["system", "meeting"]).size()) == {3, 4}
    assert len(set(uneven)) == 40
    assert choose_items(table, frame, ["j1"], "random", 40, seed=7).chosen != uneven


@pytest.mark.parametrize(
    ("judges", "method", "count", "message"),
    [
        (["j1"], "disagreement", 5, "disagreement needs 2 or more judges"),
        (["j2", "j3"], "uncertainty", 5, "uncertainty needs repeated samples"),
        (["j1", "j2"], "random", 500, "holds only 60 responses"),
        (["j1", "j2"], "random", 0, "choose from 1 to 10,000"),
        (["j1", "j2"], "vibes", 5, "method 'vibes'"),
    ],
)
def test_choices_that_cannot_be_made_are_refused(judges, method, count, message):
    table, frame = synthetic()
    with pytest.raises(SelectionError, match=re.escape(message)):
        choose_items(table, frame, judges, method, count)


@pytest.mark.django_db
def test_the_study_rates_exactly_the_chosen_responses(two_meetings, researcher):
    study = create_study(
        SELECTION,
        method="disagreement",
        count=7,
        kind="gold",
        name="Disputed answers",
        raters_per_task=2,
        actor=researcher,
    )
    items = list(study.items.filter(kind="response").values_list("response_id", flat=True))
    assert sorted(items) == sorted(study.responses.values_list("pk", flat=True)) and len(items) == 7
    # the judges of the synthetic data: gpt-4-eval and prometheus-eval (gold and silver are human)
    scores = {}
    for response, evaluator, score in Judgment.objects.filter(
        evaluator__name__in=("gpt-4-eval", "prometheus-eval")
    ).values_list("response_id", "evaluator__name", "score"):
        scores.setdefault(response, {})[evaluator] = score
    spread = {r: abs(s["gpt-4-eval"] - s["prometheus-eval"]) / 2 for r, s in scores.items()}
    # every response of the frame keeps its probability; the picked ones are the study's
    stored = {p.response_id: p for p in InclusionProbability.objects.filter(study=study)}
    assert set(stored) == set(spread) and study.sampling == "disagreement"
    assert {r for r, p in stored.items() if p.picked} == set(items)
    assert sum(p.probability for p in stored.values()) == pytest.approx(7)
    by_spread = sorted(stored.values(), key=lambda p: spread[p.response_id])
    assert all(
        a.probability <= b.probability + 1e-12
        for a, b in zip(by_spread, by_spread[1:], strict=False)
    )
    assert study.kind == "gold" and study.status == Study.Status.CLOSED
    assert study.raters_per_task == 2 and study.evaluator is not None
    assert study.audit_events.filter(action="build_items").exists()
    systems = set(Response.objects.filter(pk__in=items).values_list("run__system__name", flat=True))
    assert set(study.systems.values_list("name", flat=True)) == systems


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": "  "}, "name: give the new study a name"),
        ({"kind": "expert"}, "kind 'expert'"),
        ({"count": 1000}, "holds only 36 responses"),
        ({"method": "uncertainty"}, "uncertainty needs repeated samples"),
        ({"selection": Selection(split="test2")}, "from 2 settings"),
    ],
)
def test_refused_creations_change_nothing(two_meetings, tmp_path, changes, message):
    if "from 2 settings" in message:  # a second setting of the same meetings: multi-turn runs
        from corpus.models import Dataset
        from generation.models import GenerationRun

        source = GenerationRun.objects.filter(mode="st").first()
        run = GenerationRun.objects.create(
            system=source.system, dataset=Dataset.objects.get(pk=source.dataset_id), mode="mt"
        )
        gold = Evaluator.objects.get(name="gpt-4-eval")
        for response in source.responses.all():
            copy = Response.objects.create(run=run, question=response.question, text="x")
            Judgment.objects.create(
                evaluator=gold,
                response=copy,
                score=5,
                raw_score=5,
                raw_scale_min=1,
                raw_scale_max=10,
            )
    before = database_snapshot()
    arguments = {
        "method": "random",
        "count": 5,
        "kind": "crowd",
        "name": "Pilot",
        "raters_per_task": 3,
    } | {k: v for k, v in changes.items() if k != "selection"}
    with pytest.raises((SelectionError, StudyError), match=re.escape(message)):
        create_study(changes.get("selection", SELECTION), **arguments)
    assert database_snapshot() == before


@pytest.mark.django_db
def test_command_and_api(two_meetings, researcher):
    call_command(
        "select_items", "--method", "random", "--count", "6", "--kind", "crowd",
        "--raters", "3", "--name", "Random pilot", "--dataset-version", "qa", "--split",
        "test2", "--mode", "st",
    )  # fmt: skip
    study = Study.objects.get(name="Random pilot")
    assert study.items.filter(kind="response").count() == 6
    with pytest.raises(CommandError, match="exists already"):
        call_command(
            "select_items", "--method", "random", "--count", "6", "--kind", "crowd",
            "--name", "Random pilot",
        )  # fmt: skip
    with pytest.raises(CommandError, match="humans: unknown evaluator"):
        call_command(
            "select_items", "--method", "random", "--count", "6", "--kind", "crowd",
            "--name", "Other", "--humans", "nobody",
        )  # fmt: skip
    api = APIClient()
    api.force_login(researcher)
    answer = api.post(
        "/api/reports/select-items/",
        {
            "method": "disagreement",
            "count": 4,
            "kind": "gold",
            "name": "API pick",
            "dataset_version": "qa",
            "split": "test2",
            "mode": "st",
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    created = Study.objects.get(pk=body["study"])
    assert body["items"] == 4 and sorted(body["responses"]) == sorted(
        created.items.filter(kind="response").values_list("response_id", flat=True)
    )
    refused = api.post(
        "/api/reports/select-items/",
        {"method": "random", "count": 4, "kind": "gold", "name": "API pick"},
        format="json",
    )
    assert refused.status_code == 400 and "exists already" in refused.json()["detail"]
    assert api.post("/api/reports/select-items/", {"method": "x"}, format="json").status_code == 400
    assert APIClient().post("/api/reports/select-items/", {}, format="json").status_code == 401


@pytest.mark.django_db
def test_a_gold_study_from_a_report_is_assigned_to_its_gold_annotators(
    two_meetings, researcher, gold_annotator, client
):
    from tests.conftest import database_snapshot
    from users.models import User

    User.objects.create_user("gus", role="gold_annotator")
    setting = ("--dataset-version", "qa", "--split", "test2", "--mode", "st")
    call_command("select_items", "--method", "random", "--count", "4", "--kind", "gold",
                 "--name", "Expert pass", "--gold-annotators", "gina, gus", *setting)  # fmt: skip
    assert sorted(
        Study.objects.get(name="Expert pass").gold_annotators.values_list("username", flat=True)
    ) == ["gina", "gus"]
    api = APIClient()
    api.force_login(researcher)
    body = {"method": "random", "count": 4, "kind": "gold", "name": "API expert pass",
            "dataset_version": "qa", "split": "test2", "mode": "st"}  # fmt: skip
    made = api.post("/api/reports/select-items/", {**body, "gold_annotators": ["gina"]},
                    format="json")  # fmt: skip
    assert made.status_code == 201, made.content
    assert [
        u.username for u in Study.objects.get(pk=made.json()["study"]).gold_annotators.all()
    ] == ["gina"]
    # from the report page's form, comma-separated
    client.force_login(researcher)
    page = client.post(
        "/analysis/select-items/",
        {**body, "name": "Page expert pass", "raters_per_task": 1, "gold_annotators": "gus"},
    )
    assert page.status_code == 201
    assert list(
        Study.objects.get(name="Page expert pass").gold_annotators.values_list(
            "username", flat=True
        )
    ) == ["gus"]
    # a researcher is not a gold annotator; a crowd study has none: refused, nothing made
    before = database_snapshot()
    for change, words in (
        ({"gold_annotators": ["gina", "rita"]}, "no active gold annotator 'rita'"),
        ({"gold_annotators": ["gina"], "kind": "crowd"}, "only a gold study has gold annotators"),
    ):
        refused = api.post("/api/reports/select-items/", {**body, "name": "x", **change},
                           format="json")  # fmt: skip
        assert refused.status_code == 400 and words in refused.json()["detail"], refused.content
    assert database_snapshot() == before


@pytest.mark.django_db(transaction=True)
def test_two_creations_with_one_name_make_one_study(tmp_path):
    require(
        connection.vendor == "postgresql",
        f"race tests need PostgreSQL (DATABASE_URL); this run uses {connection.vendor}",
    )
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    for trial in range(3):
        barrier = threading.Barrier(2)
        outcomes = ["", ""]

        def run(index, trial=trial, barrier=barrier, outcomes=outcomes):
            try:
                barrier.wait()
                create_study(
                    SELECTION, method="random", count=5 + index, kind="crowd",
                    name=f"Race {trial}", raters_per_task=2,
                )  # fmt: skip
                outcomes[index] = "ok"
            except StudyError as error:
                outcomes[index] = f"refused: {error}"
            except Exception:  # noqa: BLE001 - the test reports any crash
                outcomes[index] = "crash: " + traceback.format_exc()
            finally:
                connections.close_all()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(o.split(":")[0] for o in outcomes) == ["ok", "refused"], outcomes
        assert "exists already" in next(o for o in outcomes if o.startswith("refused"))
        study = Study.objects.get(name=f"Race {trial}")
        # the study holds the items of the creation that won, nothing of the other
        assert study.items.filter(kind="response").count() == study.responses.count()
        assert study.responses.count() in (5, 6)
    assert Study.objects.count() == 3


@pytest.mark.browser
def test_researcher_creates_a_study_from_the_report_page(
    browser, live_server, transactional_db, tmp_path, django_user_model
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    django_user_model.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live_server.url + "/analysis/report/?dataset_version=qa&split=test2&mode=st")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "rita")
    page.fill("#id_password", "pw-rita-123")
    page.click("#sign-in")
    page.wait_for_selector("#trust")
    assert page.get_by_text("Select items for humans").is_visible()
    create_study_from_report(
        page,
        count=8,
        method="disagreement",
        kind="gold",
        name="Second expert on disputed answers",
        raters=1,
    )
    assert "Second expert on disputed answers" in page.inner_text("#created")
    study = Study.objects.get(name="Second expert on disputed answers")
    shown = {int(r) for r in page.locator("#items tr[data-response]").evaluate_all(
        "rows => rows.map(r => r.dataset.response)"
    )}  # fmt: skip
    stored = set(study.items.filter(kind="response").values_list("response_id", flat=True))
    assert shown == stored and len(stored) == 8
    assert study.kind == "gold" and set(study.responses.values_list("pk", flat=True)) == stored
    # the same name again: refused, and nothing more is created
    page.go_back()
    page.wait_for_selector("#select-items")
    page.locator("#select-items input[name=name]").fill("Second expert on disputed answers")
    page.locator("#select-items button[type=submit]").click()
    page.wait_for_selector("#refused")
    assert "exists already" in page.inner_text("#refused")
    assert Study.objects.count() == 1


@pytest.mark.django_db
def test_the_page_action_is_for_researchers_and_posts_only(two_meetings, client, gold_annotator):
    form = {"method": "random", "count": 3, "kind": "crowd", "name": "x", "raters_per_task": 1}
    assert client.post("/analysis/select-items/", form).status_code == 302  # to the login
    client.force_login(gold_annotator)
    assert client.post("/analysis/select-items/", form).status_code == 403
    assert Study.objects.count() == 0
    answer = client.get("/analysis/select-items/")
    assert answer.status_code in (403, 405)


@pytest.mark.django_db
def test_a_bad_form_is_refused_with_what_is_wrong(two_meetings, client, researcher):
    client.force_login(researcher)
    answer = client.post(
        "/analysis/select-items/",
        {"method": "random", "count": "-3", "kind": "crowd", "name": "x", "raters_per_task": 1},
    )
    assert answer.status_code == 400 and "count:" in answer.content.decode()
    answer = client.post(
        "/analysis/select-items/",
        {"method": "random", "count": 3, "kind": "crowd", "name": "x", "mode": "zz"},
    )
    assert answer.status_code == 400 and "mode &#x27;zz&#x27;" in answer.content.decode()
    assert Study.objects.count() == 0
