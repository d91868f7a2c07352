"""`kvreport` command line. One command per module in runner/commands/; this file only wires them."""
from __future__ import annotations

import os
import sys

import typer

from .errors import UserError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure what the KV cache really costs, and publish it as a static site.")


def _register() -> None:
    from .commands import audit, build, export, findings, models, run

    for mod in (run, build, export, models, audit, findings):
        mod.register(app)


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    _register()
    try:
        # Not standalone, so our handlers below see errors; typer then *returns* exit codes (Ctrl-C: 130).
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code != 0:
            if code == 130:
                typer.secho("interrupted", fg="yellow", err=True)
            sys.exit(code)
    except UserError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.secho("interrupted", fg="yellow", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - click usage errors and anything unforeseen
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(1)
        if os.environ.get("KVREPORT_DEBUG"):
            raise
        typer.secho(f"internal error: {type(exc).__name__}: {exc} (set KVREPORT_DEBUG=1 for a traceback)",
                    fg="red", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
