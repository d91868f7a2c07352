"""Analysis: named SQL queries that derive findings, Plotly chart builders, and the site renderer."""
