"""The human studies' admin: studies, participants, and the read-only records
(assignments, ratings, items, audit events, bonuses, participant groups). Every change goes through
annotator.actions."""

from annotator.admin import participants, prolific_records, records, studies
from annotator.admin.common import public_base_url
from annotator.admin.studies import StudyForm

__all__ = [
    "StudyForm",
    "participants",
    "prolific_records",
    "public_base_url",
    "records",
    "studies",
]
