from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A Concord account. Crowd workers never get one: they arrive by Prolific id.

    The role says what a person may see. Researchers (and admins) read and
    change studies, responses and scores; gold annotators only rate the items
    of the gold studies they are assigned, and must not see model names or
    other evaluators' scores (it would bias their ratings).
    """

    class Role(models.TextChoices):
        NONE = "", "No role yet (an admin grants one)"
        ADMIN = "admin", "Admin"
        RESEARCHER = "researcher", "Researcher"
        GOLD_ANNOTATOR = "gold_annotator", "Gold annotator"

    # A new account sees nothing until an admin grants a role.
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.NONE, blank=True)
    # The identity provider's `sub` for an account that signs in there (users.oidc):
    # a sign-in finds its account by it, never by username, so that a person of the
    # provider named like a local account cannot take that account over. Empty (null)
    # for local accounts; an admin sets it to link a local account to the provider.
    oidc_subject = models.CharField(
        "identity provider subject",
        max_length=255,
        unique=True,
        null=True,
        blank=True,
        help_text="The identity provider's 'sub' claim for this person; empty for local accounts.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(role__in=["", "admin", "researcher", "gold_annotator"]),
                name="user_role_valid",
            )
        ]

    @property
    def is_researcher(self) -> bool:
        """Admins and researchers see research data; superusers always do."""
        return self.is_active and (
            self.is_superuser or self.role in (self.Role.ADMIN, self.Role.RESEARCHER)
        )

    @property
    def is_gold_annotator(self) -> bool:
        return self.is_active and self.role == self.Role.GOLD_ANNOTATOR


class Project(models.Model):
    """A research team: it owns its systems, runs, evaluators, studies and
    adaptive studies, and what is reported or exported from them. Benchmarks
    (the corpus) are shared by every project; so are the automatic metrics and
    the evaluators of a published release, whose project is empty."""

    name = models.CharField(max_length=150, unique=True)
    slug = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ProjectRole(models.TextChoices):
    OWNER = "owner", "Owner (manages members)"
    RESEARCHER = "researcher", "Researcher (creates and changes)"
    VIEWER = "viewer", "Viewer (reads)"


class Membership(models.Model):
    """A user's role in one project. Memberships the identity provider grants
    (`source` "oidc") are set again from its claims at every sign-in; those an
    admin grants by hand are never touched by a sign-in."""

    Role = ProjectRole

    class Source(models.TextChoices):
        LOCAL = "local", "Granted in Concord"
        OIDC = "oidc", "From the identity provider's claims"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=ProjectRole.choices)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.LOCAL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_once"),
            models.CheckConstraint(
                condition=models.Q(role__in=["owner", "researcher", "viewer"]),
                name="membership_role_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(source__in=["local", "oidc"]), name="membership_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


DEFAULT_PROJECT_SLUG = "default"
DEFAULT_PROJECT_NAME = "Default project"


def default_project() -> Project:
    """The project that holds what was made before projects existed, and what a
    command makes without `--project`: a single-team install works in it alone."""
    project, _ = Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": DEFAULT_PROJECT_NAME}
    )
    return project


def default_project_id() -> int:
    """The owning foreign key's default (a callable: the row exists when asked for)."""
    return default_project().pk


def owning_project(related_name: str) -> models.ForeignKey:
    """The project that owns a row. PROTECT: a project that holds data is never
    deleted with it."""
    return models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name=related_name, default=default_project_id
    )


def sharing_project(related_name: str) -> models.ForeignKey:
    """The project that owns a row, or none: shared by every project. Owned
    unless made shared on purpose (a metric, a published release's evaluator
    or system): a row made without a project goes to the default project."""
    return models.ForeignKey(
        Project,
        on_delete=models.PROTECT,
        related_name=related_name,
        null=True,
        blank=True,
        default=default_project_id,
        help_text="Empty: shared by every project.",
    )
