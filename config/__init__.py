"""Settings, URLs and the Celery app (`config.celery`: `celery -A config` finds
it there): the top of the project, over every app (what the apps share is the
ground floor, `core/`).

The Celery app is not imported here: every management command would pay for
it at start-up. The tasks modules bind to it with `config.celery.app.task`,
and `runs.lifecycle.enqueue` imports it when it sends one.
"""
