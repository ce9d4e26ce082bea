"""State changes of human studies, one module per capability (Zulip's
`zerver/actions` style). Views, admin, API, console and tasks only call these;
reads are in annotator.selectors, the rules a study's settings must follow in
annotator.validation.

- settings: save (and validate) a study's settings, delete an unused study
- items: (re)build a study's tasks and items from its selection
- status: open, pause, close
- arrival: a participant arrives or returns (task, browser, SESSION_ID, another device)
- rating: rate an item, the qualification round, complete a task
- participants: stale work, exclusion, reinstatement, quota refill, places returned
- judgments: the study's evaluator, and its ratings as judgments (or verdicts)
- prolific_sync: the study on Prolific (create, publish, submissions, review)
- messages: message participants on Prolific; pause, start or stop the study there
- bonuses: bonuses set up and paid on Prolific, at most once
- groups: participant groups (allowlists, blocklists) kept across studies

Each change is a pair. `check_<action>` is what callers call: atomic, it
validates, takes the locks the change needs, and calls `do_<action>`.
`do_<action>` changes and writes its AuditEvent; its docstring names the lock
it needs and the check_ that takes it, and it must only be called with that
lock held (inside the same transaction). A do_ that needs no lock says so, and
may be called directly (`rating.do_note_item_served`).

Locks, always in this order, so that no two changes can deadlock
(annotator.actions.locks):
1. the study's row (`lock_study`): every change of the study, its
   participants, assignments, and the judgments its ratings become;
2. then one assignment's row (`lock_assignment`).
A rating (`check_rate_item`) takes only its assignment's row: it changes no
state that another rater's work depends on, and the assignment's status that
completion, exclusion and release change is read under that lock.

Judgments are kept equal to "the ratings of accepted participants whose work
is complete" rater by rater (`judgments.do_sync_rater_judgments`): a change
touches only the rows of the rater it concerns, never the whole study's.
"""
