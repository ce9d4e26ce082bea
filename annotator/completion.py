"""Where a crowd participant goes when their work is done: back to Prolific,
with their completion code.

Prolific records a submission as complete when the participant opens
`PROLIFIC_COMPLETE_URL?cc=<code>`: the done page sends them there (a link and
an automatic redirect), and the admin and the console show the same URL for the
researcher to paste into Prolific. The code is the study's completion code, or
its failed-check code for a participant who failed an attention check or the
qualification round (annotator.actions.rating).
"""

from __future__ import annotations

from urllib.parse import urlencode

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete"


def completion_url(code: str) -> str:
    """The Prolific URL that completes a submission with `code`."""
    return f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"
