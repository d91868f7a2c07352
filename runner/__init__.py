"""kvreport's runner. Its packages are the layers: core/ (torch-free: errors, the store and its schema, merge,
model facts), audit/ (token audits, on the core), measure/ (torch: models, probes, experiments; used only by
`kvreport run`), and the CLI (cli.py, commands/) composing them with ../analysis."""


def __getattr__(name: str) -> str:
    # Looked up when asked for: importlib.metadata costs a command's start-up more than typer's whole help.
    if name != "__version__":
        raise AttributeError(name)
    from importlib import metadata

    try:
        return metadata.version("kvreport")  # one source of truth: pyproject.toml
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"
