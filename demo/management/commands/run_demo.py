"""Set up the demo, then run the web server and a Celery worker until Ctrl-C."""

import os
import socket
import sys
import textwrap
import urllib.request
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.importers import ImportFailure
from demo.setup import DemoSetup, set_up_demo
from demo.supervisor import Supervisor

WORKER_QUEUES = "default,llm"


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except OSError:
        return False


def listening_socket(port: int) -> socket.socket:
    """The fake Prolific's socket, bound and listening before any process is
    told its address: on `port` (the web server's + 790) or, when another
    program holds that port, on any free one."""
    listening = socket.socket()
    try:
        listening.bind(("127.0.0.1", port))
    except OSError:
        listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    listening.set_inheritable(True)
    return listening


def wrap_notes(notes: list[str], width: int = 64) -> list[str]:
    """The set-up's notes as lines under the banner's "Data:" line."""
    wrap = textwrap.TextWrapper(width, break_long_words=False, break_on_hyphens=False)
    return [line for note in notes for line in wrap.wrap(note)]


class Command(BaseCommand):
    help = "The demo: set-up, then web server + Celery worker (Ctrl-C stops both)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--port", type=int, default=int(os.environ.get("CONCORD_DEMO_PORT", 8000))
        )
        parser.add_argument("--no-download", action="store_true", help="Never try GitHub.")
        parser.add_argument(
            "--simulated-participants",
            action="store_true",
            default=settings.CONCORD_DEMO_SIMULATED_PARTICIPANTS,
            help="Bots on a fake Prolific server take the adaptive studies' places "
            "(also CONCORD_DEMO_SIMULATED_PARTICIPANTS=1). Nobody real takes part.",
        )

    def handle(self, *args: str, **options: Any) -> None:
        try:
            setup = set_up_demo(
                self.stdout.write,
                allow_download=not options["no_download"],
                password=os.environ.get("CONCORD_DEMO_PASSWORD"),
                simulated=options["simulated_participants"],
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
        base = f"http://127.0.0.1:{port}"
        simulated = options["simulated_participants"]
        environment = dict(os.environ)
        listening = listening_socket(port + 790) if simulated else None
        if listening is not None:
            # the web server and the worker talk to the fake Prolific as Prolific
            from demo.simulated import TOKEN

            environment |= {
                "CONCORD_DEMO_SIMULATED_PARTICIPANTS": "1",
                "PROLIFIC_API_TOKEN": TOKEN,
                "PROLIFIC_API_URL": f"http://127.0.0.1:{listening.getsockname()[1]}/api/v1/",
                "CONCORD_PUBLIC_URL": base,
            }
        # Ctrl-C, `kill` or a closed terminal reach this process, which stops them all
        with Supervisor() as supervisor:
            if listening is not None:
                bots = [sys.executable, str(settings.BASE_DIR / "manage.py")]
                bots += ["simulate_participants", "--listening-fd", str(listening.fileno())]
                supervisor.start(
                    "simulated participants",
                    bots,
                    cwd=settings.BASE_DIR,
                    env=environment,
                    pass_fds=(listening.fileno(),),
                )
                listening.close()  # the bots' process holds it now
            supervisor.start("worker", worker_command, cwd=settings.BASE_DIR, env=environment)
            supervisor.start("web server", web_command, cwd=settings.BASE_DIR, env=environment)
            # print the URLs only once they answer, after the servers' own start-up lines
            supervisor.wait(60, until=lambda: _answers(f"{base}/admin/login/"))
            if not supervisor.stop_requested and supervisor.stopped_child() is None:
                self.stdout.write(self.banner(setup, base, broker, simulated))
                supervisor.wait()
            crashed = supervisor.crashed_child()
            self.stdout.write("Stopping…")
        if crashed is not None:
            raise CommandError(
                f"The {crashed.name} stopped (exit code {crashed.exit_code}); see the log above."
            )

    def banner(self, setup: DemoSetup, base: str, broker: str, simulated: bool = False) -> str:
        embedded = " (embedded, files under var/)" if broker.startswith("filesystem") else ""
        whose = (
            "the synthetic meeting's evaluators, every score invented"
            if setup.synthetic
            else "the paper's evaluators"
        )
        report_note = [
            f"               (agreement of {whose}; add &format=json, csv,",
            "               csv-wide or latex to export; sign in as the admin first)",
        ]
        lines = [
            "",
            "Concord demo is running.",
            f"  Data:        {setup.data_origin}",
            *(f"               {line}" for line in wrap_notes(setup.notes)),
            f"  Console:     {base}/console/  (studies, runs, workers, documents, reports)",
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
            *report_note,
            # under one heading: a title as long as "ZeroSCROLLS validation" fits no column
            *(
                ("  Benchmarks:  " if i == 0 else " " * 15) + f"{title}: {base}{path}"
                for i, (title, path) in enumerate(setup.benchmark_reports)
            ),
            f"  Adaptive:    {base}/console/adaptive/  (demo study {setup.adaptive})",
            (
                "               SIMULATED PARTICIPANTS ON: bots on a fake Prolific server take "
                "the places; nobody real, no money"
                if simulated
                else "               (bots as participants: "
                "CONCORD_DEMO_SIMULATED_PARTICIPANTS=1 make demo)"
            ),
            f"  Celery:      worker on queues {WORKER_QUEUES} via "
            f"{broker.split('://')[0]}{embedded}",
            "Press Ctrl-C to stop them all.",
        ]
        return "\n".join(lines)
