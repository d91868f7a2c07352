"""`kvreport` command line. One command per module in runner/commands/; this file only wires them."""
from __future__ import annotations

import contextlib
import os
import signal
import sys

from typing import Annotated

import typer

from .core.errors import UserError, is_interrupt

# rich_markup_mode=None: plain Click help, which shows flags as flags (rich help prints "<bool>" beside them).
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Measure what the KV cache really costs, and publish it as a static site.")


def _version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"kvreport {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Measure what the KV cache really costs, and publish it as a static site."""


def _register() -> None:
    from .commands import audit, build, export, findings, merge, migrate, models, run

    for mod in (run, build, export, models, audit, findings, migrate, merge):
        mod.register(app)


def _click_exception_class() -> type:
    """The ClickException class typer raises: typer >= 0.20 vendors Click (typer._click), older typer
    uses Click itself. Found through a public class, so neither private path is hard-coded."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so every `finally` runs (scratch folders removed, transactions rolled back)."""


_terminated = False  # set by SIGTERM: a DuckDB query it cut short surfaces as an interrupt, yet it was a TERM


def _on_sigterm(signum, frame):
    global _terminated
    _terminated = True
    raise Terminated()


def _plain_error(exc: Exception) -> str | None:
    """The environment's faults as one line naming the file and the cause: a full disk, a read-only or
    vanished folder, a file name too long (shortened, not echoed whole). None for anything else."""
    from .core.store import shown

    if isinstance(exc, OSError):
        where = f"{shown(exc.filename)}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb") and \
            type(exc).__name__ in ("IOException", "OutOfMemoryException", "PermissionException", "FatalException"):
        lines = str(exc).strip().splitlines()
        return shown(lines[0] if lines else type(exc).__name__, 400)
    return None


def main(argv: list[str] | None = None) -> None:
    with contextlib.suppress(ValueError):  # not the main thread (an embedding program): leave it be
        signal.signal(signal.SIGTERM, _on_sigterm)
    _register()
    try:
        # Not standalone, so our handlers below see errors; typer then *returns* exit codes (Ctrl-C: 130).
        code = app(args=argv, standalone_mode=False, prog_name="kvreport")
        if isinstance(code, int) and code != 0:
            if code == 130:
                if _terminated:
                    typer.secho("terminated", fg="yellow", err=True)
                    sys.exit(143)
                typer.secho("interrupted", fg="yellow", err=True)
            sys.exit(code)
    except UserError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        if _terminated:
            typer.secho("terminated", fg="yellow", err=True)
            sys.exit(143)
        typer.secho("interrupted", fg="yellow", err=True)
        sys.exit(130)
    except Terminated:
        typer.secho("terminated", fg="yellow", err=True)
        sys.exit(143)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - click usage errors and anything unforeseen
        if isinstance(exc, _click_exception_class()):
            exc.show()  # usage errors: Click's usage line and message, exit 2
            sys.exit(exc.exit_code)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        if os.environ.get("KVREPORT_DEBUG"):
            raise
        if is_interrupt(exc):  # DuckDB's Ctrl-C (or a SIGTERM that cut its query short)
            typer.secho("terminated" if _terminated else "interrupted", fg="yellow", err=True)
            sys.exit(143 if _terminated else 130)
        plain = _plain_error(exc)
        if plain:
            typer.secho(f"error: {plain}", fg="red", err=True)
            sys.exit(1)
        typer.secho(f"internal error: {type(exc).__name__}: {exc} (set KVREPORT_DEBUG=1 for a traceback)",
                    fg="red", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
