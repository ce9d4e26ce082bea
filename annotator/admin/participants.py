"""The admin of participants: exclude (with a reason), reinstate, allow another
device, approve or reject on Prolific. Participants are never deleted."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from annotator.actions.arrival import OTHER_DEVICE_HOURS, check_allow_other_device
from annotator.actions.participants import check_exclude_participant, check_reinstate_participant
from annotator.actions.prolific_sync import check_review_on_prolific
from annotator.admin.common import for_each_on_prolific
from annotator.errors import StudyError
from annotator.models import Participant
from annotator.prolific_api import REJECTION_CATEGORIES, ProlificClient
from users.admin_scope import ProjectScopedAdmin
from users.permissions import signed_in_user


class ExclusionForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea, help_text="Kept in the audit log.")


class RejectionForm(forms.Form):
    message = forms.CharField(
        widget=forms.Textarea,
        min_length=100,
        help_text="Shown to the participant; at least 100 characters.",
    )
    category = forms.ChoiceField(choices=[(c, c) for c in REJECTION_CATEGORIES])


@admin.register(Participant)
class ParticipantAdmin(ProjectScopedAdmin):
    project_path = "study__project"
    list_display = (
        "__str__",
        "study",
        "status",
        "flagged",
        "flag_reason",
        "task",
        "assignment_status",
        "created_at",
    )
    list_filter = ("study", "status", "flagged")
    search_fields = ("prolific_pid", "user__username")
    list_select_related = ("study", "user", "assignment__task")
    readonly_fields = (
        "study",
        "prolific_pid",
        "user",
        "status",
        "exclusion_reason",
        "flagged",
        "flag_reason",
        "created_at",
        "audit_log",
    )
    actions = [
        "exclude_action",
        "reinstate_action",
        "allow_other_device_action",
        "prolific_approve_action",
        "prolific_reject_action",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Participant | None = None) -> bool:
        return False  # human data is never deleted: exclude instead (audited, reversible)

    @admin.display(description="task")
    def task(self, obj: Participant) -> str:
        assignment = getattr(obj, "assignment", None)
        return assignment.task.label if assignment else "-"

    @admin.display(description="assignment")
    def assignment_status(self, obj: Participant) -> str:
        assignment = getattr(obj, "assignment", None)
        return assignment.get_status_display() if assignment else "-"

    @admin.display(description="audit log")
    def audit_log(self, obj: Participant) -> SafeString:
        events = obj.audit_events.select_related("actor")
        return format_html_join(
            "",
            "<div>{} {} {} {}</div>",
            (
                (e.created_at.strftime("%Y-%m-%d %H:%M"), e.action, e.actor or "", e.detail)
                for e in events
            ),
        )

    @admin.action(description="Exclude selected participants (asks for a reason)")
    def exclude_action(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse | None:
        """Asks for a reason, then excludes (the confirmation posts this action's
        name back: without it the admin answered "No action selected")."""
        if "apply" in request.POST:
            form = ExclusionForm(request.POST)
            if form.is_valid():
                actor = signed_in_user(request)
                changed = sum(
                    check_exclude_participant(p, actor, form.cleaned_data["reason"])
                    for p in queryset
                )
                messages.info(
                    request,
                    f"Excluded {changed} participant(s); their places are open again "
                    "and their ratings left the analysis.",
                )
                return None
        else:
            form = ExclusionForm()
        return render(
            request,
            "admin/annotator/exclude.html",
            {
                **self.admin_site.each_context(request),
                "form": form,
                "participants": queryset,
                "title": "Exclude participants",
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "action_name": "exclude_action",
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Reinstate selected participants")
    def reinstate_action(self, request: HttpRequest, queryset: QuerySet[Participant]) -> None:
        actor = signed_in_user(request)
        changed = sum(
            check_reinstate_participant(p, actor, "reinstated from the admin") for p in queryset
        )
        messages.info(request, f"Reinstated {changed} participant(s).")

    @admin.action(description=f"Allow another device (once, within {OTHER_DEVICE_HOURS} hours)")
    def allow_other_device_action(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> None:
        actor = signed_in_user(request)
        for participant in queryset:
            try:
                check_allow_other_device(participant, actor, "allowed from the admin")
            except StudyError as error:
                messages.error(request, str(error))
            else:
                messages.info(
                    request,
                    f"{participant} may now continue once from another browser (within "
                    f"{OTHER_DEVICE_HOURS} hours).",
                )

    @admin.action(description="Prolific: approve submissions")
    def prolific_approve_action(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> None:
        def approve(client: ProlificClient, participant: Participant) -> str:
            check_review_on_prolific(participant, client, True, signed_in_user(request))
            return f"{participant}: approved on Prolific."

        for_each_on_prolific(request, queryset.select_related("assignment", "study"), approve)

    @admin.action(description="Prolific: reject submissions (asks for a message)")
    def prolific_reject_action(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse | None:
        form = RejectionForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            message, category = form.cleaned_data["message"], form.cleaned_data["category"]

            def reject(client: ProlificClient, participant: Participant) -> str:
                check_review_on_prolific(
                    participant, client, False, signed_in_user(request), message, category
                )
                return f"{participant}: rejected on Prolific."

            for_each_on_prolific(request, queryset.select_related("assignment", "study"), reject)
            return None
        return render(
            request,
            "admin/annotator/exclude.html",
            {
                **self.admin_site.each_context(request),
                "form": form,
                "participants": queryset,
                "title": "Reject on Prolific",
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "action_name": "prolific_reject_action",
                "opts": self.model._meta,
            },
        )
