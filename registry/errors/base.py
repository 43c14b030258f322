"""The base of every registry error: its form (fields, message, details, pickling)."""

from __future__ import annotations

from dataclasses import Field, fields, is_dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Final

# Field metadata: the field is an attribute of the exception, not one of its `details()`.
ATTRIBUTE_ONLY: Final = MappingProxyType({"details": False})


class RegistryError(Exception):
    """Base class of every error the registry raises on purpose."""

    code: ClassVar[str] = "registry_error"
    # The message, formatted with the fields; empty: the message given to the constructor.
    template: ClassVar[str] = ""

    def __init_subclass__(cls, *, code: str, **kwargs: Any) -> None:
        # Every class names its own code: a subclass cannot silently reuse its base's, and
        # no two classes share one (`by_code` is the one table from codes to classes).
        super().__init_subclass__(**kwargs)
        taken = _BY_CODE.setdefault(code, cls)
        if taken is not cls:
            msg = f"error code {code!r} of {cls.__qualname__} is {taken.__qualname__}'s"
            raise TypeError(msg)
        cls.code = code

    def __post_init__(self) -> None:
        # A dataclass's `__init__` does not call `Exception.__init__`; this stands in for it.
        self.args = (str(self),)

    def __str__(self) -> str:
        if not self.template:
            return super().__str__()
        return self.template.format_map({f.name: getattr(self, f.name) for f in _fields(self)})

    def details(self) -> dict[str, object]:
        """Machine-readable fields of the error (JSON-safe)."""
        data = [f for f in _fields(self) if f.metadata.get("details", True)]
        return {f.name: getattr(self, f.name) for f in data}

    def __reduce__(self) -> tuple[Any, ...]:
        # `BaseException` pickles as `cls(*args)`, which would hand the message to a
        # constructor that takes fields: rebuild without `__init__`, then restore `__dict__`.
        return (_rebuild, (type(self), self.args), self.__dict__)


_BY_CODE: Final[dict[str, type[RegistryError]]] = {}


def by_code(code: str) -> type[RegistryError] | None:
    """The error class whose `code` is `code` (a problem document's, a recorded job's)."""
    return _BY_CODE.get(code)


def all_errors() -> tuple[type[RegistryError], ...]:
    """Every error class, `RegistryError` first, then in the order they were defined."""
    return (RegistryError, *_BY_CODE.values())


def _rebuild(cls: type[RegistryError], args: tuple[object, ...]) -> RegistryError:
    exc = cls.__new__(cls)
    exc.args = args
    return exc


def _fields(exc: object) -> tuple[Field[Any], ...]:
    # `object`: mypy cannot tell that a subclass of the plain `RegistryError` is a dataclass.
    return fields(exc) if is_dataclass(exc) else ()  # the category bases carry no data


def in_parens(detail: str) -> str:
    return f" ({detail})" if detail else ""


def at_path(path: str | None) -> str:
    return f" at {path!r}" if path else ""
