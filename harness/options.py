"""Command-line options declared once: on the field of the config dataclass they fill.

An option is the metadata of a dataclass field (`cli(...)`): its flags, help and group, and how
the parsed text becomes the field's value. The field's default is the option's default, stated
nowhere else: `add_options` builds the argparse options from it (the help says it), `from_args`
fills the dataclass from the parsed arguments, and `add_pytest_options` / `from_pytest` do the
same for a pytest plugin (one prefix, `--wsmode-`), so a command and its plugin share one table::

    @dataclass(frozen=True)
    class Listening:
        port: int = field(default=8000, metadata=cli("--port", type=port_number,
                                                     help="port to listen on", group="listen"))

    add_options(parser, Listening)          # --port, in the group "listen", "(default: 8000)"
    listening = from_args(Listening, args)  # Listening(port=...)

A field whose value is itself a dataclass of options (`metadata=nested()`) brings that class's
options along, and `from_args` fills it too. A field without `cli`/`nested` metadata is no
option. `tests/test_options.py` holds the commands to this: every option of serve, bench, load,
certify and certify-client is declared here, and no help text states a default by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, Protocol, TypeVar

T = TypeVar("T")

_KEY: Final = "wsmode.option"
_NESTED: Final = "wsmode.nested"
#: The prefix of every option a pytest plugin adds (pytest owns -k, -v, --strict, ...).
PYTEST_PREFIX: Final = "--wsmode-"
#: Set on every argparse action `add_options` makes, so a test can find one made by hand.
DECLARED_ATTR: Final = "wsmode_declared"


@dataclasses.dataclass(frozen=True, slots=True)
class Alternative:
    """A second flag that sets the same field to a constant (`--no-script` beside `--script`);
    the two exclude each other on the command line."""

    flag: str
    const: Any
    help: str


@dataclasses.dataclass(frozen=True, slots=True)
class Option:
    """How one field is spelled on the command line; the field itself holds the default."""

    flags: tuple[str, ...]
    help: str
    group: str = ""
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: Sequence[str] | None = None
    # argparse's action: "store" (a value), "store_true", "store_false", "append", "store_const"
    action: str = "store"
    const: Any = None
    nargs: str | None = None
    dest: str | None = None  # the argparse name, when the field's would be ambiguous
    # the parsed value (a string, a list for "append") -> the field's value
    to_field: Callable[[Any], Any] | None = None
    # the default as the help says it; None: computed from the field's default
    shown: str | None = None
    alternatives: tuple[Alternative, ...] = ()
    # options naming the same `exclusive` exclude each other on the command line
    exclusive: str = ""

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")


def cli(
    *flags: str,
    help: str,
    group: str = "",
    type: Callable[[str], Any] | None = None,
    metavar: str | None = None,
    choices: Sequence[str] | None = None,
    action: str = "store",
    const: Any = None,
    nargs: str | None = None,
    dest: str | None = None,
    to_field: Callable[[Any], Any] | None = None,
    shown: str | None = None,
    alternatives: Sequence[Alternative] = (),
    exclusive: str = "",
) -> Mapping[str, Option]:
    """The `metadata` of a field that is a command-line option."""
    if not flags:
        raise ValueError("an option needs a flag (or a positional name)")
    option = Option(
        tuple(flags),
        help,
        group,
        type,
        metavar,
        choices,
        action,
        const,
        nargs,
        dest,
        to_field,
        shown,
        tuple(alternatives),
        exclusive,
    )
    return {_KEY: option}


def option(default: Any, *flags: str, **spelling: Any) -> Any:
    """A dataclass field with this default that is the option `flags` (spelled as `cli` takes
    it): `x: int = option(1, "--x", help="...")` for `field(default=1, metadata=cli(...))`."""
    return dataclasses.field(default=default, metadata=cli(*flags, **spelling))


def nested(group: str = "") -> Mapping[str, str]:
    """The `metadata` of a field whose dataclass brings its own options (in `group`, for those
    that name none)."""
    return {_NESTED: group}


class _Dataclass(Protocol):
    __dataclass_fields__: dict[str, dataclasses.Field[Any]]


def _field_default(item: dataclasses.Field[Any]) -> Any:
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return dataclasses.MISSING


def declared(cls: type[Any], group: str = "") -> Iterator[tuple[dataclasses.Field[Any], Option]]:
    """Every option of `cls` with its field, nested classes' options included, in field order
    (`group` for those that name none)."""
    for item in dataclasses.fields(cls):
        option = item.metadata.get(_KEY)
        if option is not None:
            yield item, option if option.group or not group else replace(option, group=group)
        elif _NESTED in item.metadata:
            yield from declared(_nested_class(cls, item), item.metadata[_NESTED] or group)


def _nested_class(cls: type[Any], item: dataclasses.Field[Any]) -> type[Any]:
    default = _field_default(item)
    if default is dataclasses.MISSING or not dataclasses.is_dataclass(default):
        raise TypeError(f"{cls.__name__}.{item.name}: a nested() field needs a dataclass default")
    return type(default)


def dest_of(item: dataclasses.Field[Any], option: Option) -> str:
    return option.dest or item.name


def shown_default(value: Any) -> str | None:
    """A default as help text says it, or None when there is none worth saying (None, False,
    empty); a list or tuple is comma-joined. The one rule, argparse's help formatter uses it."""
    if value is None or value is False or value is dataclasses.MISSING:
        return None
    if isinstance(value, list | tuple | frozenset | set):
        return ",".join(str(v) for v in value) if value else None
    if value == "":
        return None
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)


