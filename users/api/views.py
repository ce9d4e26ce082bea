"""Projects and their members: every member reads his projects and their
members; owners (and site admins) add a member, change a role or remove one."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ErrorSerializer
from core.serializers import KnownFieldsMixin
from users.models import Membership, Project, ProjectRole, User
from users.projects import role_in, visible_projects


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "source", "created_at"]


class ProjectSerializer(serializers.ModelSerializer):
    my_role = serializers.SerializerMethodField()
    members = MembershipSerializer(source="memberships", many=True, read_only=True)

    class Meta:
        model = Project
        fields = ["slug", "name", "description", "created_at", "my_role", "members"]

    def get_my_role(self, project: Project) -> str | None:
        return role_in(self.context["request"].user, project)


class MemberChangeSerializer(KnownFieldsMixin, serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(
        choices=[*ProjectRole.values, "none"], help_text='"none" removes the member.'
    )


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    """The projects the user is a member of (a site admin: every project)."""

    serializer_class = ProjectSerializer
    lookup_field = "slug"
    search_fields = ["name", "slug"]

    def get_queryset(self) -> QuerySet[Project]:
        return (
            visible_projects(self.request.user)
            .prefetch_related("memberships__user")
            .order_by("name")
        )

    @extend_schema(
        request=MemberChangeSerializer,
        responses={
            200: ProjectSerializer,
            400: OpenApiResponse(ErrorSerializer, "No such account, or the last owner."),
            403: OpenApiResponse(ErrorSerializer, "Only the project's owners manage members."),
        },
    )
    @action(detail=True, methods=["post"])
    def members(self, request: Request, slug: str | None = None) -> Response:
        """Add a member, change his role, or remove him (role "none"). A
        membership the identity provider grants is set again at his next
        sign-in; the last owner stays."""
        project = self.get_object()
        if role_in(request.user, project) != ProjectRole.OWNER:
            raise PermissionDenied("Only the project's owners manage its members.")
        body = MemberChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        username, role = body.validated_data["username"], body.validated_data["role"]
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None or not user.is_researcher:
            # The site role is the site admin's to give, not a project owner's; an
            # account without it reads as one that does not exist.
            raise ValidationError(
                {
                    "username": [
                        f"No researcher account {username!r}: a site admin makes an account "
                        "a researcher, then its project's owner adds it."
                    ]
                }
            )
        with transaction.atomic():
            owners = Membership.objects.select_for_update().filter(
                project=project, role=ProjectRole.OWNER
            )
            if role != ProjectRole.OWNER and list(owners.values_list("user_id", flat=True)) == [
                user.pk
            ]:
                raise ValidationError({"role": ["The project keeps at least one owner."]})
            if role == "none":
                Membership.objects.filter(project=project, user=user).delete()
            else:
                Membership.objects.update_or_create(
                    project=project,
                    user=user,
                    defaults={"role": role, "source": Membership.Source.LOCAL},
                )
        project = self.get_queryset().get(pk=project.pk)
        return Response(ProjectSerializer(project, context={"request": request}).data)
