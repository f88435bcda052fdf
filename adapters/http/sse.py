"""Read a `text/event-stream` body into a list of events (WHATWG server-sent events)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Event:
    event: str
    data: str
    id: str | None = None

    def parsed(self) -> Any:
        """The data as JSON when it is JSON, else the text."""
        try:
            return json.loads(self.data)
        except ValueError:
            return self.data


async def read_events(lines: AsyncIterator[str], done: str | None = "[DONE]") -> list[Event]:
    """Collect events until the stream ends or an event's data equals `done`."""
    events: list[Event] = []
    data: list[str] = []
    name = ""
    last_id: str | None = None
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                event = Event(event=name or "message", data="\n".join(data), id=last_id)
                if done is not None and event.data.strip() == done:
                    return events
                events.append(event)
            data, name = [], ""
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id":
            last_id = value
    if data:
        event = Event(event=name or "message", data="\n".join(data), id=last_id)
        if done is None or event.data.strip() != done:
            events.append(event)
    return events


def as_document(events: list[Event], *, wrap: bool) -> list[Any]:
    """The JSON array the response mapping reads."""
    if wrap:
        return [{"event": e.event, "data": e.parsed(), "id": e.id} for e in events]
    return [e.parsed() for e in events]
