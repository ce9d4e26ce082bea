"""Set up the demo, then run the web server and a Celery worker until Ctrl-C."""

import os
import signal
import subprocess
import sys
import time
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.importers import ImportFailure
from demo.setup import set_up_demo

WORKER_QUEUES = "default,llm"


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def _wait_until_serving(url: str, web: subprocess.Popen, seconds: float = 60) -> None:
    """Print the URLs only once they answer, after the servers' own start-up lines."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and web.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            time.sleep(0.3)


class Command(BaseCommand):
    help = "The demo: set-up, then web server + Celery worker (Ctrl-C stops both)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--port", type=int, default=int(os.environ.get("CONCORD_DEMO_PORT", 8000))
        )
        parser.add_argument("--no-download", action="store_true", help="Never try GitHub.")

    def handle(self, *args, **options):
        try:
            setup = set_up_demo(
                self.stdout.write,
                allow_download=not options["no_download"],
                password=os.environ.get("CONCORD_DEMO_PASSWORD"),
            )
        except ImportFailure as failure:
            raise CommandError(str(failure)) from None
        self.stdout.write(setup.summary.as_text())
        port, broker = options["port"], settings.CELERY_BROKER_URL
        worker_command = [sys.executable, "-m", "celery", "-A", "config", "worker"]
        worker_command += ["-Q", WORKER_QUEUES, "-c", "2", "--loglevel", "INFO", "-n", "demo@%h"]
        # -B: the worker also runs the periodic tasks (releasing stale study work).
        worker_command += ["-B", "--schedule", str(settings.VAR_DIR / "celerybeat-schedule")]
        web_command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "runserver"]
        web_command += [f"127.0.0.1:{port}", "--noreload"]
        # A plain `kill` must stop the children too, as Ctrl-C does.
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        worker = subprocess.Popen(worker_command, cwd=settings.BASE_DIR)
        web = subprocess.Popen(web_command, cwd=settings.BASE_DIR)
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_until_serving(f"{base}/admin/login/", web)
            embedded = " (embedded, files under var/)" if broker.startswith("filesystem") else ""
            lines = [
                "",
                "Concord demo is running.",
                f"  Data:        {setup.data_origin}",
                f"  Admin:       {base}/admin/",
                f"  Login:       user {setup.username}, password {setup.password}",
                f"  API:         {base}/api/",
                f"  API docs:    {base}/api/docs/",
                f"  API schema:  {base}/api/schema/",
                f"  Crowd study: {base}{setup.participant_path()}",
                "               (a participant's link, as Prolific would open it; change the",
                "               PROLIFIC_PID to arrive as another participant)",
                f"  Gold raters: {base}/gold/",
                f"  Report:      {base}{setup.report_path}",
                "               (agreement of the paper's evaluators; add &format=json, csv,",
                "               csv-wide or latex to export; sign in as the admin first)",
                f"  Celery:      worker on queues {WORKER_QUEUES} via "
                f"{broker.split('://')[0]}{embedded}",
                "Press Ctrl-C to stop both.",
            ]
            self.stdout.write("\n".join(lines))
            while worker.poll() is None and web.poll() is None:
                time.sleep(0.5)
            raise CommandError("The web server or the worker stopped; see the log above.")
        except KeyboardInterrupt:
            self.stdout.write("Stopping…")
        finally:
            for process in (web, worker):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM if process is web else signal.SIGINT)
            for process in (web, worker):
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
