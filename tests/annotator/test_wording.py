"""Study actions and audit events in words (annotator.wording, core.words):
what "Refill the quota" did, and each audit event as a phrase, old rows included."""

from __future__ import annotations

import pytest

from annotator.actions.participants import check_refill_quota
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import AuditEvent, Study
from annotator.wording import audit_detail, refill_summary
from core.words import count
from corpus.models import Document
from generation.models import System

Action = AuditEvent.Action


def test_counts_say_one_and_many():
    assert count(1, "task") == "1 task"
    assert count(0, "task") == "0 tasks"
    assert count(2, "task") == "2 tasks"
    assert count(1200, "item") == "1,200 items"
    assert count(3, "process", "processes") == "3 processes"


def test_what_refill_did():
    assert refill_summary(0, 4, 0) == (
        "Refilled the quota: no unfinished work was old enough to release; "
        "4 places are open to new participants."
    )
    assert refill_summary(1, 1, 30) == (
        "Refilled the quota: released 1 stale place (work left unfinished too long); "
        "1 place is open to new participants; Prolific's places set to 30."
    )
    assert refill_summary(2, 0, 0, on_prolific=True) == (
        "Refilled the quota: released 2 stale places (work left unfinished too long); "
        "no place is open: every task has its raters or work in progress; "
        "Prolific's places unchanged (set PROLIFIC_API_TOKEN to change them here)."
    )


@pytest.mark.parametrize(
    ("action", "detail", "words"),
    [
        (
            Action.QUOTA_REFILLED,
            "released 2, open_places 5, prolific_places 30",
            "released 2 stale places (work left unfinished too long); 5 places are open to new "
            "participants; Prolific's places set to 30",
        ),
        (Action.CHANGED, "attention_checks, completion_code", "attention checks, completion code"),
        (Action.COMPLETED, "attention checks: True", "passed the attention checks"),
        (Action.COMPLETED, "attention checks: False", "failed the attention checks"),
        (Action.COMPLETED, "attention checks: none", ""),
        (Action.OPENED, "was closed", "it was closed"),
        (Action.RELEASED, "Prolific: RETURNED", "returned the study on Prolific"),
        (Action.RELEASED, "Prolific: TIMED-OUT", "timed out on Prolific"),
        (Action.PROLIFIC_CREATED, "6543abcd", "Prolific study 6543abcd"),
        (Action.EXCLUDED, "one score everywhere", "one score everywhere"),
    ],
)
def test_audit_details_read_as_words(action, detail, words):
    assert audit_detail(AuditEvent(action=action, detail=detail)) == words


@pytest.mark.django_db
def test_what_the_services_record_reads_as_words(crowd_study, researcher):
    check_refill_quota(crowd_study, researcher)
    crowd_study.completion_code = "NEWCODE1"
    check_save_study(crowd_study, ["completion_code"], actor=researcher)
    check_set_study_status(crowd_study, "paused", researcher)
    read = {
        event.action: audit_detail(event) for event in AuditEvent.objects.filter(study=crowd_study)
    }
    assert read[Action.QUOTA_REFILLED] == (
        "no unfinished work was old enough to release; 4 places are open to new participants"
    )
    assert read[Action.CHANGED] == "completion code"
    assert read[Action.PAUSED] == "it was open"
    assert read[Action.BUILD_ITEMS] == "2 tasks, 36 items (36 responses)"
    # one meeting: "1 task", not "1 tasks"
    document = Document.objects.filter(split="test2").order_by("external_id").first()
    one = Study(
        name="One meeting",
        raters_per_task=1,
        dataset=crowd_study.dataset,
        completion_code="C0DE1234",
    )
    check_save_study(
        one,
        [],
        after_save=lambda s: (s.systems.set(System.objects.all()), s.documents.set([document])),
    )
    built = AuditEvent.objects.get(study=one, action=Action.BUILD_ITEMS)
    assert audit_detail(built) == "1 task, 18 items (18 responses)"
