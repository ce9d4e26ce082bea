from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from users.oidc.discovery import DiscoveryError, discover


class Command(BaseCommand):
    help = (
        "Print the OIDC_OP_* environment lines of an identity provider, read from its "
        "discovery document (ISSUER/.well-known/openid-configuration)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "issuer", help="the provider's issuer URL, e.g. https://sso.example.org/realms/lab"
        )

    def handle(self, *args: Any, issuer: str, **options: Any) -> None:
        try:
            settings = discover(issuer)
        except DiscoveryError as error:
            raise CommandError(str(error)) from error
        for name, value in settings.items():
            self.stdout.write(f"{name}={value}")
