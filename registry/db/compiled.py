"""Statements compiled by SQLAlchemy once per dialect, bound and read without its execution.

`compile_statement` compiles a Core statement for a dialect once per set of columns (an
insert's or an update's columns are its parameters' keys, as in `Connection.execute`) and
keeps what binding and reading need: the SQL, the parameters in order with each type's
bind processor, the expanding parameters' empty-set rendering, and each result column's
result processor (`direct.run` executes it on the driver). Values are looked up as
`construct_params` looks them up, resolved once per statement where that is all it does
(`_sources`).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase, ValuesBase

Params = Mapping[str, Any]
_Processor = Callable[[Any], Any] | None
# A bound parameter's key, its compiled name, and its own value or `_REQUIRED`.
_Source = tuple[str, str, Any]
_REQUIRED: Final = object()


@dataclass(frozen=True, slots=True)
class Compiled:
    """One statement compiled for one dialect, with what binding and reading it needs."""

    compiled: SQLCompiler
    sql: str
    positional: bool
    names: tuple[str, ...]
    # Where each of `names` takes its value from (`_sources`), or None: `construct_params`.
    sources: tuple[_Source, ...] | None
    binders: tuple[_Processor, ...]
    # An expanding parameter's name -> what its placeholder becomes for an empty list.
    expanding: Mapping[str, str]
    readers: tuple[_Processor, ...]
    row: Callable[..., Any] | None

    def bind(self, params: Params) -> tuple[str, Any]:
        """The SQL and its values."""
        values = self.values(params)
        if not self.positional:
            return self._bind_named(values)
        if not self.expanding:
            return self.sql, tuple(
                [
                    value if binder is None else binder(value)
                    for binder, value in zip(self.binders, values, strict=True)
                ]
            )
        sql, flat = self.sql, []
        for name, binder, value in zip(self.names, self.binders, values, strict=True):
            if name not in self.expanding:
                flat.append(value if binder is None else binder(value))
                continue
            placeholders = ", ".join("?" * len(value)) if value else self.expanding[name]
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", placeholders, 1)
            flat.extend(v if binder is None else binder(v) for v in value)
        return sql, tuple(flat)

    def values(self, params: Params) -> list[Any]:
        """Each of `names`' value, as `construct_params` would give it.

        A parameter's value comes from `params` by its key (or its compiled name), else
        from the statement's own bound value; a required one that `params` lacks goes to
        `construct_params`, which raises SQLAlchemy's error for it.
        """
        if self.sources is not None:
            values = []
            for key, name, default in self.sources:
                if key in params:
                    values.append(params[key])
                elif name in params:
                    values.append(params[name])
                elif default is _REQUIRED:
                    break
                else:
                    values.append(default)
            else:
                return values
        constructed = self.compiled.construct_params(params)
        return [constructed[name] for name in self.names]

    def _bind_named(self, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
        # `%(name)s` placeholders (psycopg): an expanding list becomes `name__1, ...`.
        sql, named = self.sql, {}
        for name, binder, value in zip(self.names, self.binders, values, strict=True):
            if name not in self.expanding:
                named[name] = value if binder is None else binder(value)
                continue
            keys = [f"{name}__{i}" for i in range(1, len(value) + 1)]
            placeholders = ", ".join(f"%({key})s" for key in keys) or self.expanding[name]
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", placeholders, 1)
            named.update(
                zip(keys, (v if binder is None else binder(v) for v in value), strict=True)
            )
        return sql, named

    def read(self, raw: list[tuple[Any, ...]]) -> list[Any]:
        """`raw` rows with each column through its type's result processor."""
        if self.row is None:
            return []
        readers, row = self.readers, self.row
        if not any(readers):
            return [row(values) for values in raw]
        return [
            row([v if r is None else r(v) for r, v in zip(readers, values, strict=True)])
            for values in raw
        ]


# Compiled statements by (statement, dialect, columns). The statements are module constants, so
# this holds a few dozen entries; the bound keeps a statement built per call from growing it.
_CACHE_SIZE: Final = 512
_CacheKey = tuple[int, type[Dialect], frozenset[str] | None]
_CACHE: Final[dict[_CacheKey, tuple[Any, Compiled | None]]] = {}


def compile_statement(
    statement: Any, dialect: Dialect, keys: frozenset[str] | None
) -> Compiled | None:
    cache_key = (id(statement), type(dialect), keys)
    hit = _CACHE.get(cache_key)
    if hit is not None and hit[0] is statement:
        return hit[1]
    compiled = _compile_for(statement, dialect, keys)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()  # statements built per call (not module constants) only cost compiles
    _CACHE[cache_key] = (statement, compiled)
    return compiled


