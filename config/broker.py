"""The embedded broker (kombu's filesystem transport under DATA_DIR/broker): its folders, and a repair of what kombu
cannot read, in one place for the worker's start, the web's first send and the transport itself.

kombu keeps each exchange's bindings in ``control/<exchange>.exchange`` (JSON) and its messages in ``queue/``. A
full disk at a worker's start can leave ``celery.exchange`` empty; kombu then fails every start and every send with
a JSONDecodeError from ``_queue_bind``. A deleted broker folder makes the worker's poll fail with FileNotFoundError.
``repair`` makes missing folders and removes an exchange file that is empty or not a JSON list (kombu writes it
again at the next bind: the bindings are the worker's own queue, declared at each start and send). ``Transport``,
the filesystem transport that settings name for a filesystem:// broker (CELERY_BROKER_TRANSPORT), repairs and tries
again once where kombu would fail on those, so a running worker makes its folders again rather than die.

No Django import here: settings call ``repair`` while they load.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem

log = logging.getLogger(__name__)

FOLDER_OPTIONS = ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")


def folder_options(broker_dir: Path) -> dict[str, Any]:
    """CELERY_BROKER_TRANSPORT_OPTIONS for a filesystem broker under ``broker_dir``."""
    return {
        "data_folder_in": str(broker_dir / "queue"),
        "data_folder_out": str(broker_dir / "queue"),
        "processed_folder": str(broker_dir / "processed"),
        "control_folder": str(broker_dir / "control"),
        "store_processed": False,
    }


def _unreadable(file: Path) -> str | None:
    """Why kombu could not read the exchange file ``file``; None when it can (or it is gone)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        return f"{type(error).__name__}: {error}"
    if not text.strip():
        return "it is empty"
    try:
        table = json.loads(text)
    except ValueError as error:
        return f"it is not JSON ({error})"
    if not isinstance(table, list) or not all(isinstance(row, list) and len(row) == 3 for row in table):
        return "it is not a list of bindings"
    return None


def repair(options: Mapping[str, Any]) -> list[str]:
    """Make the broker's missing folders and remove its unreadable exchange files; one line per thing done.

    Errors making a folder or removing a file are left to kombu, whose own error then names them.
    """
    done: list[str] = []
    for name in FOLDER_OPTIONS:
        value = options.get(name)
        if not value:
            continue
        folder = Path(value)
        if not folder.is_dir():
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            done.append(f"made the missing broker folder {folder}")
    control = options.get("control_folder")
    if control and Path(control).is_dir():
        for file in sorted(Path(control).glob("*.exchange")):
            why = _unreadable(file)
            if why is None:
                continue
            try:
                file.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            done.append(f"removed the unreadable exchange file {file} ({why}; kombu writes it again)")
    for line in done:
        # A folder made is routine (a new data folder); a file removed is worth an operator's look.
        log.log(logging.WARNING if line.startswith("removed") else logging.INFO, "embedded broker: %s", line)
    return done


def repair_configured() -> list[str]:
    """``repair`` with the settings' broker folders; nothing for a broker that is not filesystem://."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return []
    return repair(getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {})


class Channel(filesystem.Channel):
    """kombu's filesystem channel, repairing the broker (``repair``) and trying once more where kombu would fail on a
    missing folder or an unreadable exchange file."""

    def _repair(self) -> list[str]:
        return repair(self.transport_options)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        try:
            super()._queue_bind(exchange, routing_key, pattern, queue)
        except (ValueError, TypeError, OSError, ChannelError):
            if not self._repair():
                raise
            super()._queue_bind(exchange, routing_key, pattern, queue)

    def get_table(self, exchange: str) -> list[Any]:
        """The exchange's bindings from its file; a file found unreadable (removed by ``repair``) or gone is written
        again from the bindings this process declared, which kombu keeps in memory and would not write again (it
        would send the message to no queue)."""
        try:
            table = super().get_table(exchange)
        except (ValueError, TypeError, ChannelError):
            if not self._repair():
                raise
            table = []
        if table:
            return table
        known = [(key.queue, key.routing_key, arguments) for key, arguments in self.state.bindings.items()
                 if key.exchange == exchange]
        for queue, routing_key, arguments in known:
            self._queue_bind(exchange, *self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments))
        return super().get_table(exchange) if known else table

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        try:
            super()._put(queue, payload, **kwargs)
        except ChannelError:
            if not self._repair():
                raise
            super()._put(queue, payload, **kwargs)

    def _get(self, queue: str) -> Any:
        try:
            return super()._get(queue)
        except FileNotFoundError:
            # The queue folder was removed: made again, it holds no message.
            if not self._repair():
                raise
            raise Empty() from None

    def _size(self, queue: str) -> int:
        try:
            return super()._size(queue)
        except FileNotFoundError:
            if not self._repair():
                raise
            return 0


class Transport(filesystem.Transport):
    """kombu's filesystem transport with ``Channel`` above (settings.CELERY_BROKER_TRANSPORT)."""

    Channel = Channel
