"""What the library tells its caller on the way (`audit(..., on_event=)`, `run(..., on_event=)`): one small
value type, `Event`, whose `kind` says which of its fields mean something. The CLI prints them and draws the
progress bar (runner/commands/output.py); a program that does not care passes no `on_event`."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable


class Kind(Enum):
    NOTE = "note"            # `text`: a line the user should read
    DETAIL = "detail"        # `text`: a line only a verbose caller wants
    STEP = "step"            # step `done` of `total` begins: `name` (an experiment)
    STEP_LINE = "step_line"  # `text`: a line from inside the step now running (a sweep point)
    STEP_END = "step_end"    # step `name` ended: `status` (ok, skipped, failed), `text` the reason, `seconds`
    FILE = "file"            # file `done` of `total`, `name`: begins (`count` None) or was read (`count` lines)
    PERCENT = "percent"      # `percent` of the statement now running is done (a long file is one statement)
    PHASE = "phase"          # a Ray audit's phase `name`: `done` of `total` tasks, `count` calls, `seconds`


@dataclass(frozen=True)
class Event:
    kind: Kind
    text: str = ""
    name: str = ""
    done: int = 0
    total: int = 0
    count: int | None = None
    seconds: float | None = None
    percent: float = -1.0
    status: str = ""


OnEvent = Callable[[Event], None]


def ignore(_event: Event) -> None:
    """The `on_event` of a caller that wants nothing told."""
