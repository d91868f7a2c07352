"""Errors a user can fix. The CLI prints their message (which names the file, line or option at fault)
and exits non-zero, never with a traceback."""


class UserError(Exception):
    exit_code = 2
