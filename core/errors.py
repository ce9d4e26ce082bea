"""One base for the errors a person can understand and act on.

In the style of Zulip's ``JsonableError``: each class says what kind of error
it is (``code``, stable, for programs to branch on) and which HTTP status
answers it (``http_status``); its message says what went wrong and, where it
is not obvious, what to do. Domain code raises these without knowing about
HTTP; the API's exception handler (``core.api.exception_handler``) answers
``{"detail": message, "code": code}`` with the status, and the participant
pages show the message with the status. A view never maps them by hand.

Extra structured data travels as keyword arguments: ``Conflict("...",
frozen_fields=["name"])`` answers ``{"detail": ..., "code": ...,
"frozen_fields": ["name"]}``.

Every code is in one catalogue, `ErrorCode`, with the HTTP status that
answers it (`HTTP_STATUS`): a class names its code and takes its status from
there, so that a code means one thing and one status everywhere (a class that
names a code outside the catalogue, or another status, fails when it is
defined).

Plain Python (no Django here), so that any layer may raise them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class ErrorCode(StrEnum):
    """Every error code Concord answers with, for programs to branch on."""

    # generic
    INVALID = "invalid"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    UPSTREAM_ERROR = "upstream_error"
    # configurations of models, systems and judges
    CONFIG_INVALID = "config_invalid"
    SYSTEM_CONFIG_INVALID = "system_config_invalid"
    JUDGE_CONFIG_INVALID = "judge_config_invalid"
    TEMPLATE_INVALID = "template_invalid"
    # calling models
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    MODEL_ANSWER_MALFORMED = "model_answer_malformed"
    # imports of benchmarks and scores
    IMPORT_FAILED = "import_failed"
    # generation
    GENERATION_REFUSED = "generation_refused"
    OUT_OF_MEMORY = "out_of_memory"
    # judging
    JUDGING_REFUSED = "judging_refused"
    EVALUATOR_UNKNOWN = "evaluator_unknown"
    ANSWER_INVALID = "answer_invalid"
    EVALUATOR_FROZEN = "evaluator_frozen"
    REVIEW_INVALID = "review_invalid"
    REVIEW_CONFLICT = "review_conflict"
    # human studies
    STUDY_REFUSED = "study_refused"
    STUDY_CONFLICT = "study_conflict"
    STUDY_FULL = "study_full"
    SESSION_REFUSED = "session_refused"
    PROLIFIC_ERROR = "prolific_error"
    # analysis
    SELECTION_INVALID = "selection_invalid"

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self]


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.UPSTREAM_ERROR: 502,
    ErrorCode.CONFIG_INVALID: 400,
    ErrorCode.SYSTEM_CONFIG_INVALID: 400,
    ErrorCode.JUDGE_CONFIG_INVALID: 400,
    ErrorCode.TEMPLATE_INVALID: 400,
    ErrorCode.PROVIDER_UNAVAILABLE: 400,
    ErrorCode.MODEL_ANSWER_MALFORMED: 502,
    ErrorCode.IMPORT_FAILED: 400,
    ErrorCode.GENERATION_REFUSED: 400,
    ErrorCode.OUT_OF_MEMORY: 400,
    ErrorCode.JUDGING_REFUSED: 400,
    ErrorCode.EVALUATOR_UNKNOWN: 400,
    ErrorCode.ANSWER_INVALID: 400,
    ErrorCode.EVALUATOR_FROZEN: 409,
    ErrorCode.REVIEW_INVALID: 400,
    ErrorCode.REVIEW_CONFLICT: 409,
    ErrorCode.STUDY_REFUSED: 400,
    ErrorCode.STUDY_CONFLICT: 409,
    ErrorCode.STUDY_FULL: 409,
    ErrorCode.SESSION_REFUSED: 403,
    ErrorCode.PROLIFIC_ERROR: 502,
    ErrorCode.SELECTION_INVALID: 400,
}


class ConcordError(Exception):
    """Something the caller asked that cannot be done; the message says why."""

    code: ClassVar[ErrorCode] = ErrorCode.INVALID
    http_status: ClassVar[int] = 400

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = ErrorCode(cls.code)  # a code outside the catalogue fails here
        declared = cls.__dict__.get("http_status")
        if declared is not None and declared != code.http_status:
            raise TypeError(
                f"{cls.__name__} answers {code} with {declared}; the catalogue says "
                f"{code.http_status} (core.errors.HTTP_STATUS)."
            )
        cls.code = code
        cls.http_status = code.http_status

    def __init__(self, message: str = "", **data: Any) -> None:
        super().__init__(message)
        self.data = data

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "detail": self.message, "code": str(self.code)}


class Invalid(ConcordError):
    """The request itself is wrong: a value, a combination, a missing part."""

    code = ErrorCode.INVALID


class Conflict(ConcordError):
    """The request is well formed but the stored state forbids it (e.g. data
    that has been rated or judged and must stay as it was)."""

    code = ErrorCode.CONFLICT


class UpstreamError(ConcordError):
    """A service Concord depends on (Prolific, a model endpoint) refused or failed."""

    code = ErrorCode.UPSTREAM_ERROR
