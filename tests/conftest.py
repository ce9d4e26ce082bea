"""Shared fixtures.

Tests that need a service (PostgreSQL, Redis, Chromium) or the real
ELITR-Bench data skip with a printed reason when it is missing, except when
CONCORD_REQUIRE_SERVICES=1 (CI): then they fail.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connections

REPO = Path(__file__).resolve().parent.parent
REQUIRE_SERVICES = os.environ.get("CONCORD_REQUIRE_SERVICES") == "1"
ELITR_DATA = Path(
    os.environ.get("CONCORD_ELITR_DATA") or REPO.parent / "shared" / "datasets" / "elitr-bench"
)
CHROMIUM = Path(os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium"))
# The ELITR-Bench authors' prompts, byte for byte (the golden vectors)
PROMPT_VECTORS = Path(
    os.environ.get("CONCORD_PROMPT_VECTORS")
    or REPO.parent / "shared" / "protocols" / "elitr-bench-prompt-vectors.json"
)


def require(condition: bool, reason: str) -> None:
    """Skip (or, in CI, fail) when a needed service or file is missing."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"CONCORD_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def elitr_data() -> Path:
    require(
        (ELITR_DATA / "data.zip").is_file(),
        f"the real ELITR-Bench archives are not at {ELITR_DATA} (set CONCORD_ELITR_DATA)",
    )
    return ELITR_DATA


@pytest.fixture(scope="session")
def elitr_data_unlocked(elitr_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real archives, member for member, without their published password,
    written once per test process: zipfile decrypts ZipCrypto in pure Python,
    about 2 s of each import of the paper's data, and the tests that only need
    the data import it dozens of times. The tests of the import itself read
    the archives as published (elitr_data)."""
    import shutil
    import zipfile

    from corpus.importers.elitr_bench import PUBLISHED_PASSWORD

    folder = tmp_path_factory.mktemp("elitr-bench-unlocked")
    for source in sorted(elitr_data.iterdir()):
        if source.suffix != ".zip":
            shutil.copy(source, folder / source.name)
            continue
        with zipfile.ZipFile(source) as locked, zipfile.ZipFile(folder / source.name, "w") as open_:
            for info in locked.infolist():
                data = b"" if info.is_dir() else locked.read(info, pwd=PUBLISHED_PASSWORD.encode())
                open_.writestr(info.filename, data, zipfile.ZIP_DEFLATED, compresslevel=1)
    return folder


@pytest.fixture(scope="session")
def prompt_vectors() -> dict:
    require(
        PROMPT_VECTORS.is_file(),
        f"the protocol vectors are not at {PROMPT_VECTORS} (set CONCORD_PROMPT_VECTORS)",
    )
    return json.loads(PROMPT_VECTORS.read_text())


@pytest.fixture
def synthetic_source(tmp_path: Path) -> Path:
    from corpus.importers.synthetic import write_synthetic_elitr

    return write_synthetic_elitr(tmp_path / "synthetic")


@pytest.fixture
def synthetic_data(synthetic_source):
    """The synthetic ELITR data imported, with responses (the import's result)."""
    from judging.importing import import_elitr_bench

    return import_elitr_bench(synthetic_source, with_responses=True)


@pytest.fixture
def leval_tasks(tmp_path) -> Path:
    """The sample L-Eval tasks imported; returns tmp_path, for the test's own files."""
    from django.core.management import call_command

    from corpus.importers.samples import write_leval_tasks

    for path in write_leval_tasks(tmp_path / "leval"):
        call_command("import_benchmark", str(path), "--format", "leval")
    return tmp_path


@pytest.fixture(scope="module")
def openapi_spec() -> dict:
    """The OpenAPI schema as /api/schema/ serves it, once per module."""
    import yaml
    from rest_framework.test import APIClient

    return yaml.safe_load(APIClient().get("/api/schema/").content)


@pytest.fixture
def two_meetings(tmp_path, db):
    """Synthetic ELITR data: 2 meetings x 6 questions x 3 systems, with gold scores."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


@pytest.fixture
def four_meetings(tmp_path, db):
    """The same data with 4 meetings: 24 responses per system, so that the
    report's PPI keeps 12 labels per system (it gives no interval below 10)."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=4), with_responses=True)


@pytest.fixture
def two_meetings_committed(transactional_db, tmp_path):
    """The same data, committed: for code whose threads use their own connections."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny random Llama with a tokenizer trained on a synthetic meeting, in a
    folder that from_pretrained loads (built once per test session)."""
    import importlib.util

    require(
        importlib.util.find_spec("torch") is not None
        and importlib.util.find_spec("transformers") is not None,
        "torch and transformers are not installed (make install-gpu)",
    )
    from corpus.importers.synthetic import synthetic_transcript
    from tests.fakes.tiny_model import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), synthetic_transcript(lines=300))


def database_snapshot() -> dict[str, list[tuple]]:
    """Every row of every Concord table, to prove that a failed import changed nothing."""
    snapshot = {}
    for label in ("users", "corpus", "generation", "judging", "annotator", "analysis"):
        for model in apps.get_app_config(label).get_models():
            snapshot[model._meta.label] = sorted(model.objects.values_list(), key=repr)
    return snapshot


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("rita", password="pw-rita-123", role="researcher")


@pytest.fixture
def gold_annotator(django_user_model):
    return django_user_model.objects.create_user(
        "gina", password="pw-gina-123", role="gold_annotator"
    )


