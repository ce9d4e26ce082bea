"""Set up the demo, then run the web server and a Celery worker until Ctrl-C."""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.importers import ImportFailure
from demo.setup import set_up_demo


class Command(BaseCommand):
    help = "The demo: set-up, then web server + Celery worker (Ctrl-C stops both)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--port", type=int, default=int(os.environ.get("CONCORD_DEMO_PORT", 8000))
        )
        parser.add_argument("--no-download", action="store_true")

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
        port = options["port"]
        broker = settings.CELERY_BROKER_URL
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                "default,llm",
                "-c",
                "2",
                "--loglevel",
                "INFO",
                "-n",
                "demo@%h",
            ],
            cwd=settings.BASE_DIR,
        )
        web = subprocess.Popen(
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=settings.BASE_DIR
        )
        base = f"http://127.0.0.1:{port}"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "Concord demo is running.",
                    f"  Data:        {setup.data_origin}",
                    f"  Admin:       {base}/admin/",
                    f"  Login:       user {setup.username}, password {setup.password}",
                    f"  API:         {base}/api/",
                    f"  API docs:    {base}/api/docs/",
                    f"  API schema:  {base}/api/schema/",
                    f"  Celery:      worker on queues default,llm via {broker.split('://')[0]}"
                    + (" (embedded, files under var/)" if broker.startswith("filesystem") else ""),
                    "Press Ctrl-C to stop both.",
                ]
            )
        )
        try:
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
