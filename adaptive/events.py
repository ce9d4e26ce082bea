"""What an adaptive study tells the apps after it (webhooks): they listen
without `adaptive` importing them (docs/architecture.md: data flows one way).

Sent inside the transaction that makes the change (the adaptive study's lock
held), so that what a receiver writes commits or rolls back with it; a
receiver must not raise, and leaves slow work to after the commit.
"""

from __future__ import annotations

from django.dispatch import Signal

# sent with pk=<adaptive study's pk>, limit, spent (floats) and currency ("GBP")
# when the loop stops the study because the next wave would pass its budget
# (spent: what is spent or reserved already)
budget_reached = Signal()
