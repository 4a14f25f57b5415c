"""Immutable objects: once the outermost ``__init__`` returns, attributes can be neither set nor deleted, so what
was verified or validated at construction stays what is used (``functools.cached_property`` still caches, since
it writes the instance dictionary directly). Standard library only."""

import functools


def _sealed_init(init):
    """Wrap ``__init__`` so that the object is sealed once the outermost ``__init__`` returns."""

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        depth = self.__dict__.get("_init_depth", 0)
        object.__setattr__(self, "_init_depth", depth + 1)
        try:
            init(self, *args, **kwargs)
        finally:
            object.__setattr__(self, "_init_depth", depth)
        if depth == 0:
            object.__setattr__(self, "_sealed", True)

    return wrapper


class Immutable:
    """Base class of the objects that must not change after construction (declarations, domains, mechanisms)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            setattr(cls, "__init__", _sealed_init(cls.__dict__["__init__"]))  # mypy: no assigning to a method

    def __setattr__(self, name, value):
        if self.__dict__.get("_sealed"):
            raise AttributeError(f"{type(self).__name__} is immutable; build a new one instead of setting {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable; {name!r} cannot be deleted")
