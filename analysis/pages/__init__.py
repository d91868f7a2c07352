"""One module per site page: PAGE (a PageSpec) and context(q, site) -> dict for templates/<slug>.html."""