@pytest.fixture
def researcher_api(researcher):
    """An APIClient signed in as the researcher."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(researcher)
    return client


@pytest.fixture
def researcher_client(client, researcher):
    """Django's test client signed in as the researcher."""
    client.force_login(researcher)
    return client


@pytest.fixture
def superuser_client(client, django_user_model):
    """Django's test client signed in as a superuser, boss."""
    admin = django_user_model.objects.create_superuser("boss", "boss@example.org", "pw-boss-123")
    client.force_login(admin)
    return client


@pytest.fixture
def fake_prolific():
    """The local server that speaks Prolific's API (demo/fake_prolific.py)."""
    from demo.fake_prolific import FakeProlific

    with FakeProlific() as fake:
        yield fake


@contextmanager
def rolled_back_once(django_db_blocker) -> Iterator[None]:
    """For data that a module's (or a class's) tests share and only change in
    their own transactions: open the database and a transaction, rolled back
    when the scope ends. Each test's own transaction (pytest-django's `db`) is
    a savepoint within it, so every test starts from the same rows and no row
    outlives the tests that share them. Not for a test that needs committed
    data (transactional_db, live_server, a browser, a Celery worker, threads):
    it cannot see rows of a transaction that never commits."""
    from django.db import transaction

    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


@contextmanager
def celery_options(**values: object) -> Iterator[None]:
    """Options of the Celery app set for the block, under both of their names:
    with the settings loaded under the CELERY_ namespace, celery 5.6 reads
    CELERY_TASK_ALWAYS_EAGER before a task_always_eager set later (5.7 the
    other way round)."""
    from config.celery import app as celery_app

    conf = celery_app.conf
    previous = {name: conf[name] for name in values}
    try:
        for name, value in values.items():
            conf[name] = conf[f"CELERY_{name.upper()}"] = value
            assert conf[name] == value
        yield
    finally:
        for name, value in previous.items():
            conf[name] = conf[f"CELERY_{name.upper()}"] = value


def tasks_run_eagerly() -> AbstractContextManager[None]:
    """Tasks run in the test's process when sent, for the block."""
    return celery_options(task_always_eager=True)


@pytest.fixture
def eager_celery():
    """Tasks run in the test's process when sent (no message is left on the
    shared broker for a later worker to find)."""
    with tasks_run_eagerly():
        yield


@pytest.fixture
def browser(monkeypatch, live_server):
    """Debian's Chromium driven by Playwright (never a downloaded browser).

    Depends on live_server so that Chromium closes its connections before the
    server stops (else a request thread keeps a database connection open).
    Playwright's sync API keeps an event loop in this thread; the ORM calls a
    test makes between browser steps are still plain synchronous calls."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    require(
        CHROMIUM.exists(), f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require(False, "the playwright package is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        yield chromium
        # While Playwright's loop runs, Django keys connections by that context:
        # close the ones this test opened before the loop goes away.
        connections.close_all()
        chromium.close()


@pytest.fixture(autouse=True)
def empty_report_cache():
    """Every test starts with an empty cache of reports and figures (a memory
    cache in tests: config.settings.test), so that nothing one test computed
    answers another."""
    from django.core.cache import caches

    caches["reports"].clear()


# The longest tests, started first and spread over the workers. pytest-xdist's
# work-stealing scheduler (make test) gives each worker one contiguous share
# of the tests and lets an idle worker take the back half of the longest
# queue: so each share begins with its turn of the long files (a six-minute
# container build, the cluster rehearsal, the benchmark scripts, the browser
# tests), and what is stolen is short. A long file stays whole, so that its
# module fixtures are set up once.
LONG_MARKERS = ("docker", "cluster", "browser", "worker")
# test_coverage_harness.py: its module fixture runs the harness's CI mode (minutes on
# two cores); split over the workers, each ran it again, four at once at the end
LONG_FILES = (
    "test_benchmarks_start.py",
    "test_demo.py",
    "test_demo_adaptive.py",
    "test_coverage_harness.py",
)


def long_rank(item: pytest.Item) -> int | None:
    """How early the item's file should start (0 first), None for a short one."""
    for position, marker in enumerate(LONG_MARKERS):
        if item.get_closest_marker(marker):
            return position
    return len(LONG_MARKERS) if item.path.name in LONG_FILES else None


def shares(total: int, workers: int) -> list[int]:
    """The sizes of the shares pytest-xdist's work-stealing scheduler deals
    (xdist.scheduler.worksteal: each idle worker the pending tests divided
    by the workers left)."""
    sizes = []
    for left in range(workers, 0, -1):
        sizes.append((total - sum(sizes)) // left)
    return sizes


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    files: dict[Path, list[pytest.Item]] = {}
    ranks: dict[Path, int] = {}
    short: list[pytest.Item] = []
    for item in items:
        rank = long_rank(item)
        if rank is None:
            short.append(item)
        else:
            files.setdefault(item.path, []).append(item)
            ranks[item.path] = min(rank, ranks.get(item.path, rank))
    chunks: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for turn, path in enumerate(sorted(files, key=lambda path: ranks[path])):  # stable
        chunks[turn % workers].extend(files[path])
    # then the short tests, in their own order, filling each share to its size
    for chunk, size in zip(chunks, shares(len(items), workers), strict=True):
        room = max(size - len(chunk), 0)
        chunk.extend(short[:room])
        del short[:room]
    chunks[-1].extend(short)
    items[:] = [item for chunk in chunks for item in chunk]
