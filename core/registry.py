"""Typed registries of plug-ins: names → objects, filled by decorators, lazy ``"module:object"`` entries and
entry points of installed packages.

One `Registry` per kind of plug-in (strategies, selectors, agents, validator checks, metrics). A typo gets an
`UnknownNameError` that lists the valid names, so ``strategy.kind=best_of_m`` fails with something a user
can act on.

Example:
    >>> selectors = Registry[Selector]("selector", entry_point_group="medstrat.selectors")
    >>> @selectors.register("mine")
    ... def mine(index, candidates, reports, task): return 0
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, cast

from core.cli_errors import CliError

__all__ = [
    "DuplicateNameError",
    "OptionError",
    "Registry",
    "UnknownNameError",
    "call_with_options",
    "flat_options",
    "given_as",
    "load_object",
    "options_signature",
]

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A registry has no entry of that name; the message lists the valid ones.

    Args:
        kind: What was looked up (``"strategy"``, ``"selector"``).
        name: The unknown name.
        valid: The names that exist.
    """

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        self.kind, self.name, self.valid = kind, name, valid
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(valid) or 'none'}")

    def __str__(self) -> str:
        # KeyError's str() quotes its argument; show the plain sentence instead.
        return str(self.args[0])


class OptionError(ValueError):
    """A config option a plug-in factory does not take, or a value of the wrong type; names the valid ones."""


def _option_names(sig: inspect.Signature) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, p in sig.parameters.items() if p.kind in kinds]


_FLAT = "__flat_options__"


def flat_options(cls: type[T]) -> type[T]:
    """Mark a config dataclass whose fields the config gives flat, as options of the factory taking it.

    A factory ``Agent(model: ModelConfig, options: AgentOptions)`` then takes ``agent.model``,
    ``agent.api_base``, ``agent.batch_size`` ... (`options_signature`): `call_with_options` checks each
    against its field (or against the form `given_as` names, such as a mapping) and builds the dataclass,
    whose own checks then run.

    Args:
        cls: A dataclass.

    Returns:
        The dataclass, marked.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__qualname__} is not a dataclass: only a dataclass's fields can be options")
    setattr(cls, _FLAT, True)
    return cls


def given_as(form: Any) -> dict[str, Any]:
    """A `flat_options` field's metadata: the config gives it as ``form`` (a mapping, a path, a string).

    `call_with_options` checks the config's value against ``form`` instead of the field's type; the
    dataclass's ``__post_init__`` turns it into that type.

    Args:
        form: The annotation of what the config may give (``RetryPolicy | Mapping[str, Any] | None``).

    Returns:
        The metadata for ``dataclasses.field(metadata=...)``.
    """
    return {_GIVEN_AS: form}


_GIVEN_AS = "config"


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    """The factory's parameter annotations, evaluated; empty when one cannot be (trust the values then)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # a forward reference, a name imported for the type checker only
        return {}


def _flat_types(factory: Callable[..., Any]) -> dict[str, type]:
    """The factory's parameters typed by a `flat_options` dataclass: parameter name → the dataclass."""
    return {
        name: hint
        for name, hint in _hints(factory).items()
        if inspect.isclass(hint) and getattr(hint, _FLAT, False) and name != "return"
    }


