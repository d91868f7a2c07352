"""The site's number formats: one policy, written in Python (analysis/site/formats.py, for tables and axes)
and in SQL (analysis/queries/_macros.sql, for the sentences of headlines), so both must print every figure
the same way."""
from __future__ import annotations

import duckdb
import pytest

from kvreport.analysis.queries import Queries
from kvreport.analysis.site.formats import fmt_bytes
from kvreport.runner.core.migrations import apply_steps

# Each unit's edges (1023 B / 1 KiB; 1,050,000,000 B lies between 1000^3 and 1024^3), the digit boundaries inside a unit (9.99 / 10 / 99.9 / 100), whole
# numbers of a unit (2 MiB prints no decimals), negatives, and a few real figures of the reference runs
# (2,113,929,216 B compacted, a 0.9 GiB ceiling, 36,864 B per token).
BYTES = [0, 1, 912, 1023, 1024, 1025, 1536, 10 * 1024 - 1, 10 * 1024, 36_864, 99.94 * 1024, 100 * 1024,
         1_032_192, 1_040_000, 1024 ** 2 - 1, 1024 ** 2, 2 * 1024 ** 2, 1.5 * 1024 ** 2, 150_994_944, 966_367_641,
         1_050_000_000, 2_113_929_216, 1024 ** 3, 12.34 * 1024 ** 3, 1_100_000_000_000, 1024 ** 4 - 1, 1024 ** 4, 3.5 * 1024 ** 5, -1536, -2_113_929_216]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    apply_steps(c, 0)  # the tables some macros read
    Queries(c)  # creates the macros on the connection
    yield c
    c.close()


@pytest.mark.parametrize("value", BYTES)
def test_sql_bytes3_prints_bytes_as_the_tables_do(con, value):
    assert con.execute("SELECT bytes3(?::DOUBLE)", [value]).fetchone()[0] == fmt_bytes(value)


def test_sql_bytes3_takes_integers_and_null(con):
    assert con.execute("SELECT bytes3(2113929216::BIGINT), bytes3(NULL)").fetchone() == (fmt_bytes(2113929216), "–")
