"""What the admin says after a run action: each run's outcome, as its own message."""

from django.contrib import messages

from runs.lifecycle import Outcome


def report_outcomes(request, outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        level = messages.INFO if outcome.changed else messages.WARNING
        if outcome.code == "broker_down":
            level = messages.ERROR
        messages.add_message(request, level, outcome.detail)
