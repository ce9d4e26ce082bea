"""What annotator tells the apps after it (sent once the change is committed):
they listen without annotator importing them (docs/architecture.md: data
flows one way)."""

from __future__ import annotations

from django.dispatch import Signal

# sent with study_id=<pk> after a participant's task is completed (their
# ratings are judgments by then)
task_completed = Signal()
