"""Everything the demo needs before it serves: schema, data, an admin account.

The data comes from the first of: $CONCORD_ELITR_DATA, the shared ELITR-Bench
folder beside the checkout (../shared/datasets/elitr-bench), a download from
GitHub, and last a synthetic meeting that Concord writes itself.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotator import services
from annotator.models import Study
from corpus.choices import Mode
from corpus.importers import ImportFailure
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from corpus.services import ELITR_BENCH, SYNTHETIC_ELITR_BENCH
from generation.models import System
from judging.importing import ElitrImportSummary, import_elitr_bench, resolve_elitr_source
from judging.models import Evaluator

SHARED_ELITR_DATA = settings.BASE_DIR.parent / "shared" / "datasets" / "elitr-bench"
DEMO_ADMIN = "admin"


PAPER_CROWD_SYSTEMS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")  # the paper's Silver Human set


@dataclass
class DemoSetup:
    data_origin: str
    summary: ElitrImportSummary
    username: str
    password: str
    study: Study | None = None

    @property
    def report_path(self) -> str:
        """The agreement report of the default selection (for the paper's data, its
        human-evaluation setting: Table 4, Fig. 2), stated in full: the link the
        console and the nav bar open too."""
        from analysis.links import default_report_url

        return default_report_url()

    def participant_path(self, pid: str = "DEMO-PARTICIPANT-1") -> str:
        if self.study is None:
            return ""
        path = reverse("annotator:study_entry", args=[self.study.public_id])
        return f"{path}?PROLIFIC_PID={pid}&STUDY_ID=demo-study&SESSION_ID=demo-session"


def ensure_demo_study(benchmark_slug: str) -> Study | None:
    """A crowd study over the test2 single-turn QA responses, as in the paper
    (its three systems when present), open for arrivals. Made once."""
    existing = Study.objects.filter(name="Demo crowd study (test2)").first()
    if existing is not None:
        return existing
    dataset = Dataset.objects.filter(
        benchmark__slug=benchmark_slug,
        version=Dataset.Version.QA,
        language=Dataset.Language.ENGLISH,
        split="test2",
    ).first()
    if dataset is None:
        return None
    systems = list(
        System.objects.filter(runs__dataset=dataset, runs__mode=Mode.SINGLE_TURN).distinct()
    )
    paper = [s for s in systems if s.name in PAPER_CROWD_SYSTEMS]
    study = Study.objects.create(
        name="Demo crowd study (test2)",
        kind=Study.Kind.CROWD,
        dataset=dataset,
        mode=Mode.SINGLE_TURN,
        raters_per_task=10,
        attention_checks=True,
        gold_evaluator=Evaluator.objects.filter(name="gold-human-eval").first(),
    )
    study.systems.set(paper or systems)
    services.build_items(study)
    services.set_study_open(study, True)
    return study


def choose_and_import(
    report: Callable[[str], None], *, allow_download: bool = True, force_synthetic: bool = False
) -> tuple[str, ElitrImportSummary]:
    candidates: list[tuple[str, Callable[[], Path], dict]] = []
    if not force_synthetic:
        if settings.CONCORD_ELITR_DATA:
            candidates.append(
                ("CONCORD_ELITR_DATA", lambda: Path(settings.CONCORD_ELITR_DATA), ELITR_BENCH)
            )
        if SHARED_ELITR_DATA.is_dir():
            candidates.append(("the shared folder", lambda: SHARED_ELITR_DATA, ELITR_BENCH))
        if allow_download:
            candidates.append(
                (
                    "a download from GitHub",
                    lambda: resolve_elitr_source(None, report=report),
                    ELITR_BENCH,
                )
            )
    synthetic_dir = Path(settings.VAR_DIR) / "synthetic-elitr"
    candidates.append(
        (
            "a synthetic meeting (no real data could be had)",
            lambda: write_synthetic_elitr(synthetic_dir),
            SYNTHETIC_ELITR_BENCH,
        )
    )
    failures = []
    for label, locate, benchmark in candidates:
        try:
            source = locate()
            report(f"Data: {label} ({source})")
            summary = import_elitr_bench(source, with_responses=True, benchmark_info=benchmark)
            return f"{label}: {source}", summary
        except ImportFailure as failure:
            report(f"  not used: {failure}")
            failures.append(f"{label}: {failure}")
    raise ImportFailure("No data could be imported:\n" + "\n".join(failures))


def ensure_demo_admin(password: str | None = None) -> tuple[str, str]:
    """The demo's admin account, with a fresh password each run (printed, never stored)."""
    password = password or secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(username=DEMO_ADMIN)
    user.is_staff = user.is_superuser = True
    user.role = user.Role.ADMIN
    user.set_password(password)
    user.save()
    return DEMO_ADMIN, password


def set_up_demo(
    report: Callable[[str], None],
    *,
    allow_download: bool = True,
    force_synthetic: bool = False,
    password: str | None = None,
) -> DemoSetup:
    Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=0)
    origin, summary = choose_and_import(
        report, allow_download=allow_download, force_synthetic=force_synthetic
    )
    username, password = ensure_demo_admin(password)
    synthetic = origin.startswith("a synthetic")
    study = ensure_demo_study((SYNTHETIC_ELITR_BENCH if synthetic else ELITR_BENCH)["slug"])
    return DemoSetup(origin, summary, username, password, study)
