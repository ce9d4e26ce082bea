"""What a human study refuses, as errors a person can act on (core.errors:
each has its code and HTTP status; the API, the admin, the console and the
participant pages show the message)."""

from __future__ import annotations

from core.errors import Conflict, ErrorCode, Invalid

SESSION_REFUSED_TEXT = (
    "This Prolific ID already has work in this study, started in another browser and "
    "another Prolific session, so it cannot be opened here. Please continue in the browser "
    "you started in. If you switched device, message the researchers on Prolific: they can "
    "let you continue here."
)


class StudyError(Invalid):
    """Something a user can understand and act on; the message says what."""

    code = ErrorCode.STUDY_REFUSED


class StudyConflict(StudyError, Conflict):
    """The change contradicts stored human data (the API answers 409)."""

    code = ErrorCode.STUDY_CONFLICT


class QuotaFull(StudyError, Conflict):
    code = ErrorCode.STUDY_FULL


class SessionRefused(StudyError):
    """A PROLIFIC_PID that has work here, from a browser that did not consent and
    with another (or no) SESSION_ID: the work stays its owner's."""

    code = ErrorCode.SESSION_REFUSED

    def __init__(self, message: str = "", assignment_id: int | None = None) -> None:
        super().__init__(message or SESSION_REFUSED_TEXT)
        self.assignment_id = assignment_id
