"""Everything the demo needs before it serves: schema, data, an admin account,
a sample crowd study.

The data comes from the first of: $CONCORD_ELITR_DATA, the shared ELITR-Bench
folder beside the checkout (../shared/datasets/elitr-bench), the download
folder (var/downloads/elitr-bench: archives copied there by hand are read
without a connection), a download from GitHub into it, and last a synthetic
meeting that Concord writes itself, whose scores (the human ones included)
are invented and said to be.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotator.actions.items import check_build_items
from annotator.actions.settings import check_delete_study, check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import Participant, Study
from corpus.choices import Mode
from corpus.importers import ImportFailure
from corpus.importers.download import ARCHIVES
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from corpus.services import ELITR_BENCH, SYNTHETIC_ELITR_BENCH
from demo.benchmarks import set_up_other_benchmarks
from generation.models import System
from judging.importing import ElitrImportSummary, import_elitr_bench, resolve_elitr_source
from judging.models import Evaluator

SHARED_ELITR_DATA = settings.BASE_DIR.parent / "shared" / "datasets" / "elitr-bench"
DEMO_ADMIN = "admin"
DEMO_STUDY = "Demo crowd study (test2)"
INVENTED_NOTE = (
    "Every score of the synthetic meeting is invented by Concord, the human ones "
    "(gold-human-eval, silver-human-eval) included: no person rated these answers."
)


def download_folder() -> Path:
    """Where the demo looks for the archives before downloading them (and downloads to)."""
    return Path(settings.CONCORD_DOWNLOAD_DIR) / "elitr-bench"


def offline_hint() -> str:
    """What to do to get the real data on a machine without a connection."""
    return (
        f"The real ELITR-Bench data was not found. To use it without a connection, copy "
        f"its archives ({', '.join(ARCHIVES)}) into {download_folder()} and run the demo "
        "again (or set CONCORD_ELITR_DATA to a folder holding them)."
    )


PAPER_CROWD_SYSTEMS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")  # the paper's Silver Human set


@dataclass
class DemoSetup:
    data_origin: str
    summary: ElitrImportSummary
    username: str
    password: str
    study: Study | None = None
    adaptive: str = ""  # what became of the demo's adaptive study
    # the other benchmarks' reports (title, path), in their authors' shape
    benchmark_reports: list[tuple[str, str]] = field(default_factory=list)
    # what the printout adds under the data's origin: that the synthetic meeting's
    # scores are invented, and where to copy the real archives
    notes: list[str] = field(default_factory=list)

    @property
    def synthetic(self) -> bool:
        return self.data_origin.startswith("a synthetic")

    @property
    def report_path(self) -> str:
        """The agreement report of the default selection (for the paper's data, its
        human-evaluation setting: Table 4, Fig. 2), stated in full: the link the
        console and the nav bar open too."""
        from analysis.report.links import default_report_url

        return default_report_url()

    def participant_path(self, pid: str = "DEMO-PARTICIPANT-1") -> str:
        if self.study is None:
            return ""
        path = reverse("annotator:study_entry", args=[self.study.public_id])
        return f"{path}?PROLIFIC_PID={pid}&STUDY_ID=demo-study&SESSION_ID=demo-session"


def ensure_demo_study(benchmark_slug: str) -> Study | None:
    """A crowd study over the test2 single-turn QA responses of the benchmark
    just imported, as in the paper (its three systems when present), open for
    arrivals. Made once per benchmark: a demo study of other data (the
    synthetic meeting of an earlier run without the real data) is rebuilt on
    this one, or, when people took part in it, kept closed under another name
    (human data is never deleted) beside a new one."""
    dataset = Dataset.objects.filter(
        benchmark__slug=benchmark_slug,
        version=Dataset.Version.QA,
        language=Dataset.Language.ENGLISH,
        split="test2",
    ).first()
    if dataset is None:
        return None
    existing = Study.objects.filter(name=DEMO_STUDY).select_related("dataset__benchmark").first()
    if existing is not None and existing.dataset_id == dataset.pk:
        return existing
    if existing is not None:
        retire_demo_study(existing)
    systems = list(
        System.objects.filter(runs__dataset=dataset, runs__mode=Mode.SINGLE_TURN).distinct()
    )
    paper = [s for s in systems if s.name in PAPER_CROWD_SYSTEMS]
    study = Study.objects.create(
        name=DEMO_STUDY,
        kind=Study.Kind.CROWD,
        dataset=dataset,
        mode=Mode.SINGLE_TURN,
        raters_per_task=10,
        attention_checks=True,
        gold_evaluator=Evaluator.objects.filter(name="gold-human-eval").first(),
    )
    study.systems.set(paper or systems)
    check_build_items(study)
    check_set_study_status(study, Study.Status.OPEN)
    return study


def demo_adaptive_study(study: Study | None, simulated: bool) -> str:
    """The planned adaptive study beside the demo study (demo.simulated)."""
    from demo.simulated import ensure_demo_adaptive_study

    if study is None:
        return "no data for it"
    return ensure_demo_adaptive_study(study.dataset, list(study.systems.all()), simulated)


def retire_demo_study(study: Study) -> None:
    """Make way for a demo study on other data: delete the old one when nobody
    took part (check_delete_study), else close it and give it its data's name."""
    if not Participant.objects.filter(study=study).exists():
        check_delete_study(study)
        return
    name = f"{DEMO_STUDY} on {study.dataset.benchmark.name}"
    if Study.objects.filter(name=name).exists():
        name = f"{name} #{study.pk}"
    study.name = name
    check_save_study(study, ["name"])
    check_set_study_status(study, Study.Status.CLOSED)


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
        if download_folder().is_dir() and any(download_folder().iterdir()):
            # archives copied there by hand (or downloaded by an earlier run)
            candidates.append(("the download folder", download_folder, ELITR_BENCH))
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


