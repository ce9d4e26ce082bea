"""`make screenshots`: every page a person sees, at 1280 and 375 px, as PNGs
in docs/screenshots/.

Builds its own data in a scratch folder (the real ELITR-Bench archives when
they are beside the checkout or in CONCORD_ELITR_DATA, else the synthetic
meeting; nothing is downloaded): the demo's crowd study with participants
who rated (one who gives one score everywhere), a metric run, an LLM judge
run caught half-way with failures, worker heartbeats. Then it serves that
database (Django's server on 127.0.0.1, DEBUG off, static files collected)
and drives Debian's Chromium with Playwright.

    python -m demo.screenshots [--output docs/screenshots] [--port 0] [--synthetic]
        [--pages login,report] [--devices desktop]   # a few pages: CI's small mode
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium"))
PASSWORD = "screenshots-pw-1"
WIDTHS = {"desktop": (1280, 860), "phone": (375, 740)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_data(report, *, synthetic: bool = False) -> dict:
    """The demo's data plus what makes the console worth a look; returns ids."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotator.actions.arrival import check_start_assignment
    from annotator.actions.rating import check_complete_assignment, check_rate_item
    from annotator.models import Participant, Rating, Study
    from corpus.models import Dataset, Document
    from demo.setup import set_up_demo
    from judging.judging_runs import (
        create_judging_run,
        ensure_metric_evaluators,
        run_metric_judging,
    )
    from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment

    setup = set_up_demo(report, allow_download=False, force_synthetic=synthetic, password=PASSWORD)
    study = setup.study
    assert study is not None, "the demo study could not be made"
    now = timezone.now()
    rng = random.Random(2023)
    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    # 13 participants over the last three hours: most finish (one fails an attention
    # check, one gives one score everywhere: the QC table flags both), two are at work
    # (fewer where the study has fewer places: the synthetic meeting is one task)
    count = min(13, study.tasks.count() * study.raters_per_task - 2)  # room for two more
    careless, straight, working = count - 4, count - 3, count - 2
    for n in range(count):
        pid = f"5f{rng.randrange(16**10):010x}demo{n:02d}"
        assignment = check_start_assignment(study, pid=pid, session_id=f"S{n}")
        by_pk = {i.pk: i for i in study.items.filter(pk__in=assignment.item_order)}
        rate_up_to = len(assignment.item_order) if n < working else rng.randrange(5, 20)
        for position, item_id in enumerate(assignment.item_order[:rate_up_to], 1):
            item = by_pk[item_id]
            reference = None if item.response_id is None else gold.get(item.response_id)
            if item.is_attention_check and item.expected_min is not None:
                # in the expected range, except participant 9
                inside = item.expected_min
                score = inside if n != careless else (1 if item.expected_min > 1 else 10)
            elif n == straight:
                score = 8
            elif reference is None:
                score = rng.randint(6, 10)
            else:
                score = max(1, min(10, round(reference + rng.gauss(0, 1.4))))
            check_rate_item(assignment, position, score=score)
        # seconds per item as people take them (the straight-liner is fast too)
        for rating in Rating.objects.filter(assignment=assignment).only("pk"):
            seconds = rng.uniform(4, 9) if n == straight else rng.uniform(18, 75)
            Rating.objects.filter(pk=rating.pk).update(seconds=seconds)
        if rate_up_to == len(assignment.item_order):
            check_complete_assignment(assignment)
        Participant.objects.filter(pk=assignment.participant_id).update(
            created_at=now - timedelta(minutes=175 - 13 * n + rng.randrange(0, 9))
        )
    dataset = study.dataset
    ensure_metric_evaluators()
    metric = create_judging_run(Evaluator.objects.get(name="metric: rouge"), dataset, "st")
    JudgingRun.objects.filter(pk=metric.pk).update(status="queued")
    run_metric_judging(metric.pk)
    judge, _ = Evaluator.objects.get_or_create(
        name="gpt-4o rubric judge",
        defaults={
            "kind": Evaluator.Kind.LLM_RUBRIC,
            "config": {
                "protocol": "rubric",
                "base_url": "https://api.openai.com/v1",
                "model": "gpt-4o-2024-08-06",
                "server": "openai",
                "seeds": [2023],
                "price_input_per_million": 2.5,
                "price_output_per_million": 10.0,
            },
        },
    )
    # a budget the projection fits ($7.71 on the paper's test2): a run over its
    # budget is refused unless confirmed, and this one shows a run under it
    run = create_judging_run(judge, dataset, "st", budget=10)
    judge_items = list(JudgeItem.objects.filter(run=run).order_by("pk"))
    done = int(len(judge_items) * 0.62)
    JudgeItem.objects.filter(pk__in=[i.pk for i in judge_items[:done]]).update(
        status="done", outcome="ok"
    )
    errors = judge_items[done : done + 6]
    JudgeItem.objects.filter(pk__in=[i.pk for i in errors[:4]]).update(
        outcome="api_error", detail="APIConnectionError: Connection error."
    )
    JudgeItem.objects.filter(pk__in=[i.pk for i in errors[4:]]).update(
        outcome="api_error",
        detail="RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached "
        "for gpt-4o on tokens per min (TPM): Limit 30000, Used 29710.'}}",
    )
    JudgeItem.objects.filter(pk=judge_items[done + 6].pk).update(
        status="needs_human",
        outcome="parse_failure",
        detail="no \\boxed{N} in the answer",
        attempts=3,
    )
    host = socket.gethostname()
    cached = min(40, done // 3)  # answered from the ledger
    sent = done - cached
    JudgingRun.objects.filter(pk=run.pk).update(
        status="running",
        started_at=now - timedelta(minutes=7, seconds=12),
        done=done,
        failed=7,
        requests=sent,
        cache_hits=cached,
        prompt_tokens=sent * 1850,
        completion_tokens=sent * 210,
        cost=sent * (1850 * 2.5 + 210 * 10.0) / 1e6,
        lease_owner=f"{host}:{os.getpid()}:demo0001",
        lease_expires_at=now + timedelta(hours=2),
        heartbeat_at=now,
        queue_name="llm",
    )
    get_user_model().objects.create_user("gina", password=PASSWORD, role="gold_annotator")
    document = Document.objects.filter(questions__texts__dataset=dataset).distinct().first()
    return {
        "study": study.pk,
        "run": run.pk,
        "judge": judge.pk,
        "metric_run": metric.pk,
        "document": document.pk if document else None,
        "entry": f"/s/{study.public_id}/?PROLIFIC_PID=5fcafe0000demo99&STUDY_ID=P1&SESSION_ID=S99",
        "dataset": Dataset.objects.get(pk=dataset.pk).pk,
        "crowd": Study.objects.get(pk=study.pk).name,
    }


def beat_workers() -> None:
    """Workers as the panel shows them: two up (one running the judge run), one silent."""
    from django.utils import timezone

    from runs.workers import WorkerIdentity, beat

    now = timezone.now()
    beat(WorkerIdentity(name="main@web-1", queues=["default", "llm"], concurrency=2), now=now)
    beat(WorkerIdentity(name="gpu@gpu-box", queues=["gpu"], concurrency=1, pid=4711), now=now)
    beat(
        WorkerIdentity(name="gpu@old-box", queues=["gpu"], concurrency=1, pid=812),
        now=now - timedelta(minutes=12),
    )


def shrink(path: Path) -> None:
    """256 colours: UI screenshots lose nothing visible and get several times smaller."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def shoot(
    base: str,
    ids: dict,
    output: Path,
    report,
    pages: set[str] | None = None,
    devices: set[str] | None = None,
) -> list[Path]:
    """Every page on every device, or only the named `pages` and `devices`
    (the others are still visited, in order, since later pages need earlier
    ones: the sign-in, the worker's consent)."""
    from playwright.sync_api import sync_playwright

    written: list[Path] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        for device, (width, height) in WIDTHS.items():
            if devices and device not in devices:
                continue
            context = browser.new_context(
                viewport={"width": width, "height": height},
                is_mobile=device == "phone",
                has_touch=device == "phone",
            )
            # a report's first render takes some 10 s alone, and this runs on loaded machines too
            context.set_default_timeout(90_000)
            page = context.new_page()

            def snap(name: str, page=page, device=device, part: str = "") -> None:
                """The page's first screen, or the element `part` whole."""
                if pages and name not in pages:
                    return
                page.wait_for_load_state("networkidle")
                path = output / f"{name}-{device}.png"
                if part:
                    page.locator(part).screenshot(path=str(path))
                else:
                    page.screenshot(path=str(path))
                shrink(path)
                written.append(path)
                report(f"  {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")

            page.goto(base + "/accounts/login/")
            snap("login")
            page.fill("#id_username", "admin")
            page.fill("#id_password", PASSWORD)
            page.click("#sign-in")
            page.wait_for_url("**/console/")
            snap("console-home")
            page.goto(base + f"/console/studies/{ids['study']}/")
            snap("study-monitor")
            snap("study-qc", part="section[aria-labelledby=qc-title]")
            page.goto(base + f"/console/runs/judging/{ids['run']}/")
            snap("run-monitor")
            beat_workers()
            page.goto(base + "/console/workers/")
            snap("workers")
            page.goto(base + "/console/judges/")
            snap("judges")
            page.goto(base + f"/console/judges/{ids['judge']}/")
            snap("judge")
            page.goto(base + "/console/benchmarks/")
            snap("benchmarks")
            page.goto(base + "/console/benchmarks/upload/")
            snap("benchmark-upload")
            if not pages or "benchmark-preview" in pages:
                # an L-Eval task file as its authors publish it, previewed, then discarded
                from corpus.importers.samples import write_leval_tasks

                with tempfile.TemporaryDirectory() as folder:
                    quality = write_leval_tasks(Path(folder))[0]
                    page.select_option("#id_format", "leval")
                    page.set_input_files("#id_upload", str(quality))
                    page.click("#submit")
                    page.wait_for_selector("#preview-summary")
                snap("benchmark-preview")
                page.click("#discard-upload")
                page.wait_for_selector("#upload-form")
            if ids["document"]:
                page.goto(base + f"/console/documents/{ids['document']}/")
                links = page.locator("a.passage-link")
                if links.count() > 2:
                    links.nth(2).click()
                    page.wait_for_timeout(400)
                snap("document-viewer")
            page.goto(base + f"/analysis/report/?study={ids['study']}")
            snap("report")
            page.goto(base + "/admin/")
            snap("admin")
            context.close()

            # a crowd worker's item page and a gold annotator's pages, as they see them
            worker = browser.new_context(
                viewport={"width": width, "height": height}, is_mobile=device == "phone"
            ).new_page()
            worker.goto(base + ids["entry"].replace("demo99", f"demo{device}"))
            worker.check("#consent")
            worker.click("#start")
            worker.wait_for_url("**/item/1/")
            page = worker
            snap("participant-item", page=worker)
            worker.context.close()
            gold = browser.new_context(viewport={"width": width, "height": height}).new_page()
            gold.goto(base + "/accounts/login/")
            gold.fill("#id_username", "gina")
            gold.fill("#id_password", PASSWORD)
            gold.click("#sign-in")
            gold.wait_for_url("**/gold/")
            snap("gold-home", page=gold)
            gold.goto(base + "/console/")
            snap("error-403", page=gold)
            gold.context.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument(
        "--synthetic", action="store_true", help="the synthetic meeting even if real data is there"
    )
    parser.add_argument("--pages", help="comma-separated page names (default: every page)")
    parser.add_argument(
        "--devices", help="comma-separated, of: " + ", ".join(WIDTHS) + " (default: both)"
    )
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"Chromium is not at {CHROMIUM}: apt-get install chromium (or set CONCORD_CHROMIUM).")
        return 1
    output = Path(args.output).resolve()
    output.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="concord-screenshots-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "CONCORD_VAR_DIR": str(work),
        "DATABASE_URL": f"sqlite:///{work / 'screenshots.sqlite3'}",
        "CELERY_BROKER_URL": "filesystem://",
        "DJANGO_DEBUG": "0",
        "DJANGO_STATIC_ROOT": str(work / "static"),
        "CONCORD_PUBLIC_URL": "https://concord.example.org",
        # Playwright's sync API keeps an event loop in this thread; the few ORM
        # calls made between pages are still plain synchronous calls.
        "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
    }
    os.environ.update(env)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    def report(line: str) -> None:
        print(line, flush=True)

    server = None
    try:
        report(f"Building the data in {work} ...")
        ids = build_data(report, synthetic=args.synthetic)
        call_command("collectstatic", interactive=False, verbosity=0)
        port = args.port or free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/accounts/login/", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    report("The server did not start.")
                    return 1
                time.sleep(0.3)
        report(f"Screenshots of {base} into {output}:")
        pages = set(args.pages.split(",")) if args.pages else None
        devices = set(args.devices.split(",")) if args.devices else None
        written = shoot(base, ids, output, report, pages, devices)
        total = sum(p.stat().st_size for p in written)
        report(f"{len(written)} screenshots, {total / 1024:.0f} KiB in all.")
        missing = (pages or set()) - {p.stem.rsplit("-", 1)[0] for p in written}
        if missing or not written:
            report(f"No such page or device: {', '.join(sorted(missing)) or args.devices}.")
            return 1
        return 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
