"""Participant groups on Prolific, kept across studies: an allowlist of raters
who qualified before (reused so that the next study recruits them), a
blocklist of raters excluded (so that they are not recruited again). A study
filtered by a group gets it as its allowlist or blocklist filter when it is
created on Prolific (prolific_sync.prolific_draft)."""

from __future__ import annotations

from django.db import transaction

from annotator.actions.audit import Action, audit
from annotator.actions.locks import lock_group, lock_study
from annotator.errors import StudyConflict, StudyError
from annotator.models import (
    Assignment,
    Participant,
    ParticipantGroup,
    ParticipantGroupMember,
    Study,
)
from annotator.prolific_api import PROLIFIC_ID, ProlificClient
from users.models import User

Kind = ParticipantGroup.Kind


def check_create_participant_group(
    name: str, kind: str, client: ProlificClient, workspace_id: str
) -> ParticipantGroup:
    """A new group on Prolific, in the lab's workspace, and its record here.
    Refuses a name in use, an unknown kind and a missing workspace, then
    do_create_participant_group."""
    name = (name or "").strip()
    if not name:
        raise StudyError("Name the participant group.")
    if kind not in Kind.values:
        raise StudyError(f"A participant group is an allowlist or a blocklist ({Kind.values}).")
    if not workspace_id:
        raise StudyError("Set PROLIFIC_WORKSPACE_ID: Prolific keeps groups in a workspace.")
    if ParticipantGroup.objects.filter(name=name).exists():
        raise StudyConflict(f"A participant group is named {name!r} already.")
    return do_create_participant_group(name, kind, client, workspace_id)


def do_create_participant_group(
    name: str, kind: str, client: ProlificClient, workspace_id: str
) -> ParticipantGroup:
    """Needs no lock: the name is unique in the database (a second creation at
    once fails there, after Prolific made a group nobody uses)."""
    created = client.create_participant_group(workspace_id, name)
    return ParticipantGroup.objects.create(
        name=name, kind=kind, prolific_id=str(created.get("id", ""))[:64]
    )


def qualified_raters(study: Study) -> list[Participant]:
    """Crowd raters of the study who completed their work and were neither
    excluded, nor flagged, nor given the failed-check code."""
    return list(
        Participant.objects.filter(
            study=study,
            status=Participant.Status.ACCEPTED,
            flagged=False,
            assignment__status=Assignment.Status.COMPLETED,
        ).exclude(prolific_pid="")
    )


def excluded_raters(study: Study) -> list[Participant]:
    """Crowd raters of the study excluded by a researcher or given the
    failed-check code."""
    return list(
        Participant.objects.filter(
            study=study,
            status__in=[Participant.Status.EXCLUDED, Participant.Status.FAILED_CHECK],
        ).exclude(prolific_pid="")
    )


@transaction.atomic
def check_add_to_group(
    group: ParticipantGroup,
    participants: list[Participant],
    reason: str,
    client: ProlificClient,
    actor: User | None = None,
) -> int:
    """Add a study's participants to the group (those in it already are left
    as they are); how many were added. Takes the group's row lock, then
    do_add_to_group."""
    group = lock_group(group)
    known = set(group.members.values_list("prolific_pid", flat=True))
    new = [p for p in participants if p.prolific_pid and p.prolific_pid not in known]
    if any(not PROLIFIC_ID.fullmatch(p.prolific_pid) for p in new):
        raise StudyError("A participant's Prolific id cannot be sent to Prolific.")
    if not new:
        return 0
    do_add_to_group(group, new, reason.strip()[:300], client, actor)
    return len(new)


def do_add_to_group(
    group: ParticipantGroup,
    participants: list[Participant],
    reason: str,
    client: ProlificClient,
    actor: User | None,
) -> None:
    """Needs the group's row lock (check_add_to_group takes it): two additions
    at once would record a member twice."""
    client.add_to_participant_group(group.prolific_id, [p.prolific_pid for p in participants])
    ParticipantGroupMember.objects.bulk_create(
        ParticipantGroupMember(
            group=group, prolific_pid=p.prolific_pid, reason=reason, study_id=p.study_id
        )
        for p in participants
    )
    for p in participants:
        audit(p.study, Action.GROUP_ADDED, participant=p, actor=actor, detail=str(group))


@transaction.atomic
def check_remove_from_group(
    group: ParticipantGroup,
    prolific_pids: list[str],
    client: ProlificClient,
    actor: User | None = None,
) -> int:
    """Take these Prolific ids out of the group; how many were in it. Takes
    the group's row lock, then do_remove_from_group."""
    group = lock_group(group)
    members = list(group.members.filter(prolific_pid__in=prolific_pids))
    if not members:
        return 0
    do_remove_from_group(group, members, client, actor)
    return len(members)


def do_remove_from_group(
    group: ParticipantGroup,
    members: list[ParticipantGroupMember],
    client: ProlificClient,
    actor: User | None,
) -> None:
    """Needs the group's row lock (check_remove_from_group takes it)."""
    client.remove_from_participant_group(group.prolific_id, [m.prolific_pid for m in members])
    ParticipantGroupMember.objects.filter(pk__in=[m.pk for m in members]).delete()
    for member in members:
        if member.study is not None:
            participant = Participant.objects.filter(
                study=member.study, prolific_pid=member.prolific_pid
            ).first()
            audit(
                member.study,
                Action.GROUP_REMOVED,
                participant=participant,
                actor=actor,
                detail=str(group),
            )


@transaction.atomic
def check_filter_study(study: Study, group: ParticipantGroup, actor: User | None = None) -> None:
    """Recruit the study through the group (allowlist) or around it
    (blocklist). Refuses a study already on Prolific (its filters are set when
    it is created there), then do_filter_study."""
    study = lock_study(study)
    if study.prolific_study_id:
        raise StudyError("Choose participant groups before the study is created on Prolific.")
    do_filter_study(study, group, actor)


def do_filter_study(study: Study, group: ParticipantGroup, actor: User | None) -> None:
    """Needs the study lock (check_filter_study takes it): the filter must be
    set before the study is created on Prolific."""
    group.studies.add(study)
    audit(study, Action.CHANGED, actor=actor, detail=f"Recruited through {group}")


def group_filters(study: Study) -> list[dict]:
    """The study's Prolific filters from its participant groups."""
    filters = []
    for kind, filter_id in (
        (Kind.ALLOW, "participant_group_allowlist"),
        (Kind.BLOCK, "participant_group_blocklist"),
    ):
        ids = sorted(
            ParticipantGroup.objects.filter(studies=study, kind=kind).values_list(
                "prolific_id", flat=True
            )
        )
        if ids:
            filters.append({"filter_id": filter_id, "selected_values": ids})
    return filters
