"""Errors a user can fix. The CLI prints their message (which names the file, line or option at fault)
and exits non-zero, never with a traceback."""


class UserError(Exception):
    exit_code = 2


def describe_exception(exc: BaseException) -> str:
    """`Type: first line of the message`: how a failure is recorded as a reason (a skip, a failed run)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
