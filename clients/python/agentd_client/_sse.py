"""A decoder of server-sent events (the WHATWG "event stream interpretation"), fed line by line."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEMessage"]


@dataclass(frozen=True)
class SSEMessage:
    """One dispatched message.

    Attributes:
        event: the ``event:`` field (``"message"`` when absent).
        data: the ``data:`` lines joined with line feeds.
        id: the ``id:`` field of this message, ``None`` when it had none.
    """

    event: str
    data: str
    id: str | None


class SSEDecoder:
    """Turns the lines of an event stream (without their line endings) into messages.

    Besides the messages, it keeps what the specification calls the last event ID string
    (:attr:`last_event_id`: the last ``id:`` field of a *complete* message, kept across messages
    without one, so a message cut by a dropped connection does not count) and the reconnection
    time the server last asked for (:attr:`retry_ms`). Comments (``:`` lines) are skipped.
    """

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self._id_buffer: str | None = None
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._first_line = True

    def feed(self, line: str) -> SSEMessage | None:
        """Take one line; answer the message it completes (a blank line ends one), if any."""
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._id = value
                self._id_buffer = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry_ms = int(value)
        return None

    def _dispatch(self) -> SSEMessage | None:
        if self._id_buffer is not None:
            self.last_event_id = self._id_buffer
        event, data, id_ = self._event, self._data, self._id
        self._event, self._data, self._id = "", [], None
        if not data:
            return None
        return SSEMessage(event=event or "message", data="\n".join(data), id=id_)