def help_text(item: dataclasses.Field[Any], option: Option) -> str:
    """The option's help with its default, taken from the field."""
    if option.action in ("store_true", "store_false", "store_const"):
        return option.help
    shown = option.shown if option.shown is not None else shown_default(_field_default(item))
    return f"{option.help} (default: {shown})" if shown else option.help


def _argparse_kwargs(item: dataclasses.Field[Any], option: Option) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"help": help_text(item, option), "action": option.action}
    if not option.positional:
        kwargs["dest"] = dest_of(item, option)
        # absent from the namespace unless given: the field's default fills it (from_args)
        kwargs["default"] = argparse.SUPPRESS
    for name in ("type", "choices", "nargs"):
        value = getattr(option, name)
        if value is not None:
            kwargs[name] = value
    if option.metavar is not None:
        kwargs["metavar"] = option.metavar
    elif option.action in ("store", "append") and option.choices is None:
        kwargs["metavar"] = _metavar(option)
    if option.action == "store_const":
        kwargs["const"] = option.const
    return kwargs


_NUMBER_TYPES: Final[dict[Any, str]] = {}  # filled below, once the value types exist


def _metavar(option: Option) -> str:
    """N for a count, S for seconds, X for another number, else the flag's last word."""
    kind = _NUMBER_TYPES.get(option.type) or ("N" if option.type is int else None)
    if kind == "X" and option.flags[0].endswith("-s"):
        return "S"
    if kind is None and option.type is float:
        return "S" if option.flags[0].endswith("-s") else "X"
    return kind or option.flags[0].lstrip("-").split("-")[-1].upper()


class _Adder(Protocol):
    def add_argument(self, *flags: str, **kwargs: Any) -> argparse.Action: ...


def _exclusive_group(where: _Adder) -> _Adder:
    group: _Adder = where.add_mutually_exclusive_group()  # type: ignore[attr-defined]
    return group


def add_options(parser: argparse.ArgumentParser, *classes: type[Any]) -> None:
    """Add every option of `classes` to `parser`, each in its group (made once, in order)."""
    groups: dict[str, _Adder] = {g.title: g for g in parser._action_groups if g.title is not None}
    exclusives: dict[str, _Adder] = {}
    for cls in classes:
        for item, option in declared(cls):
            where: _Adder = parser
            if option.group and not option.positional:
                if option.group not in groups:
                    groups[option.group] = parser.add_argument_group(option.group)
                where = groups[option.group]
            if option.exclusive:
                if option.exclusive not in exclusives:
                    exclusives[option.exclusive] = _exclusive_group(where)
                where = exclusives[option.exclusive]
            elif option.alternatives:
                where = _exclusive_group(where)
            action = where.add_argument(*option.flags, **_argparse_kwargs(item, option))
            setattr(action, DECLARED_ATTR, True)
            for alternative in option.alternatives:
                other = where.add_argument(
                    alternative.flag,
                    dest=dest_of(item, option),
                    action="store_const",
                    const=alternative.const,
                    default=argparse.SUPPRESS,
                    help=alternative.help,
                )
                setattr(other, DECLARED_ATTR, True)


