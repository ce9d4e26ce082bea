"""A small client for Prolific's REST API (https://docs.prolific.com/docs/api-docs/public/).

Only what a Concord study needs: create a draft study, publish, pause, start
or stop it, change its places, read its submissions, approve or reject a
submission (or many), set up and pay bonuses, message participants, and keep
participant groups (allowlists and blocklists). Every failure becomes a
ProlificError whose message says what Prolific answered, and whose `status`
is Prolific's HTTP status (None when no answer came: then whether a request
took effect is unknown).
"""

from __future__ import annotations

import re
import time
from decimal import ROUND_HALF_UP, Decimal

import requests

from core.errors import ErrorCode, UpstreamError

REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
RELEASED_STATUSES = ("RETURNED", "TIMED-OUT")
# a throttled request (429) is asked again this many times in all, waiting what
# Prolific's Retry-After says (at most RETRY_AFTER_MOST seconds each time)
RATE_LIMIT_TRIES = 3
RETRY_AFTER_MOST = 10.0
STUDY_TRANSITIONS = ("PUBLISH", "PAUSE", "START", "STOP")
# What a Prolific id may hold in a CSV line or a list: letters, digits, _ and -
# (a separator in an id would smuggle a line into a bonus CSV).
PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ProlificError(UpstreamError):
    """Prolific refused a request or could not be reached (the API answers 502)."""

    code = ErrorCode.PROLIFIC_ERROR

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def refused(self) -> bool:
        """Prolific answered that it did not do it (a 4xx): nothing took effect."""
        return self.status is not None and 400 <= self.status < 500


class ProlificClient:
    def __init__(
        self,
        token: str,
        base_url: str = "https://api.prolific.com/api/v1/",
        timeout: float = 30,
        session: requests.Session | None = None,
    ) -> None:
        if not token:
            raise ProlificError("Set PROLIFIC_API_TOKEN to use Prolific's API.")
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}"})

    def _request(self, method: str, path_or_url: str, payload: dict | None = None) -> dict:
        url = path_or_url if path_or_url.startswith("http") else self.base_url + path_or_url
        for attempt in range(RATE_LIMIT_TRIES):
            try:
                answer = self.session.request(method, url, json=payload, timeout=self.timeout)
            except requests.RequestException as error:
                raise ProlificError(f"Prolific could not be reached ({error}).") from error
            # throttled: nothing was done, so even a payment may be asked again
            if answer.status_code != 429 or attempt == RATE_LIMIT_TRIES - 1:
                break
            time.sleep(retry_after(answer.headers.get("Retry-After")))
        if answer.status_code == 429:
            raise ProlificError(
                f"Prolific is limiting the rate of requests ({method} {url}, "
                f"{RATE_LIMIT_TRIES} tries): nothing was done; try again in a minute.",
                status=429,
            )
        if answer.status_code >= 400:
            raise ProlificError(
                f"Prolific answered {answer.status_code} to {method} {url}: {answer.text[:500]}",
                status=answer.status_code,
            )
        if not answer.content:
            return {}
        try:
            body = answer.json()
        except ValueError as error:
            raise ProlificError(
                f"Prolific answered {method} {url} with something that is not JSON.",
                status=answer.status_code,
            ) from error
        return body if isinstance(body, dict) else {"results": body}

    def create_study(self, payload: dict) -> dict:
        return self._request("POST", "studies/", payload)

    def study(self, study_id: str) -> dict:
        """The study as Prolific has it (its `status`: UNPUBLISHED, ACTIVE, PAUSED, COMPLETED)."""
        return self._request("GET", f"studies/{checked_ids([study_id])[0]}/")

    def publish_study(self, study_id: str) -> dict:
        return self.transition_study(study_id, "PUBLISH")

    def transition_study(self, study_id: str, action: str) -> dict:
        """PUBLISH a draft; PAUSE (no new places taken), START again, or STOP for good."""
        if action not in STUDY_TRANSITIONS:
            raise ProlificError(f"A study transition is one of {', '.join(STUDY_TRANSITIONS)}.")
        return self._request("POST", f"studies/{study_id}/transition/", {"action": action})

    def set_places(self, study_id: str, places: int) -> dict:
        """Change how many participants the study takes (to refill its quota)."""
        return self._request("PATCH", f"studies/{study_id}/", {"total_available_places": places})

    def submissions(self, study_id: str) -> list[dict]:
        """Every submission of a study, following the pages."""
        results: list[dict] = []
        url: str | None = f"studies/{study_id}/submissions/"
        while url:
            page = self._request("GET", url)
            results.extend(page.get("results", []))
            url = ((page.get("_links") or {}).get("next") or {}).get("href")
        return results

    def approve(self, submission_id: str) -> dict:
        return self._request(
            "POST", f"submissions/{submission_id}/transition/", {"action": "APPROVE"}
        )

    def reject(self, submission_id: str, message: str, category: str) -> dict:
        validate_rejection(message, category)
        return self._request(
            "POST",
            f"submissions/{submission_id}/transition/",
            {"action": "REJECT", "message": message, "rejection_category": category},
        )

    def bulk_approve(self, study_id: str, submission_ids: list[str]) -> dict:
        """Approve many submissions at once (Prolific skips those approved already)."""
        return self._request(
            "POST",
            "submissions/bulk-approve/",
            {"study_id": study_id, "submission_ids": checked_ids(submission_ids)},
        )

    # -- bonuses: set up, then pay (paying is NOT idempotent on Prolific) --

    def set_up_bonuses(self, study_id: str, amounts: list[tuple[str, Decimal]]) -> dict:
        """A bulk bonus payment for participants of the study (amounts in the
        study's currency, e.g. 1.50 for GBP 1.50). Nothing is paid yet: the
        answer's `id` is what pay_bonuses pays."""
        ids = checked_ids([pid for pid, _ in amounts])
        lines = "".join(
            f"{pid},{amount:.2f}\n" for pid, (_, amount) in zip(ids, amounts, strict=True)
        )
        return self._request(
            "POST", "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": lines}
        )

    def pay_bonuses(self, bulk_id: str) -> dict:
        """Pay a bulk bonus payment set up before. Prolific pays again for every
        request with the same id: send it once (annotator.actions.bonuses)."""
        return self._request("POST", f"bulk-bonus-payments/{checked_ids([bulk_id])[0]}/pay/")

    # -- messages --

    def message_participants(self, study_id: str, participant_ids: list[str], body: str) -> dict:
        return self._request(
            "POST",
            "messages/bulk/",
            {"ids": checked_ids(participant_ids), "body": body, "study_id": study_id},
        )

    # -- participant groups --

    def create_participant_group(self, workspace_id: str, name: str) -> dict:
        return self._request(
            "POST", "participant-groups/", {"workspace_id": workspace_id, "name": name}
        )

    def add_to_participant_group(self, group_id: str, participant_ids: list[str]) -> dict:
        return self._request(
            "POST",
            f"participant-groups/{checked_ids([group_id])[0]}/participants/",
            {"participant_ids": checked_ids(participant_ids)},
        )

    def remove_from_participant_group(self, group_id: str, participant_ids: list[str]) -> dict:
        return self._request(
            "DELETE",
            f"participant-groups/{checked_ids([group_id])[0]}/participants/",
            {"participant_ids": checked_ids(participant_ids)},
        )


