"""What annotator tells the apps after it: they listen without annotator
importing them (docs/architecture.md: data flows one way)."""

from __future__ import annotations

from django.dispatch import Signal

# sent with study_id=<pk> after a participant's task is completed (their
# ratings are judgments by then), once the change is committed
task_completed = Signal()

# Sent inside the transaction that makes the change (the study's lock held), so
# that what a receiver writes (a webhook's delivery row) commits or rolls back
# with it; a receiver must not raise, and leaves slow work to after the commit.

# sent with study_id=<pk> when the last open place is taken: every task has as
# many participants working or done as it wants (a new arrival is turned away)
quota_filled = Signal()

# sent with study_id=<pk> when the last place is completed: every task has as
# many accepted participants who completed it as it wants
study_completed = Signal()
