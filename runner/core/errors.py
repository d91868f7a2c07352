"""Errors a user can fix. The CLI prints their message (which names the file, line or option at fault)
and exits non-zero, never with a traceback."""


class UserError(Exception):
    exit_code = 2


class ModelError(UserError):
    """A model name or path that cannot be loaded; the message says why and what would work."""


def describe_exception(exc: BaseException) -> str:
    """`Type: first line of the message`: how a failure is recorded as a reason (a skip, a failed run)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def is_interrupt(exc: BaseException) -> bool:
    """DuckDB's Ctrl-C: an InterruptException, or from some of its calls a plain error 'Query interrupted'.
    Either is the user's interrupt (exit 130), never bad input."""
    return type(exc).__name__ == "InterruptException" or str(exc).strip() == "Query interrupted"


class StoreError(UserError):
    """A DB file that cannot be used; the message names the file and the problem."""


def shown(path, limit: int = 160) -> str:
    """A path as it appears in a message: whole unless absurdly long (a 100 kB argument is not echoed)."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]} ({len(text):,} characters)"
