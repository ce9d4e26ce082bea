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

from corpus.importers import ImportFailure
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.services import ELITR_BENCH, SYNTHETIC_ELITR_BENCH
from judging.importing import ElitrImportSummary, import_elitr_bench, resolve_elitr_source

SHARED_ELITR_DATA = settings.BASE_DIR.parent / "shared" / "datasets" / "elitr-bench"
DEMO_ADMIN = "admin"


@dataclass
class DemoSetup:
    data_origin: str
    summary: ElitrImportSummary
    username: str
    password: str


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
    return DemoSetup(origin, summary, username, password)
