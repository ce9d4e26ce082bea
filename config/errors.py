"""One base for the errors a person can understand and act on.

In the style of Zulip's ``JsonableError``: each class says what kind of error
it is (``code``, stable, for programs to branch on) and which HTTP status
answers it (``http_status``); its message says what went wrong and, where it
is not obvious, what to do. Domain code raises these without knowing about
HTTP; the API's exception handler (``config.api.exception_handler``) answers
``{"detail": message, "code": code}`` with the status, and the participant
pages show the message with the status. A view never maps them by hand.

Extra structured data travels as keyword arguments: ``Conflict("...",
frozen_fields=["name"])`` answers ``{"detail": ..., "code": ...,
"frozen_fields": ["name"]}``.

Plain Python (no Django here), so that any layer may raise them.
"""

from __future__ import annotations

from typing import Any


class ConcordError(Exception):
    """Something the caller asked that cannot be done; the message says why."""

    code = "invalid"
    http_status = 400

    def __init__(self, message: str = "", **data: Any) -> None:
        super().__init__(message)
        self.data = data

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "detail": self.message, "code": self.code}


class Invalid(ConcordError):
    """The request itself is wrong: a value, a combination, a missing part."""

    code = "invalid"
    http_status = 400


class NotFound(ConcordError):
    code = "not_found"
    http_status = 404


class Conflict(ConcordError):
    """The request is well formed but the stored state forbids it (e.g. data
    that has been rated or judged and must stay as it was)."""

    code = "conflict"
    http_status = 409


class UpstreamError(ConcordError):
    """A service Concord depends on (Prolific, a model endpoint) refused or failed."""

    code = "upstream_error"
    http_status = 502
