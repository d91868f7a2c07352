"""Errors a user can fix. The CLI prints their message (which names the file, line or option at fault)
and exits non-zero, never with a traceback."""


class UserError(Exception):
    exit_code = 2


def describe_exception(exc: BaseException) -> str:
    """`Type: first line of the message`: how a failure is recorded as a reason (a skip, a failed run)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def is_interrupt(exc: BaseException) -> bool:
    """DuckDB's Ctrl-C: an InterruptException, or from some of its calls a plain error 'Query interrupted'.
    Either is the user's interrupt (exit 130), never bad input."""
    return type(exc).__name__ == "InterruptException" or str(exc).strip() == "Query interrupted"
