"""Read a `text/event-stream` body into a list of events (WHATWG server-sent events)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from tau_adapters import jsonsafe


@dataclass
class Event:
    event: str
    data: str
    id: str | None = None

    def parsed(self) -> Any:
        """The data as JSON when it is JSON, else the text."""
        try:
            return jsonsafe.loads(self.data)
        except jsonsafe.JSONDepthError:
            raise
        except ValueError:
            return self.data


_LINE_END = re.compile(r"\r\n|\r|\n")


class LineSplitter:
    """Splits text arriving in pieces into lines at CRLF, LF or CR (the event-stream line
    ends; a CRLF cut between two pieces is one line end). The unfinished line is held
    until its end arrives: the caller bounds the bytes it feeds."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._after_cr = False

    def feed(self, text: str, *, final: bool = False) -> list[str]:
        """The lines `text` completes (without their line ends); with `final`, also the
        last, unterminated one."""
        lines: list[str] = []
        if text:
            if self._after_cr and text.startswith("\n"):
                text = text[1:]  # the LF of a CRLF whose CR ended the previous piece
            self._after_cr = False
        if text:
            pieces = _LINE_END.split(text)
            if len(pieces) > 1:
                lines.append("".join([*self._parts, pieces[0]]))
                lines += pieces[1:-1]
                self._parts = []
                self._after_cr = text.endswith("\r")
            if pieces[-1]:
                self._parts.append(pieces[-1])
        if final and self._parts:
            lines.append("".join(self._parts))
            self._parts = []
        return lines


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


def as_document(
    events: list[Event], *, wrap: bool, group_by: str | None = None, text: str = "delta"
) -> list[Any]:
    """The JSON array the response mapping reads (deltas grouped first, see `group`)."""
    items = [e.parsed() for e in events]
    keep = group(items, group_by, text) if group_by else list(range(len(items)))
    if wrap:
        return [{"event": events[i].event, "data": items[i], "id": events[i].id} for i in keep]
    return [items[i] for i in keep]


def group(items: list[Any], key: str, text: str) -> list[int]:
    """Merge text deltas in place: among objects with the same `key` value and a string
    `text` field, the first gets every later one's text appended; the later ones are
    dropped. Returns the indexes kept, in stream order."""
    first: dict[str, int] = {}
    keep: list[int] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get(text), str) and key in item:
            ident = json.dumps(item[key], sort_keys=True, default=str)
            if ident in first:
                head = items[first[ident]]
                head[text] = head[text] + item[text]
                continue
            first[ident] = i
        keep.append(i)
    return keep