def _compile_for(statement: Any, dialect: Dialect, keys: frozenset[str] | None) -> Compiled | None:
    options = {} if keys is None else {"column_keys": sorted(keys)}
    compiled = statement.compile(dialect=dialect, **options)
    assert isinstance(compiled, SQLCompiler)
    if compiled.positional:
        names = tuple(compiled.positiontup or ())
    else:
        names = tuple(dict.fromkeys(compiled.bind_names.values()))
    if compiled.insert_prefetch or compiled.update_prefetch or compiled.literal_execute_params:
        return None  # Python-side defaults or literal rendering: SQLAlchemy's execution
    binds = [compiled.binds[name] for name in names]
    expanding = {}
    for name, bind in zip(names, binds, strict=True):
        if bind.expanding:
            if bind.type.dialect_impl(dialect)._is_tuple_type:  # noqa: SLF001 - no public flag
                return None  # `(a, b) IN ...`: SQLAlchemy's execution
            empty = compiled.visit_empty_set_op_expr([bind.type], bind.expand_op)  # type: ignore[no-untyped-call]
            expanding[name] = empty
    columns = list(statement.exported_columns) if _returns_rows(statement) else []
    keys_out = [c.key for c in columns]
    row = None
    if columns:
        named = all(isinstance(k, str) and k.isidentifier() for k in keys_out)
        if not named or len(set(keys_out)) != len(keys_out):
            return None
        row = namedtuple("Row", keys_out)._make  # type: ignore[attr-defined]  # noqa: PYI024
    return Compiled(
        compiled=compiled,
        sql=compiled.string,
        positional=compiled.positional,
        names=names,
        sources=_sources(compiled, names),
        binders=tuple(_binder(b.type, dialect) for b in binds),
        expanding=expanding,
        readers=tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        ),
        row=row,
    )


def _sources(compiled: SQLCompiler, names: tuple[str, ...]) -> tuple[_Source, ...] | None:
    """Where `construct_params` takes each of `names`' value from, or None if not only so.

    For each bound parameter: its key, its compiled name (`construct_params` looks a value
    up by both, in that order) and its own value (`_REQUIRED` if it is required). None when
    `construct_params` does more than that for this statement: escaped names, a value
    computed at execution (`callable_`), values collected at compile time (a `text`
    clause's own parameters, merged in first), or a
    statement whose expanding parameters are already rendered.
    """
    if (
        compiled.escaped_bind_names
        or getattr(compiled, "_collected_params", None)
        or compiled._render_postcompile  # noqa: SLF001 - no public flag
    ):
        return None
    by_name: dict[str, _Source] = {}
    for bind, name in compiled.bind_names.items():
        if bind.callable is not None:
            return None
        # As in `construct_params`, a later parameter of the same name wins.
        by_name[name] = (bind.key, name, _REQUIRED if bind.required else bind.value)
    if any(name not in by_name for name in names):
        return None
    return tuple(by_name[name] for name in names)


def _binder(type_: Any, dialect: Dialect) -> _Processor:
    processor: _Processor = type_.dialect_impl(dialect).bind_processor(dialect)
    if processor is None or not _is_timestamp(type_):
        return processor
    return _SameTimestamp(processor)


def _is_timestamp(type_: Any) -> bool:
    impl = type_.impl_instance if isinstance(type_, sa.TypeDecorator) else type_
    return isinstance(impl, sa.DateTime)


class _SameTimestamp:
    """A bind processor that converts the timestamp it converted last only once.

    A write binds the same `now` into every row of a multi-row insert (a claim binds it
    twice per digest): converting it to SQLite's text or to UTC once per row was most of a
    write's binding. Timestamps are immutable, so the same object converts the same way;
    any other value goes to the processor every time. Only timestamp columns get one.
    """

    __slots__ = ("_last", "_processor")

    def __init__(self, processor: Callable[[Any], Any]) -> None:
        self._processor = processor
        self._last: tuple[Any, Any] = (None, None)

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, datetime):
            return self._processor(value)
        last, converted = self._last
        if value is last:
            return converted
        converted = self._processor(value)
        self._last = (value, converted)
        return converted


def _returns_rows(statement: Any) -> bool:
    if isinstance(statement, UpdateBase):
        return bool(statement._returning)  # noqa: SLF001 - no public flag for RETURNING
    return isinstance(statement, sa.Select)


def columns_of(statement: Any, params: Params | Sequence[Params] | None) -> frozenset[str] | None:
    """An insert's or an update's columns: its parameters' keys (as `Connection.execute`)."""
    if not isinstance(statement, ValuesBase | sa.Update):
        return None
    first = params[0] if isinstance(params, Sequence) else params
    return frozenset(first or ())


def bound(compiled: Compiled, params: Params | Sequence[Params] | None) -> tuple[str, Any] | None:
    """The SQL and its values (a list of them for several rows), or None: not directly."""
    if not isinstance(params, Sequence):
        return compiled.bind(params or {})
    if compiled.expanding:
        return None  # SQLAlchemy refuses expanding parameters in an executemany
    rows = [compiled.bind(p) for p in params]
    return rows[0][0], [values for _sql, values in rows]
