import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.importers import ImportFailure
from demo.setup import set_up_demo


class Command(BaseCommand):
    help = (
        "Migrate, import ELITR-Bench with responses (or a synthetic meeting) "
        "and create the demo admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-download", action="store_true", help="Never try GitHub.")
        parser.add_argument(
            "--synthetic", action="store_true", help="Use the synthetic meeting only."
        )

    def handle(self, *args: str, **options: Any) -> None:
        try:
            setup = set_up_demo(
                self.stdout.write,
                allow_download=not options["no_download"],
                force_synthetic=options["synthetic"],
                password=os.environ.get("CONCORD_DEMO_PASSWORD"),
            )
        except ImportFailure as failure:
            raise CommandError(str(failure)) from None
        self.stdout.write(setup.summary.as_text())
        for note in setup.notes:
            self.stdout.write(note)
        self.stdout.write(f"Demo admin: {setup.username} / {setup.password}")
        if setup.study is not None:
            self.stdout.write(f"Crowd study participant link: {setup.participant_path()}")