DEMO_PASSWORD_FILE = "demo-admin-password"


def demo_password() -> str:
    """The demo admin's password: made once and kept in var/ (readable by its
    owner only), so that a restart keeps the sign-in a person wrote down."""
    kept = Path(settings.VAR_DIR) / DEMO_PASSWORD_FILE
    if kept.is_file():
        password = kept.read_text().strip()
        if password:
            return password
    password = secrets.token_urlsafe(12)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.touch(mode=0o600)
    kept.write_text(password + "\n")
    return password


def ensure_demo_admin(password: str | None = None) -> tuple[str, str]:
    """The demo's admin account, with the given password (CONCORD_DEMO_PASSWORD)
    or the one kept under var/ (demo_password: the same at every restart)."""
    password = password or demo_password()
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
    simulated: bool | None = None,
) -> DemoSetup:
    Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=0)
    origin, summary = choose_and_import(
        report, allow_download=allow_download, force_synthetic=force_synthetic
    )
    username, password = ensure_demo_admin(password)
    setup = DemoSetup(origin, summary, username, password)
    setup.study = ensure_demo_study(
        (SYNTHETIC_ELITR_BENCH if setup.synthetic else ELITR_BENCH)["slug"]
    )
    if simulated is None:
        simulated = settings.CONCORD_DEMO_SIMULATED_PARTICIPANTS
    setup.adaptive = demo_adaptive_study(setup.study, simulated)
    if setup.synthetic:
        setup.notes = [INVENTED_NOTE, offline_hint()]
    setup.benchmark_reports = set_up_other_benchmarks(report)
    ensure_demo_panel()
    return setup


DEMO_PANEL = "panel-gpt4-prometheus"


def ensure_demo_panel() -> None:
    """The paper's two judges as a panel (PoLL's average pooling), so that the
    report shows one: its agreement beside its members', and a judge that
    defers by its members' spread."""
    from judging.panels import checked_panel

    members = ["gpt-4-eval", "prometheus-eval"]
    if Evaluator.objects.filter(name__in=members).count() < len(members):
        return
    Evaluator.objects.get_or_create(
        name=DEMO_PANEL,
        defaults={
            "kind": Evaluator.Kind.PANEL,
            "config": checked_panel({"members": members, "rule": "mean"}),
            "description": "The paper's two judges pooled by their mean (a demo panel).",
        },
    )
