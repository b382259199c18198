#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.env import setting_errors_as_one_line

    with setting_errors_as_one_line():
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
