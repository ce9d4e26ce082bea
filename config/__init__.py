"""Settings, URLs, the Celery app (`config.celery`: `celery -A config` finds it
there) and what the apps share.

The Celery app is not imported here: every management command would pay for
it at start-up. The tasks modules bind to it with `config.celery.app.task`,
and `runs.lifecycle.enqueue` imports it when it sends one.
"""
