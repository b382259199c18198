"""Ctrl-C in `judge` and `triage`: moved to annotate.services.interrupt, which annotate's commands share; these are
the same functions and the same flag (execute.stop_if_interrupted cancels a run with them)."""

from __future__ import annotations

from annotate.services.interrupt import EXIT_INTERRUPTED, cancel_on_ctrl_c, command_name, requested, stop_at_once

__all__ = ["EXIT_INTERRUPTED", "cancel_on_ctrl_c", "command_name", "requested", "stop_at_once"]
