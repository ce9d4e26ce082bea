"""What the adaptive loop refuses, said so that the researcher can fix it."""

from __future__ import annotations

from core.errors import Invalid


class AdaptiveError(Invalid):
    """The goal, its budget or its selection cannot run as stated."""
