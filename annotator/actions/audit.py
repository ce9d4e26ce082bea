"""The audit row every state change of a study writes, in its transaction."""

from __future__ import annotations

from annotator.models import AuditEvent, Participant, Study
from users.models import User

Action = AuditEvent.Action


def audit(
    study: Study,
    action: str,
    *,
    participant: Participant | None = None,
    actor: User | None = None,
    detail: str = "",
) -> None:
    AuditEvent.objects.create(
        study=study, participant=participant, actor=actor, action=action, detail=detail
    )
