"""Placeholder: the runs pages arrive with their helper."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
