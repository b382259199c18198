"""Judges, judge runs, judgements, audits and claim triplets arrive with their issues."""

from __future__ import annotations
