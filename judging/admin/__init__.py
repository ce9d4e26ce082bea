"""The judging app's admin."""

# Each module registers its models' admin when imported (Django's autodiscover
# imports this package).
from judging.admin import evaluators, responses, review, runs  # noqa: F401
