"""Celery tasks of the judging app: thin, take a primary key, call one service, acks late (a killed worker's
task is delivered again and the service goes on where it stopped)."""

from __future__ import annotations

from celery import shared_task
