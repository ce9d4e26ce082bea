"""The demo's simulated participants (its clearly labelled switch,
CONCORD_DEMO_SIMULATED_PARTICIPANTS=1 or `run_demo --simulated-participants`):
a fake Prolific server on this machine that the web server and the worker
talk to as Prolific, and bots that take the places of every adaptive study's
batches there, a few at a time, rating as the paper's gold annotator did
with noise (demo.bots). Also the demo's planned adaptive study, for the
researcher to start."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import numpy as np
from django.db import DatabaseError, transaction
from django.utils import timezone

from adaptive.changes import check_stop
from adaptive.errors import AdaptiveError
from adaptive.loop import batches, check_create
from adaptive.models import AdaptiveStudy
from annotator.errors import StudyError
from annotator.models import Study
from corpus.models import Dataset
from demo.bots import rate_as_bots
from demo.fake_prolific import FakeProlific
from generation.models import System
from judging.models import Evaluator, Judgment

DEMO_ADAPTIVE = "Demo: adaptive crowd study (means within +-1.0)"
TOKEN = "demo-simulated-prolific"
JUDGE, UNCERTAINTY, GOLD, SILVER = (
    "gpt-4-eval",
    "prometheus-eval",
    "gold-human-eval",
    "silver-human-eval",
)


def ensure_demo_adaptive_study(
    dataset: Dataset | None, systems: list[System], simulated: bool
) -> str:
    """A planned adaptive study on the demo's data (made once); what happened.
    Its batches go to Prolific only with the simulated participants on: a demo
    must never recruit real people because a real PROLIFIC_API_TOKEN is set."""
    existing = AdaptiveStudy.objects.filter(name=DEMO_ADAPTIVE).first()
    if (
        existing is not None
        and dataset is not None
        and existing.dataset_id != dataset.pk
        and existing.status == AdaptiveStudy.Status.PLANNED
    ):
        # planned on data the demo no longer uses (the synthetic meeting before the
        # real archives came in): stopped before it began, kept under another name
        with transaction.atomic():
            stopped = check_stop(existing, None, "the demo's data changed")
            stopped.name = f"{DEMO_ADAPTIVE} (replaced #{stopped.pk}: other data)"
            stopped.save(update_fields=["name"])
        existing = None
    if existing is not None:
        if existing.status == AdaptiveStudy.Status.PLANNED and existing.on_prolific != simulated:
            existing.on_prolific = simulated
            existing.save(update_fields=["on_prolific"])
        return "kept"
    judges = {e.name: e for e in Evaluator.objects.filter(name__in=[JUDGE, UNCERTAINTY, SILVER])}
    if dataset is None or not systems or JUDGE not in judges:
        return "no data for it"
    try:
        check_create(
            AdaptiveStudy(
                name=DEMO_ADAPTIVE,
                goal=AdaptiveStudy.Goal.MEANS,
                half_width=1.0,
                dataset=dataset,
                mode="st",
                judge=judges[JUDGE],
                uncertainty_judge=judges.get(UNCERTAINTY),
                prior_humans=judges.get(SILVER),
                budget_pence=30000,
                deadline=timezone.now() + timedelta(days=30),
                draws_per_wave=60,
                min_labels=20,
                t_opt=200,
                scale=2.5,
                on_prolific=simulated,
                bonus_pence=50,
                closing_message="Thank you: the study has its answer. A bonus is on its way.",
            ),
            systems,
        )
    except AdaptiveError as error:
        return f"not planned: {error}"
    return "planned"


def truth_of() -> Callable[[int], float]:
    """What a bot's ratings scatter around: the gold annotator's score, else the judge's."""
    scores: dict[int, float] = {}
    for name in (JUDGE, GOLD):  # gold last: it wins where both exist
        for rid, score in Judgment.objects.filter(evaluator__name=name).values_list(
            "response_id", "score"
        ):
            scores[rid] = score
    return lambda rid: scores.get(rid, 5.5)


def simulate(
    prolific: FakeProlific,
    *,
    seconds: float = 2.0,
    per_tick: int = 2,
    ticks: int | None = None,
    report: Callable[[str], None] = print,
) -> None:
    """Every `seconds`, up to `per_tick` bots per open batch that is live on
    the fake Prolific server (as a real participant only finds a published
    study). Runs until stopped (or `ticks` times). A bot refused on the way
    (StudyError) or kept out by the database is reported, and its study is
    tried again next round."""
    rng = np.random.default_rng()
    truth = truth_of()
    done = 0
    while ticks is None or done < ticks:
        done += 1
        live = AdaptiveStudy.objects.filter(
            status__in=[AdaptiveStudy.Status.RUNNING, AdaptiveStudy.Status.STOPPING]
        )
        for adaptive in live:
            for study in batches(adaptive):
                on_prolific = prolific.studies.get(study.prolific_study_id, {})
                if study.status != Study.Status.OPEN or on_prolific.get("status") != "ACTIVE":
                    continue
                try:
                    counts = rate_as_bots(study, truth, rng, prolific=prolific, most=per_tick)
                except (StudyError, DatabaseError) as error:
                    # a study closed under a bot, a database busy past its timeout:
                    # the round is lost, not the demo (the web server and the worker
                    # stop with this process); the next round tries again
                    report(f"{study.name}: a bot stopped: {error}")
                    continue
                if counts["completed"] or counts["returned"]:
                    report(
                        f"{study.name}: {counts['completed']} bot(s) completed, "
                        f"{counts['returned']} returned"
                    )
        time.sleep(seconds)
