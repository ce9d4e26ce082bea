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
