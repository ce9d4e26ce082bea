"""python manage.py simulate_participants --port 8790

The demo's simulated participants (demo.simulated): a fake Prolific server
on 127.0.0.1:PORT and bots taking the places of adaptive studies' batches.
`run_demo --simulated-participants` starts it and points the web server and
the worker at it; nobody real takes part and no money moves."""

from __future__ import annotations

import os
import socket
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run a fake Prolific server with bots as participants (the demo's switch)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8790)
        parser.add_argument(
            "--listening-fd",
            type=int,
            help="A socket bound and listening already, inherited from run_demo "
            "(instead of --port).",
        )
        parser.add_argument(
            "--seconds",
            type=float,
            default=float(os.environ.get("CONCORD_DEMO_BOT_SECONDS", "2")),
            help="Between bot rounds (CONCORD_DEMO_BOT_SECONDS).",
        )

    def handle(self, *args: str, **options: Any) -> None:
        from demo.fake_prolific import FakeProlific
        from demo.simulated import TOKEN, simulate

        fd = options["listening_fd"]
        listening = None if fd is None else socket.socket(fileno=fd)
        with FakeProlific(
            token=TOKEN, page_size=100, port=options["port"], listening=listening
        ) as prolific:
            self.stdout.write(f"Simulated Prolific at {prolific.url}: bots take the places.")
            simulate(prolific, seconds=options["seconds"], report=self.stdout.write)
