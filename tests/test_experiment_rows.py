"""Every experiment's rows against its tables' columns in the schema, GPU-only branches included.

The GPU-only branches never run in CI, so the row keys are read from the code, not from a run: for each
`Result({table: rows, ...})` an experiment returns, the dict literals that can become rows of `table` are
followed through the experiment's own code (names appended, extended, updated or assigned; the functions
it calls, in its module or elsewhere in runner/measure; `**spread` dicts) and every string key found is
checked against the table's columns, from the schema steps applied to an in-memory DuckDB.

Where the code hands rows through something the reader cannot follow (a child process's JSON, a
dataclass attribute), OPAQUE names where the keys are written instead, and a spread the reader cannot
resolve at all fails the test until it is resolved or named here.
"""
import ast
from pathlib import Path

import pytest

from kvreport.runner.core.connections import connect
from kvreport.runner.core.migrations import apply_steps, table_columns
from kvreport.runner.measure import probes, timing
from kvreport.runner.measure.experiments import registry

MEASURE = Path(__file__).resolve().parent.parent / "runner" / "measure"

# Keys built by code the reader cannot follow (f-string keys), computed here by calling that code.
_T = timing.summarize_calls([1.0, 2.0], [1.0, 2.0], [True, False])
METHOD_KEYS = {"columns": set(_T.columns()), "host_columns": set(_T.host_columns()),
               "stats": set(probes.ALLOCATOR_STATS)}  # CudaAllocator.stats
# (experiment, source text of an expression the reader cannot follow) -> (module under runner/measure,
# function, name): the rows or dict that expression stands for are those `name` holds in `function`.
# (experiment, source text of an expression the reader cannot follow) -> (module under runner/measure,
# function, name or None for what the function returns): the rows (or the row) that expression stands for.
OPAQUE = {
    ("pressure", "adm.rows"): ("experiments/pressure.py", "admit", "rows"),  # Admission.rows
    # one row per allocator phase: each phase's counters, as the child process reports them
    ("fragmentation", "p"): ("frag_child.py", "stats", "row"),
    # every roof point of the run (ctx.shared['roof_curve']) is a roof_row, measured or recorded
    ("*", "list(fresh.values())"): ("ceilings.py", "roof_row", None),
}
# Experiments whose rows are read back from the tables themselves, so their keys are columns by construction.
BY_CONSTRUCTION = {"audit_demo": "the audit writes its tables in an in-memory DB and fetch() reads them back"}


@pytest.fixture(scope="module")
def schema_columns() -> dict[str, set[str]]:
    con = connect()
    apply_steps(con, 0)
    return {t: set(cols) for t, cols in table_columns(con).items()}


