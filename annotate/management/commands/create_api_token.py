"""Make a named API token for a user and print its key (the key is stored nowhere, only its digest)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.services import tokens


class Command(BaseCommand):
    help = "Create a named API token for USERNAME and print its key once (as on /account/tokens/)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="what the token is for (default: command line)")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"username: no user called {options['username']!r}")
        try:
            _, key = tokens.create_api_token(user, options["name"])
        except tokens.TokenError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(key)
