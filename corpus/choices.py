"""The choice sets that several apps store and compare: each defined once here,
low in the app order (corpus sits left of generation, judging, annotator and
analysis), so every app can use the members instead of writing the values."""

from django.db import models


class Mode(models.TextChoices):
    """How a system is asked a document's questions."""

    SINGLE_TURN = "st", "Single-turn"
    MULTI_TURN = "mt", "Multi-turn"


class DatasetVersion(models.TextChoices):
    QA = "qa", "QA (stand-alone questions)"
    CONV = "conv", "Conv (questions asked in order)"


class Language(models.TextChoices):
    ENGLISH = "en", "English"
    CZECH = "cs", "Czech"


def either(choices: type[models.TextChoices]) -> str:
    """The values for an error message: "'st' or 'mt'"."""
    return " or ".join(repr(value) for value in choices.values)
