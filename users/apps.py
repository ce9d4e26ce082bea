from django.apps import AppConfig


class UsersConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "users"
    verbose_name = "Users, roles and projects"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from users.models import User
        from users.projects import join_the_only_project

        post_save.connect(
            join_the_only_project, sender=User, dispatch_uid="users.join_the_only_project"
        )
