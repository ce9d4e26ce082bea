"""The README demo command: set-up with its data fallbacks, then web + worker."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.db.models import Count

from annotator.actions.arrival import check_start_assignment
from annotator.models import Study
from corpus.importers import download
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Benchmark, Document
from corpus.services import SYNTHETIC_ELITR_BENCH
from demo import setup as demo_setup
from demo.benchmarks import OTHER_BENCHMARKS_NOTE
from generation.models import Response
from judging.importing import import_elitr_bench
from judging.models import Evaluator
from tests.conftest import REPO
from tests.processes import free_port, session_processes

pytestmark = pytest.mark.django_db


def test_demo_setup_with_synthetic_data(capsys, monkeypatch, settings):
    monkeypatch.setenv("CONCORD_DEMO_PASSWORD", "demo-pass-123")
    call_command("demo_setup", "--synthetic")
    out = capsys.readouterr().out
    assert "Data: a synthetic meeting" in out
    assert "Demo admin: admin / demo-pass-123" in out
    # the synthetic meeting's scores are said to be invented, the human ones too,
    # in the printout, the benchmark's description and each evaluator's
    assert demo_setup.INVENTED_NOTE in out
    assert f"into {settings.CONCORD_DOWNLOAD_DIR / 'elitr-bench'} and run the demo again" in out
    elitr = Benchmark.objects.get(format="elitr_bench")
    assert elitr.slug == "elitr-bench-synthetic"
    assert "invented by Concord, the human ones" in elitr.description
    for name in ("gold-human-eval", "silver-human-eval", "gpt-4-eval", "prometheus-eval"):
        assert Evaluator.objects.get(name=name).description.startswith("INVENTED: made-up scores")
    assert Response.objects.filter(run__dataset__benchmark=elitr).count() == 18
    study = Study.objects.get()
    assert study.is_open and study.items.filter(response__isnull=False).count() == 18
    assert f"Crowd study participant link: /s/{study.public_id}/?PROLIFIC_PID=" in out
    user = authenticate(username="admin", password="demo-pass-123")
    assert user is not None and user.is_superuser and user.is_researcher
    # the seeds' other benchmarks, side by side, each scored by its official metric
    assert OTHER_BENCHMARKS_NOTE in out
    formats = dict(Benchmark.objects.values_list("slug", "format"))
    assert formats == {
        "elitr-bench-synthetic": "elitr_bench",
        "leval": "leval",
        "zeroscrolls": "zeroscrolls",
        "ruler": "ruler",
    }
    from analysis.report.benchmark_report import benchmark_report

    leval = benchmark_report("leval", "test")
    scores = {(r.system, r.metric, r.task): r.score for r in leval.scores}
    assert scores[("Demo-Copier", "leval.exam_choice", "quality")] == 100.0  # it copies
    zeroscrolls = benchmark_report("zeroscrolls", "validation")
    assert {r.system for r in zeroscrolls.scores} == {"Demo-Copier", "Demo-Hedger"}
    # RULER by length: the copier holds, the hedger falls after 1K tokens
    from analysis.report.by_length import length_view

    effective = {e["system"]: e for e in length_view("ruler", "validation").effective}
    assert effective["Demo-Copier"]["first_below"] is None
    assert effective["Demo-Hedger"]["first_below"] == "2048"
    before = Response.objects.count()
    call_command("demo_setup", "--synthetic")  # a second start changes nothing
    assert Response.objects.count() == before


def test_demo_falls_back_when_data_is_missing(settings, tmp_path, monkeypatch):
    settings.CONCORD_ELITR_DATA = str(tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    settings.VAR_DIR = tmp_path / "var"
    monkeypatch.setattr(demo_setup, "SHARED_ELITR_DATA", tmp_path / "no-shared")
    messages = []
    origin, summary = demo_setup.choose_and_import(messages.append, allow_download=False)
    assert origin.startswith("a synthetic meeting")
    assert any("not used: " in m and "no en qa question file" in m for m in messages)
    assert Document.objects.get().external_id == "meeting_en_synthetic_001"


def test_offline_the_demo_names_the_folder_to_copy_the_archives_into(
    settings, tmp_path, monkeypatch
):
    """No data anywhere and no connection: the demo runs on the synthetic
    meeting and says where the archives go; copied there, they are used, with
    or without downloads allowed."""
    settings.CONCORD_ELITR_DATA = ""
    settings.VAR_DIR = tmp_path / "var"
    settings.CONCORD_DOWNLOAD_DIR = tmp_path / "var" / "downloads"
    monkeypatch.setattr(demo_setup, "SHARED_ELITR_DATA", tmp_path / "no-shared")
    # "offline": every archive URL points at a port nobody listens on
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(
        download, "ARCHIVES", {name: f"{closed}/{name}" for name in download.ARCHIVES}
    )
    messages: list[str] = []
    setup = demo_setup.set_up_demo(messages.append, password="pw-demo-1")
    folder = tmp_path / "var" / "downloads" / "elitr-bench"
    assert setup.synthetic
    failure = next(m for m in messages if "not used: Could not download" in m)
    assert "Copy the ELITR-Bench archives (data.zip, czech.zip" in failure
    assert f"into {folder} and run this again" in failure
    assert any(str(folder) in note and "copy its archives" in note for note in setup.notes)
    # the archives copied there (here an unpacked copy of the synthetic layout)
    write_synthetic_elitr(folder, meetings=2)
    for allow_download in (False, True):
        origin, _ = demo_setup.choose_and_import(lambda m: None, allow_download=allow_download)
        assert origin == f"the download folder: {folder}"


def test_the_demo_study_follows_the_data_it_imported(settings, tmp_path, monkeypatch):
    """A synthetic run, then a run with the real data: the sample study is
    rebuilt on the real data. Once people took part in the old one, it is kept
    (closed, under its data's name) and a new one is made."""
    settings.VAR_DIR = tmp_path / "var"
    demo_setup.set_up_demo(lambda m: None, force_synthetic=True, password="pw-demo-1")
    synthetic_study = Study.objects.get(name=demo_setup.DEMO_STUDY)
    assert synthetic_study.dataset.benchmark.slug == "elitr-bench-synthetic"
    # the "real" data: here a copy in the real layout under CONCORD_ELITR_DATA
    settings.CONCORD_ELITR_DATA = str(write_synthetic_elitr(tmp_path / "real", meetings=2))
    setup = demo_setup.set_up_demo(lambda m: None, allow_download=False, password="pw-demo-1")
    assert not setup.synthetic and setup.notes == []
    study = Study.objects.get(name=demo_setup.DEMO_STUDY)
    assert study.dataset.benchmark.slug == "elitr-bench" and study.is_open
    assert study.tasks.count() == 2 and study.items.filter(kind="response").count() == 36
    assert not Study.objects.filter(pk=synthetic_study.pk).exists()  # nobody took part
    assert setup.participant_path().startswith(f"/s/{study.public_id}/")
    # someone takes part in it; the synthetic data comes back (offline): that study is kept
    check_start_assignment(study, pid="P-KEEP")
    setup = demo_setup.set_up_demo(lambda m: None, force_synthetic=True, password="pw-demo-1")
    kept = Study.objects.get(pk=study.pk)
    assert kept.name == f"{demo_setup.DEMO_STUDY} on ELITR-Bench"
    assert kept.status == Study.Status.CLOSED and kept.participants.count() == 1
    assert setup.study.name == demo_setup.DEMO_STUDY
    assert setup.study.dataset.benchmark.slug == "elitr-bench-synthetic"
    # the paper's two judges as a panel, made once whatever the runs
    panel = Evaluator.objects.get(name=demo_setup.DEMO_PANEL)
    assert panel.kind == "panel" and panel.config == {
        "members": ["gpt-4-eval", "prometheus-eval"],
        "rule": "mean",
        "pairwise": False,
    }


def test_an_evaluator_says_which_of_its_scores_are_invented(tmp_path):
    """The paper's evaluator names hold the synthetic meeting's invented scores
    and, once imported, the real ones: the description says which, and a
    researcher's own description is left alone."""
    source = write_synthetic_elitr(tmp_path / "data")
    import_elitr_bench(source, with_responses=True, benchmark_info=SYNTHETIC_ELITR_BENCH)
    gold = Evaluator.objects.get(name="gold-human-eval")
    assert gold.description.startswith("INVENTED: made-up scores of the synthetic demo meeting")
    import_elitr_bench(source, with_responses=True)  # as the real benchmark
    gold.refresh_from_db()
    assert gold.description == (
        "Gold Human: one expert's 1-10 rubric scores, as published. Its scores on the "
        "synthetic demo meeting (benchmark ELITR-Bench (synthetic demo meeting)) are invented."
    )
    Evaluator.objects.filter(name="gpt-4-eval").update(description="Our own words.")
    import_elitr_bench(source, with_responses=True, benchmark_info=SYNTHETIC_ELITR_BENCH)
    assert Evaluator.objects.get(name="gpt-4-eval").description == "Our own words."


def test_demo_prefers_the_real_data(elitr_data, settings):
    settings.CONCORD_ELITR_DATA = str(elitr_data)
    origin, summary = demo_setup.choose_and_import(lambda m: None, allow_download=False)
    assert origin.startswith("CONCORD_ELITR_DATA")
    assert Document.objects.count() == 18 and Response.objects.count() == 6775
    study = demo_setup.ensure_demo_study("elitr-bench")
    assert set(study.systems.values_list("name", flat=True)) == set(demo_setup.PAPER_CROWD_SYSTEMS)
    # the paper's crowd tasks: one meeting, 3 systems, 40-50 items (plus 2 attention checks)
    sizes = sorted(study.tasks.annotate(n=Count("items")).values_list("n", flat=True))
    assert len(sizes) == 8 and all(36 + 2 <= n <= 60 + 2 for n in sizes)
    assert sum(sizes) == 390 + 8 * 2


def test_the_demo_admin_password_survives_a_restart(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    username, first = demo_setup.ensure_demo_admin()
    assert demo_setup.ensure_demo_admin() == (username, first)  # the next start
    kept = tmp_path / "var" / demo_setup.DEMO_PASSWORD_FILE
    assert kept.read_text().strip() == first
    assert kept.stat().st_mode & 0o777 == 0o600  # its owner's only
    assert authenticate(username=username, password=first) is not None
    # CONCORD_DEMO_PASSWORD (the command's password) still wins
    assert demo_setup.ensure_demo_admin("given-pass-1")[1] == "given-pass-1"
    assert authenticate(username=username, password="given-pass-1") is not None


def wait_for(url: str, seconds: float) -> bytes:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return answer.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def expected_demo_data() -> tuple[str, str]:
    """The data origin the demo should name, and its report's path: the default
    selection stated in full (the setting and systems of the human scores)."""
    setting = "/analysis/report/?dataset_version=qa&split=test2&mode=st&language=en"
    if (demo_setup.SHARED_ELITR_DATA / "data.zip").is_file():
        return (
            f"the shared folder: {demo_setup.SHARED_ELITR_DATA}",
            f"{setting}&benchmark=elitr-bench&systems=GPT-4%2CLongAlpaca-7B%2CVicuna-13B-v1.5",
        )
    return (
        "a synthetic meeting (no real data could be had): ",
        f"{setting}&benchmark=elitr-bench-synthetic"
        "&systems=Synthetic-Echo%2CSynthetic-Hedge%2CSynthetic-Terse",
    )


def ignore_sigint() -> None:
    """What a shell does to a program it starts in the background (`make demo &`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_sigint() -> None:
    """As in a terminal, whatever the test run itself inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def demo_environment(tmp_path, **settings: str) -> dict[str, str]:
    """What `make demo` runs on: its embedded defaults (no database or broker of
    the test run), its files under tmp_path, a known password, and `settings`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(
        CONCORD_VAR_DIR=str(tmp_path / "var"),
        CONCORD_DEMO_PASSWORD="demo-pass-123",
        PYTHONUNBUFFERED="1",
        **settings,
    )
    return env


@pytest.mark.parametrize("stop", ["ctrl-c", "ctrl-c-started-in-background", "kill"])
def test_run_demo_serves_and_stops(tmp_path, stop):
    """`manage.py run_demo`, as `make demo` runs it, on its own embedded defaults."""
    port = free_port()
    env = demo_environment(tmp_path, CONCORD_ELITR_DATA="")
    log = open(tmp_path / "demo.log", "w+")  # noqa: SIM115 (closed below)
    demo = subprocess.Popen(
        [sys.executable, "manage.py", "run_demo", "--no-download", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=ignore_sigint if "background" in stop else default_sigint,
    )
    try:
        schema = wait_for(f"http://127.0.0.1:{port}/api/schema/", 120)
        assert b"openapi" in schema
        login = wait_for(f"http://127.0.0.1:{port}/admin/login/", 10)
        assert b"Concord" in login
        # the banner follows the server's first answer: wait for it
        deadline = time.monotonic() + 30
        printed = ""
        while "Press Ctrl-C" not in printed and time.monotonic() < deadline:
            time.sleep(0.2)
            log.seek(0)
            printed = log.read()
        assert "Concord demo is running." in printed
        assert "user admin, password demo-pass-123" in printed
        assert f"http://127.0.0.1:{port}/api/docs/" in printed
        # the real data when the shared folder is beside the checkout, else the
        # synthetic meeting (CONCORD_ELITR_DATA is empty, downloads are off)
        origin, report = expected_demo_data()
        assert re.search(rf"Data: +{re.escape(origin)}", printed), printed
        assert f"Report:      http://127.0.0.1:{port}{report}\n" in printed
        assert f"http://127.0.0.1:{port}/analysis/benchmark/leval/?split=test" in printed
        assert (
            f"http://127.0.0.1:{port}/analysis/benchmark/zeroscrolls/?split=validation" in printed
        )
        assert f"http://127.0.0.1:{port}/analysis/benchmark/ruler/length/?split=validation" in (
            printed
        )
        link = re.search(r"Crowd study: (http://\S+)", printed)[1]
        consent = wait_for(link, 10)
        assert b"Rating answers about a work meeting" in consent
        # the demo runs with DEBUG on: a mistyped link still answers the product's page
        mistyped = link.split("?")[0].replace("/s/", "/s/0")
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(mistyped, timeout=10)
        page = answer.value.read().decode()
        assert answer.value.code == 404 and "Open the study again from Prolific" in page
        assert "URLconf" not in page
        # the worker starts beside the web server: it says "ready" once it takes tasks
        deadline = time.monotonic() + 60
        while not re.search(r"demo@\S+ ready", printed) and time.monotonic() < deadline:
            time.sleep(0.2)
            log.seek(0)
            printed = log.read()
        assert re.search(r"demo@\S+ ready", printed), printed
        if stop.startswith("ctrl-c"):
            os.killpg(demo.pid, signal.SIGINT)  # the terminal signals its foreground group
        else:
            demo.terminate()  # `kill PID`
        try:
            code = demo.wait(timeout=60)  # the worker's warm shutdown takes seconds
        finally:
            log.seek(0)
            printed = log.read()
        assert code == 0, printed  # a clean stop, not a crash
        assert not session_processes(demo.pid), printed  # web server, worker and its pool
    finally:
        for pid in session_processes(demo.pid):  # what a failed test left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        demo.wait()
        log.close()
    assert "Stopping" in printed, printed
    # nothing of the demo is left listening
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=2)
