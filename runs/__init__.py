"""One life cycle for every long job: generation runs, judging runs, imports.

`runs.models.Run` is the abstract base (one status vocabulary, counters,
timestamps, the lease); `runs.lifecycle` holds the state changes that every
kind shares (claiming and holding the lease with a heartbeat, resume, cancel,
enqueue, taking over from a dead worker).
"""