def checked_ids(ids: list[str]) -> list[str]:
    """Prolific ids as sent: letters, digits, _ and - only, none twice."""
    if not ids:
        raise ProlificError("No participant or submission ids were given.")
    bad = [i for i in ids if not PROLIFIC_ID.fullmatch(str(i))]
    if bad:
        raise ProlificError(f"Not a Prolific id: {bad[0]!r} (letters, digits, _ and - only).")
    if len(set(ids)) != len(ids):
        raise ProlificError("An id is listed twice.")
    return [str(i) for i in ids]


def validate_rejection(message: str, category: str) -> None:
    """Prolific refuses a rejection without a 100+ character message and a category."""
    if len((message or "").strip()) < 100:
        raise ProlificError(
            "A rejection needs a message of at least 100 characters for the participant."
        )
    if category not in REJECTION_CATEGORIES:
        raise ProlificError(f"Choose a rejection category: {', '.join(REJECTION_CATEGORIES)}.")


def retry_after(header: str | None) -> float:
    """Seconds to wait before asking again: Prolific's Retry-After (seconds),
    1 when absent or not a number, never more than RETRY_AFTER_MOST."""
    try:
        seconds = float(header) if header is not None else 1.0
    except ValueError:
        seconds = 1.0
    if not seconds >= 0:  # NaN too
        seconds = 1.0
    return min(seconds, RETRY_AFTER_MOST)


def reward_in_pence(hourly_pay_gbp: Decimal, minutes: int) -> int:
    return int((Decimal(hourly_pay_gbp) * 100 * minutes / 60).quantize(Decimal(1), ROUND_HALF_UP))


def prolific_client_or_none() -> ProlificClient | None:
    """A client when PROLIFIC_API_TOKEN is set, else None (Concord works without it)."""
    from django.conf import settings

    if not settings.PROLIFIC_API_TOKEN:
        return None
    return ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)