class Reader:
    """Row keys of expressions in one module: `rows_of` for a list (or dict) of rows, `keys_of` for one row."""

    def __init__(self, experiment: str, path: Path, source: str | None = None):
        self.experiment = experiment
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
        self.functions = {n.name: n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.imported = {}  # name -> module file it comes from (within runner/measure)
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.level and node.module:
                target = (path.parent / ("../" * (node.level - 1)) / node.module.replace(".", "/")).resolve()
                for a in node.names:
                    self.imported[a.asname or a.name] = target.with_suffix(".py")
        self.unresolved: list[str] = []
        self._seen: set = set()

    # --- scopes ---------------------------------------------------------------------------------------
    def _scope_of(self, node) -> ast.AST:
        for fn in self.functions.values():
            if fn.lineno <= node.lineno <= fn.end_lineno and any(n is node for n in ast.walk(fn)):
                inner = [f for f in ast.walk(fn) if isinstance(f, ast.FunctionDef) and f is not fn
                         and any(n is node for n in ast.walk(f))]
                return inner[-1] if inner else fn
        return self.tree

    def _uses(self, name: str, scope) -> list[tuple[str, ast.AST]]:
        """('assign' | 'append' | 'extend' | 'update' | 'item' | 'key', value) for every write to `name`."""
        out = []
        for n in ast.walk(scope):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                for target in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    if isinstance(target, ast.Name) and target.id == name:
                        out.append(("assign", n.value))
                    elif isinstance(target, ast.Tuple):
                        for i, el in enumerate(target.elts):
                            if isinstance(el, ast.Name) and el.id == name:
                                out.append(("assign", n.value.elts[i] if isinstance(n.value, ast.Tuple)
                                            else ast.copy_location(ast.Subscript(n.value, ast.Constant(i)), n)))
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                            and target.value.id == name:
                        key = target.slice
                        out.append(("key", key.value) if isinstance(key, ast.Constant) and isinstance(key.value, str)
                                   else ("item", n.value))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
                out.append(("extend", n.value))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == name:
                kind = {"append": "append", "extend": "extend", "update": "update"}.get(n.func.attr)
                if kind and n.args:
                    out.append((kind, n.args[0]))
                if kind == "update":
                    out += [("key", k.arg) for k in n.keywords if k.arg]
            elif isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id == name \
                    and isinstance(n.target, ast.Name):
                # `for r in rows: r["x"] = ...` writes into the rows
                loop = ast.Module(n.body, [])
                out += [("row" + kind, value) for kind, value in self._uses(n.target.id, loop)
                        if kind in ("key", "update")]
        if not out and scope is not self.tree:
            out = [("assign", arg) for arg in self._arguments(name, scope)]
        if not out and isinstance(scope, ast.FunctionDef):  # a module-level name
            module = ast.Module([n for n in self.tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))], [])
            return self._uses(name, module)
        return out

    # --- resolution -----------------------------------------------------------------------------------
    def _function(self, call: ast.Call):
        """(Reader, FunctionDef) a call goes to, or None."""
        f = call.func
        name = f.id if isinstance(f, ast.Name) else None
        if name in self.functions:
            return self, self.functions[name]
        if name in self.imported and self.imported[name].exists():
            other = Reader(self.experiment, self.imported[name])
            other.unresolved = self.unresolved
            if name in other.functions:
                return other, other.functions[name]
        return None

    def _returns(self, fn) -> list[ast.AST]:
        """The values `fn` itself returns (not those of functions nested in it)."""
        out, todo = [], list(fn.body)
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Return) and n.value is not None:
                out.append(n.value)
            elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.extend(ast.iter_child_nodes(n))
        return out

    def _element(self, node) -> list[ast.AST] | None:
        """For `f(...)[i]` where f returns tuples: the i-th element of each; None for anything else."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int) and isinstance(node.value, ast.Call)):
            return None
        target = self._function(node.value)
        if not target:
            return None
        reader, fn = target
        returns = reader._returns(fn)
        if not returns or not all(isinstance(r, ast.Tuple) for r in returns):
            return None
        return [(reader, r.elts[node.slice.value]) for r in returns]

    def _opaque(self, node, rows: bool) -> set[str] | None:
        text = ast.unparse(node)
        hint = OPAQUE.get((self.experiment, text)) or OPAQUE.get(("*", text))
        if hint is None:
            return None
        module, function, name = hint
        other = Reader(self.experiment, MEASURE / module)
        other.unresolved = self.unresolved
        fn = other.functions[function]
        if name is None:
            return set().union(set(), *(other.keys_of(r) for r in self._returns(fn)))
        return other._name(name, fn, rows=rows)

    def _arguments(self, name: str, scope) -> list[ast.AST]:
        """What the calls in this module pass for parameter `name` of function `scope`."""
        if not isinstance(scope, ast.FunctionDef):
            return []
        params = [a.arg for a in scope.args.args]
        if name not in params:
            return []
        out = []
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == scope.name:
                pos = params.index(name)
                out += [k.value for k in n.keywords if k.arg == name]
                if pos < len(n.args):
                    out.append(n.args[pos])
        return out

    def _name(self, name: str, scope, rows: bool) -> set[str]:
        keys = set()
        uses = self._uses(name, scope)
        if not uses:  # a loop variable, a parameter: nothing here says what it holds
            self.unresolved.append(f"{self.path.name}: `{name}` (never assigned)")
        for kind, value in uses:
            if kind == "key" or kind == "rowkey" and rows:
                keys.add(value)
            elif kind == "rowupdate" and rows:
                keys |= self.keys_of(value)
            elif kind in ("append", "item") and rows or kind == "update" and not rows:
                keys |= self.keys_of(value)
            elif kind in ("assign", "extend"):
                keys |= self.rows_of(value) if rows else self.keys_of(value)
        return keys

    def rows_of(self, node) -> set[str]:
        """Keys of the rows in a list (or the values of a dict) of rows."""
        if (id(node), "rows") in self._seen:
            return set()
        self._seen.add((id(node), "rows"))
        if isinstance(node, (ast.List, ast.Tuple)):
            return set().union(*(self.keys_of(e) for e in node.elts)) if node.elts else set()
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.keys_of(node.elt)
        if isinstance(node, ast.Dict):
            return set().union(*(self.keys_of(v) for v in node.values)) if node.values else set()
        if isinstance(node, ast.DictComp):
            return self.keys_of(node.value)
        if isinstance(node, ast.Name):
            return self._opaque(node, rows=True) or self._name(node.id, self._scope_of(node), rows=True)
        if isinstance(node, ast.Call):
            target = self._function(node)
            if target:
                reader, fn = target
                return set().union(set(), *(reader.rows_of(r) for r in self._returns(fn)))
        if self._element(node) is not None:
            return set().union(set(), *(reader.rows_of(e) for reader, e in self._element(node)))
        if isinstance(node, ast.BinOp):
            return self.rows_of(node.left) | self.rows_of(node.right)
        if isinstance(node, ast.IfExp):
            return self.rows_of(node.body) | self.rows_of(node.orelse)
        opaque = self._opaque(node, rows=True)
        if opaque is not None:
            return opaque
        self.unresolved.append(f"{self.path.name}:{node.lineno}: rows of `{ast.unparse(node)}`")
        return set()

    def keys_of(self, node) -> set[str]:
        """Keys of one row (a dict)."""
        if (id(node), "keys") in self._seen:
            return set()
        self._seen.add((id(node), "keys"))
        if isinstance(node, ast.Dict):
            keys = set()
            for k, v in zip(node.keys, node.values):
                if k is None:
                    keys |= self.keys_of(v)
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    keys.add(k.value)
                else:
                    self.unresolved.append(f"{self.path.name}:{k.lineno}: key `{ast.unparse(k)}`")
            return keys
        if isinstance(node, ast.Constant) and node.value is None:
            return set()
        if isinstance(node, (ast.IfExp,)):
            return self.keys_of(node.body) | self.keys_of(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.keys_of(v) for v in node.values))
        if isinstance(node, ast.Name):
            return self._opaque(node, rows=False) or self._name(node.id, self._scope_of(node), rows=False)
        if self._element(node) is not None:
            return set().union(set(), *(reader.keys_of(e) for reader, e in self._element(node)))
        if isinstance(node, ast.Subscript):
            return self.rows_of(node.value)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in METHOD_KEYS:
                return METHOD_KEYS[node.func.attr]
            if isinstance(node.func, ast.Name) and node.func.id == "dict":
                return {k.arg for k in node.keywords if k.arg} | set().union(set(), *(self.keys_of(a) for a in node.args))
            target = self._function(node)
            if target:
                reader, fn = target
                return set().union(set(), *(reader.keys_of(r) for r in self._returns(fn)))
        opaque = self._opaque(node, rows=False)
        if opaque is not None:
            return opaque
        self.unresolved.append(f"{self.path.name}:{node.lineno}: row `{ast.unparse(node)}`")
        return set()


def row_keys(experiment, source: str | None = None) -> tuple[dict[str, set[str]], list[str]]:
    """{table: every key a row of it can carry} of one experiment (of `source` in its place, when given),
    and what could not be followed."""
    path = Path(experiment.module.__file__)
    reader = Reader(experiment.name, path, source)
    out: dict[str, set[str]] = {}
    for node in ast.walk(reader.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Result" and node.args:
            tables = node.args[0]
            assert isinstance(tables, ast.Dict), f"{path.name}:{node.lineno}: Result's tables are not a dict literal"
            for k, v in zip(tables.keys, tables.values):
                out.setdefault(k.value, set()).update(reader.rows_of(v))
    return out, reader.unresolved


EXPERIMENTS = [e for e in registry() if e.name not in BY_CONSTRUCTION]


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=[e.name for e in EXPERIMENTS])
def test_every_row_key_is_a_column_of_its_table(experiment, schema_columns):
    keys, unresolved = row_keys(experiment)
    assert not unresolved, f"{experiment.name}: rows the check cannot follow (resolve them or name them in OPAQUE): {unresolved}"
    assert set(keys) == set(experiment.tables), f"{experiment.name}: tables returned {sorted(keys)}, declared {experiment.tables}"
    for table, found in keys.items():
        assert found, f"{experiment.name}: found no row key for {table}"
        unknown = sorted(found - schema_columns[table])
        assert not unknown, f"{experiment.name} writes {unknown} into {table}, which has no such column"


def test_the_reader_sees_keys_in_gpu_only_branches():
    """Guard of the guard: fragmentation runs on CUDA only; its rows carry the child's phase counters."""
    frag = next(e for e in EXPERIMENTS if e.name == "fragmentation")
    keys, _ = row_keys(frag)
    assert {"allocator", "phase", "reserved_bytes", "n_requests"} <= keys["fragmentation"]


def test_a_bogus_key_in_a_gpu_only_row_is_reported(schema_columns):
    """Guard of the guard: a key no table has, added to the CUDA-only fragmentation row, is caught."""
    frag = next(e for e in EXPERIMENTS if e.name == "fragmentation")
    source = Path(frag.module.__file__).read_text(encoding="utf-8")
    line = 'rows.append({"allocator": allocator, **p,'
    assert source.count(line) == 1
    keys, unresolved = row_keys(frag, source.replace(line, 'rows.append({"allocator": allocator, "bogus": 1, **p,'))
    assert not unresolved and sorted(keys["fragmentation"] - schema_columns["fragmentation"]) == ["bogus"]


def test_the_experiment_names_are_known_without_importing_them():
    """`--only` is checked from the experiment package's file names (importing the modules imports torch):
    so each experiment's NAME is its module's name, and each names one of the groups."""
    from kvreport.runner.core.groups import GROUPS
    from kvreport.runner.measure.api import experiment_names

    assert experiment_names() == sorted(e.name for e in registry())
    assert {e.group for e in registry()} == set(GROUPS)
