"""`kvreport` command line. One command per module in runner/commands/; this file only wires them."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Annotated

import typer

from .core.errors import UserError, is_interrupt
from .core.errors import shown

# The modules of runner/commands/, in the order the root help lists them. A command line that names one
# imports only that module (its library is imported when it runs): `kvreport audit --help` loads no model
# facts, engine or replay code. The root help, or a name nobody knows, builds the app of all of them.
COMMANDS = ("run", "build", "export", "models", "audit", "replay", "findings", "migrate", "merge")


def _version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"kvreport {__version__}")
        raise typer.Exit()


def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Measure what the KV cache really costs, and publish it as a static site."""


_apps: dict[str | None, typer.Typer] = {}


def app_for(argv: list[str]) -> typer.Typer:
    """The app for this command line: the one command it names, or all of them. Built once per name and kept
    (main() may run many times in one process: tests, a program embedding kvreport)."""
    # The root's only options (--help, --version) take no value, so the first word without a dash is the command.
    name = next((a for a in argv if not a.startswith("-")), None)
    key = name if name in COMMANDS else None
    if key not in _apps:
        # rich_markup_mode=None: plain Click help, which shows flags as flags (rich help prints "<bool>" beside them).
        app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                          rich_markup_mode=None,
                          help="Measure what the KV cache really costs, and publish it as a static site.")
        app.callback()(_root)
        # Importing commands/run.py does not import torch: it imports the measuring code only when a run starts.
        for command in (key,) if key else COMMANDS:
            # __import__, not importlib.import_module: the import statement's own path, which `-X importtime`
            # (and tests/test_layers.py, which reads it) sees.
            __import__(f"{__package__}.commands.{command}", fromlist=["register"]).register(app)
        _apps[key] = app
    return _apps[key]


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # every command: for documentation and tests that list them
        return app_for([])
    raise AttributeError(name)


def _click_exception_class() -> type:
    """The ClickException class typer raises: typer >= 0.20 vendors Click (typer._click), older typer
    uses Click itself. Found through a public class, so neither private path is hard-coded."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every `finally` runs (scratch folders removed, transactions rolled back)
    and `kvreport run` marks its run interrupted; main() then exits 143 rather than Ctrl-C's 130."""


@contextlib.contextmanager
def _sigterm_raises_terminated():
    """SIGTERM raises Terminated while one command runs, and the handler that was there before is restored
    after it: a program or a test runner calling main() keeps its own SIGTERM. Yields the list of signals
    received, because a DuckDB query that SIGTERM cut short surfaces as a plain interrupt, yet it was a TERM."""
    received: list[int] = []

    def on_sigterm(signum, frame):
        received.append(signum)
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_sigterm)  # SIG_DFL, SIG_IGN, a function, or None (set in C)
    except ValueError:  # not the main thread (an embedding program): leave its signals be
        yield received
        return
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _plain_error(exc: Exception) -> str | None:
    """The environment's faults as one line naming the file and the cause: a full disk, a read-only or
    vanished folder, a file name too long (shortened, not echoed whole). None for anything else."""
    if isinstance(exc, OSError):
        where = f"{shown(exc.filename)}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb") and \
            type(exc).__name__ in ("IOException", "OutOfMemoryException", "PermissionException", "FatalException"):
        lines = str(exc).strip().splitlines()
        return shown(lines[0] if lines else type(exc).__name__, 400)
    return None


def _stopped(terminated: bool) -> None:
    """Exit as a stopped command does: 143 after SIGTERM, 130 after Ctrl-C, with one word saying which."""
    typer.secho("terminated" if terminated else "interrupted", fg="yellow", err=True)
    sys.exit(143 if terminated else 130)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    with _sigterm_raises_terminated() as sigterms:
        try:
            # Not standalone, so our handlers below see errors; typer then *returns* exit codes (Ctrl-C: 130).
            code = app_for(args)(args=args, standalone_mode=False, prog_name="kvreport")
            if isinstance(code, int) and code != 0:
                if code == 130:
                    _stopped(bool(sigterms))
                sys.exit(code)
        except UserError as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C, or Terminated from SIGTERM
            _stopped(bool(sigterms))
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
                _stopped(bool(sigterms))
            plain = _plain_error(exc)
            if plain:
                typer.secho(f"error: {plain}", fg="red", err=True)
                sys.exit(1)
            typer.secho(f"internal error: {type(exc).__name__}: {exc} (set KVREPORT_DEBUG=1 for a traceback)",
                        fg="red", err=True)
            sys.exit(1)


if __name__ == "__main__":
    main()