def _field_value(item: dataclasses.Field[Any], option: Option, raw: Any) -> Any:
    if option.to_field is not None:
        return option.to_field(raw)
    if option.action == "append":
        return tuple(raw)
    return raw


def from_values(cls: type[T], value_of: Callable[[str], Any], **overrides: Any) -> T:
    """`cls` filled from `value_of(dest)` (a parsed value, or `argparse.SUPPRESS` when the option
    was not given: the field's default then) for each option; nested classes likewise;
    `overrides` win over both (fields that are no option)."""
    kwargs: dict[str, Any] = {}
    for item in dataclasses.fields(cls):  # type: ignore[arg-type]
        if item.name in overrides:
            kwargs[item.name] = overrides[item.name]
            continue
        option = item.metadata.get(_KEY)
        if option is not None:
            raw = value_of(dest_of(item, option))
            if raw is not argparse.SUPPRESS and raw != argparse.SUPPRESS:
                kwargs[item.name] = _field_value(item, option, raw)
        elif _NESTED in item.metadata:
            kwargs[item.name] = from_values(_nested_class(cls, item), value_of)
    return cls(**kwargs)


def from_args(cls: type[T], args: argparse.Namespace, **overrides: Any) -> T:
    """`cls` filled from parsed arguments (see `from_values`)."""
    return from_values(cls, lambda dest: getattr(args, dest, argparse.SUPPRESS), **overrides)


def pytest_flag(option: Option, item: dataclasses.Field[Any]) -> str:
    """The plugin's spelling of an option: `--wsmode-` and its long name (`--strict` ->
    `--wsmode-strict`, `-k` -> `--wsmode-keyword` after its field)."""
    long = next((f for f in option.flags if f.startswith("--")), None)
    name = long[2:] if long is not None else dest_of(item, option).replace("_", "-")
    return PYTEST_PREFIX + name


def pytest_dest(item: dataclasses.Field[Any], option: Option) -> str:
    return "wsmode_" + dest_of(item, option)


class _PytestGroup(Protocol):
    def addoption(self, *opts: str, **attrs: Any) -> None: ...


def add_pytest_options(group: _PytestGroup, *classes: type[Any]) -> None:
    """Add every option of `classes` to a pytest option group, each as `--wsmode-<name>`.

    Not given, an option reads None (`from_pytest`: the field's default): pytest fills its
    namespace with every option's default before parsing, and an `append` needs a list or None.
    """
    for cls in classes:
        for item, option in declared(cls):
            if option.positional:
                raise TypeError(f"{cls.__name__}.{item.name}: a plugin takes no positional")
            kwargs = _argparse_kwargs(item, option)
            kwargs["dest"] = pytest_dest(item, option)
            kwargs["default"] = None
            group.addoption(pytest_flag(option, item), **kwargs)
            for alternative in option.alternatives:
                group.addoption(
                    PYTEST_PREFIX + alternative.flag.lstrip("-"),
                    dest=pytest_dest(item, option),
                    action="store_const",
                    const=alternative.const,
                    default=None,
                    help=alternative.help,
                )


class _PytestConfig(Protocol):
    def getoption(self, name: str, default: Any = ..., skip: bool = ...) -> Any: ...


def from_pytest(cls: type[T], config: _PytestConfig, **overrides: Any) -> T:
    """`cls` filled from a pytest run's options (added by `add_pytest_options`; one not given
    reads None, and the field keeps its default)."""

    def value_of(dest: str) -> Any:
        value = config.getoption("wsmode_" + dest, None)
        return argparse.SUPPRESS if value is None else value

    return from_values(cls, value_of, **overrides)


# -- value types: each raises argparse.ArgumentTypeError, which argparse says as the option's error
def port_number(text: str) -> int:
    """A TCP port, 0 (pick a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535 (0 picks a free one), got {port}")
    return port


def _number(text: str, kind: Callable[[str], Any], low: float, *, strict: bool) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if value < low or (strict and value == low):
        raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low:g}, got {text}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value: int = _number(text, int, 1, strict=False)
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    value: int = _number(text, int, 0, strict=False)
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value: float = _number(text, float, 0, strict=True)
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value: float = _number(text, float, 0, strict=False)
    return value


_NUMBER_TYPES.update(
    {positive_int: "N", non_negative_int: "N", positive_float: "X", non_negative_float: "X"}
)