def options_signature(factory: Callable[..., Any]) -> inspect.Signature:
    """The options a factory takes from the config: its parameters, a `flat_options` one by its fields.

    Args:
        factory: A plug-in factory (a function or a class).

    Returns:
        The signature `call_with_options` checks the config against: annotations evaluated, or none at all
        when they cannot be.

    Raises:
        TypeError: The factory is not callable.
        ValueError: inspect cannot read its signature (some builtins).
    """
    sig = inspect.signature(factory)
    hints = _hints(factory)
    flat = _flat_types(factory)
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name not in flat:
            # Unannotated where the annotations cannot be evaluated: such values are trusted, not checked.
            params.append(p.replace(annotation=hints.get(p.name, inspect.Parameter.empty)))
            continue
        config = flat[p.name]
        types = typing.get_type_hints(config, include_extras=True)
        for f in dataclasses.fields(config):
            if not f.init:
                continue
            default: Any = f.default
            if default is dataclasses.MISSING:
                made = f.default_factory
                default = made() if callable(made) else inspect.Parameter.empty
            params.append(
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=f.metadata.get(_GIVEN_AS, types[f.name]),
                )
            )
    if flat:  # the fields are keywords: a positional parameter after them would not be a signature
        keyword = inspect.Parameter.KEYWORD_ONLY
        params = [p.replace(kind=keyword) if p.kind in _POSITIONAL else p for p in params]
    return sig.replace(parameters=params)


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _built(factory: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the fields of each `flat_options` parameter gathered into its dataclass."""
    out = dict(kwargs)
    for name, config in _flat_types(factory).items():
        fields = [f.name for f in dataclasses.fields(config) if f.init]
        out[name] = config(**{k: out.pop(k) for k in fields if k in out})
    return out


def call_with_options(factory: Callable[..., T], options: Mapping[str, Any], where: str) -> T:
    """Call a plug-in factory with config options, checked against its signature first.

    Unknown keys and values that do not fit the parameter's annotation (``n=abc`` for ``n: int``) are refused
    before anything runs, with one message naming the option and listing the valid ones; a value the factory
    itself rejects (its ``ValueError``, e.g. ``n=0``) is reported the same way. Values are converted where
    the annotation allows (``"8"`` → 8), as Hydra's command line gives strings for quoted numbers. A
    parameter typed by a `flat_options` dataclass takes its fields as options (`options_signature`).

    Args:
        factory: The strategy / selector / agent factory (a function or a class).
        options: Keyword arguments from the config.
        where: The config node, for the message (``strategy``, ``agent``, ``selector``).

    Returns:
        What the factory returns.

    Raises:
        OptionError: An unknown option, a value of the wrong type, or one the factory refuses.
    """
    try:
        sig = options_signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: nothing to check
        return factory(**options)
    names = _option_names(sig)
    valid = ", ".join(names) or "none"
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    unknown = [k for k in options if k not in names]
    if unknown and not takes_any:
        raise OptionError(f"{where}.{unknown[0]}: unknown option of {_name(factory)}; valid options: {valid}")
    kwargs = {k: _checked(sig, k, v, where, valid) for k, v in options.items()}
    try:
        return factory(**_built(factory, kwargs))
    except CliError:
        raise  # already the one line the user should see (e.g. a missing API key), not an option problem
    except (ValueError, TypeError) as exc:
        raise OptionError(
            f"{where}: {_name(factory)} refused its options ({exc}); valid options: {valid}"
        ) from exc


def _origin(obj: object) -> str:
    if isinstance(obj, str):
        return repr(obj)
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _name(factory: Callable[..., Any]) -> str:
    return getattr(factory, "__qualname__", None) or repr(factory)


def _checked(sig: inspect.Signature, key: str, value: Any, where: str, valid: str) -> Any:
    """``value`` validated (and converted) against the annotation of ``key``; unchanged when unannotated."""
    from pydantic import TypeAdapter, ValidationError

    param = sig.parameters.get(key)
    hint: Any = None if param is None else param.annotation
    try:
        # A string is an annotation that could not be evaluated (`_hints`): trust the value.
        usable = hint is not None and hint is not inspect.Parameter.empty and not isinstance(hint, str)
        adapter: TypeAdapter[Any] | None = TypeAdapter(hint) if usable else None
    except Exception:  # an annotation pydantic cannot check (a Protocol, a forward reference): trust it
        adapter = None
    if adapter is None:
        return value
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].lower()
        raise OptionError(f"{where}.{key}={value!r}: {message}; valid options: {valid}") from None


def load_object(spec: str) -> Any:
    """Import ``"package.module:object"`` (or ``"package.module.object"``) and return the object.

    Args:
        spec: The dotted path; ``:`` separates the module from the attribute path when present.

    Returns:
        The object.

    Raises:
        ImportError: The module cannot be imported or has no such attribute.
    """
    if ":" in spec:
        module_name, attr = spec.split(":", 1)
    else:
        module_name, _, attr = spec.rpartition(".")
    if not module_name:
        raise ImportError(f"{spec!r} is not an importable 'module:object' path")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ImportError(f"module {module_name!r} has no attribute {attr!r} (from {spec!r})") from exc
    return obj


class DuplicateNameError(ValueError):
    """Two different plug-ins claim one name of a registry (a second ``@strategy("s3")`` elsewhere).

    Re-registering the same object, or a reload of the module that defines it (same module and qualified
    name), is not a duplicate.
    """


def _same_definition(a: object, b: object) -> bool:
    # A module imported twice (a reload, `python -m pkg.mod` beside `import pkg.mod`) defines a new object
    # with the same origin: that is one plug-in, not two.
    if a is b:
        return True
    origin = ("__module__", "__qualname__")
    return all(getattr(a, k, None) is not None for k in origin) and all(
        getattr(a, k, None) == getattr(b, k, None) for k in origin
    )


class Registry(Generic[T]):
    """Names → plug-ins of one kind, each with free metadata (e.g. a strategy's ``candidates``).

    Args:
        kind: Human name of the kind, used in error messages.
        entry_point_group: The ``project.entry-points`` group scanned for outside plug-ins (on first miss).
        lazy: Built-in entries as ``name → "module:object"``, imported only when asked for.
        nested: Factory parameters that are plug-ins of another kind: parameter name → a resolver turning
            the config value (a name, a mapping) into the object; `create` applies them, the way Inspect
            resolves a solver's ``registry_kwargs``.
    """

    def __init__(
        self,
        kind: str,
        *,
        entry_point_group: str | None = None,
        lazy: Mapping[str, str] | None = None,
        nested: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, T | str] = dict(lazy or {})
        self._meta: dict[str, dict[str, Any]] = {}
        self._nested: dict[str, Callable[..., Any]] = dict(nested or {})
        self._entry_points_loaded = False

    def register(
        self, name: str | None = None, *, aliases: tuple[str, ...] = (), **meta: Any
    ) -> Callable[[T], T]:
        """Decorator registering an object under ``name`` (default: its ``__name__``) and aliases.

        Args:
            name: The registry name.
            aliases: Further names for the same object.
            **meta: Metadata of the entry, read back with `meta` (e.g. ``candidates=True``).

        Returns:
            The decorator; it returns the object unchanged.

        Raises:
            DuplicateNameError: Another plug-in already holds the name.
        """

        def decorate(obj: T) -> T:
            key = name or str(getattr(obj, "__name__", ""))
            if not key:
                raise ValueError(f"cannot register {obj!r} as a {self.kind}: give it a name")
            for n in (key, *aliases):
                self.add(n, obj, **meta)
            return obj

        return decorate

    def add(self, name: str, obj: T | str, *, replace: bool = False, **meta: Any) -> None:
        """Register ``obj`` (or a lazy ``"module:object"`` string) under ``name``.

        A lazy string is replaced by the object its module registers on import; anything else already
        registered under the name must be the same plug-in.

        Args:
            name: The registry name.
            obj: The plug-in or a lazy ``"module:object"`` path.
            replace: The caller has checked that the entry is the same plug-in redefined (e.g. a reload).
            **meta: Metadata of the entry.

        Raises:
            DuplicateNameError: A different plug-in already holds the name.
        """
        previous = self._entries.get(name)
        same = replace or isinstance(previous, str) or _same_definition(previous, obj)
        if previous is not None and not same:
            raise DuplicateNameError(
                f"{self.kind} {name!r} is already registered by {_origin(previous)}; "
                f"{_origin(obj)} cannot take the name"
            )
        self._entries[name] = obj
        if meta or name not in self._meta:
            self._meta[name] = dict(meta)

    def nest(self, key: str, resolve: Callable[..., Any]) -> None:
        """Declare the factory parameter ``key`` a plug-in of another kind, resolved by `create`.

        For registries whose modules cannot import each other (the strategies' registry is defined before
        the selectors'): the module defining the inner kind declares it once, on import.

        Args:
            key: The factory parameter (``selector``).
            resolve: Turns its config value (a name, a mapping, an object already built) into the object.
        """
        self._nested[key] = resolve

    def find(self, name: str) -> T | None:
        """The object already registered under ``name``, or None; imports nothing, scans no entry point."""
        entry = self._entries.get(name)
        return None if entry is None or isinstance(entry, str) else entry

    def meta(self, name: str) -> dict[str, Any]:
        """The metadata registered with ``name`` (empty when none), after loading the entry.

        Raises:
            UnknownNameError: No such name.
        """
        self.get(name)  # a lazy entry declares its metadata in its decorator: import it first
        return dict(self._meta.get(name, {}))

    def names_where(self, **meta: Any) -> list[str]:
        """The names whose metadata has every given key at the given value (built-ins loaded first)."""
        for name in self.names():
            self.get(name)
        return [n for n in self.names() if all(self._meta.get(n, {}).get(k) == v for k, v in meta.items())]

    def create(self, name: str, options: Mapping[str, Any], where: str | None = None) -> T:
        """Build the plug-in ``name`` from config options: nested plug-ins resolved, options checked.

        Args:
            name: The registered factory.
            options: Keyword arguments from the config; the parameters named in ``nested`` are resolved
                to objects first (only when the factory takes them).
            where: The config node, for messages (default: the kind).

        Returns:
            What the factory returns.

        Raises:
            UnknownNameError: An unknown name.
            OptionError: An option the factory does not take, or a value it refuses.
        """
        factory = cast(Callable[..., T], self.get(name))
        kwargs = dict(options)
        try:
            params = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        for key, resolve in self._nested.items():
            if key in params:
                kwargs[key] = resolve(kwargs.get(key))
            else:
                kwargs.pop(key, None)
        return call_with_options(factory, kwargs, where or self.kind)

    def get(self, name: str) -> T:
        """Return the entry named ``name``, importing it on first use.

        Args:
            name: A registered name.

        Returns:
            The object.

        Raises:
            UnknownNameError: No such name (the message lists the valid names).
            ImportError: A lazy entry points at something that cannot be imported.
        """
        if name not in self._entries:
            self._load_entry_points()
        if name not in self._entries:
            raise UnknownNameError(self.kind, name, self.names())
        entry = self._entries[name]
        if isinstance(entry, str):
            loaded = cast(T, load_object(entry))
            # Importing the module may have registered the real entry under this name (a check's decorator
            # registers its spec, while the entry point names the function): that registration wins.
            current = self._entries.get(name)
            entry = current if current is not None and not isinstance(current, str) else loaded
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        """Every registered name, sorted (entry points included)."""
        self._load_entry_points()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded or self.entry_point_group is None:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            # Built-ins and decorator registrations win over an outside package reusing their name.
            self._entries.setdefault(ep.name, ep.value)
