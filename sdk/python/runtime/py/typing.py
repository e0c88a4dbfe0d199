"""A stand-in for CPython's `typing`, so that a test's annotations and
`from typing import Optional` work: MicroPython does not evaluate
annotations, and every name here is an object that takes any
subscription (`Optional[str]`) and gives itself back."""

TYPE_CHECKING = False


class _Any:
    def __getitem__(self, _item):
        return self

    def __call__(self, *args, **_kwargs):
        # `TypeVar("T")`, `NewType("Id", int)`, `cast(T, x)`: the last argument.
        return args[-1] if args else self


Any = Optional = Union = List = Dict = Tuple = Set = FrozenSet = Callable = Iterable = Iterator = _Any()
Sequence = Mapping = MutableMapping = Type = Literal = Final = ClassVar = Generator = _Any()
TypeVar = NewType = Protocol = Generic = Annotated = _Any()


def cast(_type, value):
    return value


def overload(fn):
    return fn
