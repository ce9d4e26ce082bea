"""A small client for Prolific's REST API (https://docs.prolific.com/docs/api-docs/public/).

Only what a Concord study needs: create a draft study, publish it, change its
places, read its submissions, approve or reject a submission. Every failure becomes a
ProlificError whose message says what Prolific answered.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import requests

from config.errors import ErrorCode, UpstreamError

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


class ProlificError(UpstreamError):
    """Prolific refused a request or could not be reached (the API answers 502)."""

    code = ErrorCode.PROLIFIC_ERROR


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
        try:
            answer = self.session.request(method, url, json=payload, timeout=self.timeout)
        except requests.RequestException as error:
            raise ProlificError(f"Prolific could not be reached ({error}).") from error
        if answer.status_code >= 400:
            raise ProlificError(
                f"Prolific answered {answer.status_code} to {method} {url}: {answer.text[:500]}"
            )
        return answer.json() if answer.content else {}

    def create_study(self, payload: dict) -> dict:
        return self._request("POST", "studies/", payload)

    def publish_study(self, study_id: str) -> dict:
        return self._request("POST", f"studies/{study_id}/transition/", {"action": "PUBLISH"})

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


def validate_rejection(message: str, category: str) -> None:
    """Prolific refuses a rejection without a 100+ character message and a category."""
    if len((message or "").strip()) < 100:
        raise ProlificError(
            "A rejection needs a message of at least 100 characters for the participant."
        )
    if category not in REJECTION_CATEGORIES:
        raise ProlificError(f"Choose a rejection category: {', '.join(REJECTION_CATEGORIES)}.")


def reward_in_pence(hourly_pay_gbp: Decimal, minutes: int) -> int:
    return int((Decimal(hourly_pay_gbp) * 100 * minutes / 60).quantize(Decimal(1), ROUND_HALF_UP))


def prolific_client_or_none() -> ProlificClient | None:
    """A client when PROLIFIC_API_TOKEN is set, else None (Concord works without it)."""
    from django.conf import settings

    if not settings.PROLIFIC_API_TOKEN:
        return None
    return ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)
