"""What a run tells the apps after it (webhooks): they listen without `runs`
importing them (docs/architecture.md: data flows one way).

Sent inside the transaction that makes the change, so that what a receiver
writes (a webhook's delivery row) commits or rolls back with it: a rolled-back
change tells nobody, and a committed one is never lost. A receiver must not
raise (it would undo the change) and must leave slow work (a request) to after
the commit.
"""

from __future__ import annotations

from django.dispatch import Signal

# sent with pk=<run's pk> and status=<done, failed or cancelled> when a run
# ends (sender: the run's model)
run_finished = Signal()

# sent with pk=<run's pk>, limit and spent (floats, in `currency`) when a run
# stops because its next request could pass its budget (sender: the run's model)
budget_reached = Signal()
