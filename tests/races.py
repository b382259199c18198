"""Two writers at the same moment, each on its own database connection: the scaffold of the lost-update tests.

Each test slows the step between a writer's check and its write (``slowed``), so without the lock under test both
writers would pass the check; ``race`` starts the attempts together and sorts what each one did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connections


@dataclass
class Race:
    """What the attempts did: returned (``done``), were refused with the expected error, or failed otherwise."""

    done: list[Any] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def slowed(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, seconds: float = 0.3) -> None:
    """``owner.name`` waits ``seconds`` before doing its work, to hold a writer between its check and its write."""
    original = getattr(owner, name)

    def slowly(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, slowly)


def race(attempts: list[Callable[[], Any]], refusal: type[Exception], timeout: float = 60) -> Race:
    """Run the attempts at once, one thread and connection each; an error other than ``refusal`` is recorded."""
    outcome = Race()
    start_line = threading.Barrier(len(attempts))

    def run(attempt: Callable[[], Any]) -> None:
        try:
            start_line.wait(timeout=30)
            outcome.done.append(attempt())
        except refusal as refused:
            outcome.refused.append(str(refused))
        except Exception as error:  # noqa: BLE001  (reported by the test)
            outcome.errors.append(f"{type(error).__name__}: {error}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(attempt,)) for attempt in attempts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in threads), "an attempt hung (a lock never released?)"
    assert not outcome.errors, "\n".join(outcome.errors)
    return outcome
