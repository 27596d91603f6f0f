"""Kubernetes label selectors: a parser for the string syntax and a matcher.

The ``kubectl get -l`` syntax of the ``<prefix>/selector`` annotation (``=``, ``==``, ``!=``,
``in``, ``notin``, ``key``, ``!key``, ``>``, ``<``), keys and values validated as apimachinery
does; :func:`from_match_labels` and :func:`from_label_selector` for the map forms. Matching
follows ``labels.Selector.Matches`` (``!=`` and ``notin`` match an absent key; ``>``/``<`` only a
base-10 integer). Our own: kubernetes-asyncio and Kopf do not parse this syntax, and pods are
matched from the cache, not by the API server.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = [
    "Operator",
    "Requirement",
    "Selector",
    "SelectorError",
    "from_label_selector",
    "from_match_labels",
    "parse_selector",
]

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_NAME_RE = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_NAME = 63
_MAX_PREFIX = 253


class SelectorError(ValueError):
    """The selector text (or one of its keys or values) is not valid."""


class Operator(enum.Enum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_INTEGER_RE = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the number, or None when that would fail."""
    if not _INTEGER_RE.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a selector; ``values`` is empty for the two existence operators."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if op in (Operator.EQUALS, Operator.IN):
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op in (Operator.GREATER_THAN, Operator.LESS_THAN):
            have = _int64(labels.get(self.key) or "")
            want = _int64(next(iter(self.values)))
            if have is None or want is None:
                return False
            return have > want if op is Operator.GREATER_THAN else have < want
        value = labels.get(self.key)
        return value is None or value not in self.values

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in (Operator.EQUALS, Operator.NOT_EQUALS):
            return f"{self.key}{op.value}{next(iter(self.values))}"
        if op in _COMPARISONS.values():
            symbol = ">" if op is Operator.GREATER_THAN else "<"
            return f"{self.key}{symbol}{next(iter(self.values))}"
        return f"{self.key} {op.value} ({','.join(sorted(self.values))})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(req.matches(labels) for req in self.requirements)

    def anchors(self) -> Iterator[tuple[str, str | None]]:
        """Index buckets that every matching label set hits at least one of.

        Chooses one positive requirement (equality, ``in`` or existence) and yields
        ``(key, value)`` pairs for it, or ``(key, None)`` for existence. Yields nothing when the
        selector has no positive requirement, meaning "check this selector against every pod".
        Equality is preferred over ``in`` (fewer buckets), existence comes last (widest).
        """
        best: Requirement | None = None
        rank = {Operator.EQUALS: 0, Operator.IN: 1, Operator.EXISTS: 2}
        for req in self.requirements:
            if req.operator in rank and (best is None or rank[req.operator] < rank[best.operator]):
                best = req
        if best is None:
            return
        if best.operator is Operator.EXISTS:
            yield (best.key, None)
        else:
            for value in sorted(best.values):
                yield (best.key, value)

    def __str__(self) -> str:
        return ",".join(str(req) for req in self.requirements)


def validate_key(key: str) -> None:
    """Raise :class:`SelectorError` unless ``key`` is a valid (optionally prefixed) label key."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > _MAX_PREFIX or not _DNS_SUBDOMAIN_RE.match(prefix)):
        raise SelectorError(f"invalid label key {key!r}: prefix must be a DNS subdomain")
    if not name or len(name) > _MAX_NAME or not _NAME_RE.match(name):
        raise SelectorError(
            f"invalid label key {key!r}: name must be 63 characters or fewer, alphanumeric, "
            "'-', '_' or '.', starting and ending with an alphanumeric character"
        )


def validate_value(value: str) -> None:
    """Raise :class:`SelectorError` unless ``value`` is a valid label value (may be empty)."""
    if value and (len(value) > _MAX_NAME or not _NAME_RE.match(value)):
        raise SelectorError(
            f"invalid label value {value!r}: must be 63 characters or fewer, alphanumeric, "
            "'-', '_' or '.', starting and ending with an alphanumeric character"
        )


def from_match_labels(match_labels: Mapping[str, str]) -> Selector:
    """An equality selector for a ``spec.selector`` map (sorted for a stable string form)."""
    reqs = []
    for key in sorted(match_labels):
        value = match_labels[key]
        if not isinstance(key, str) or not isinstance(value, str):
            raise SelectorError(f"selector entry {key!r}: {value!r} is not a string pair")
        validate_key(key)
        validate_value(value)
        reqs.append(Requirement(key, Operator.EQUALS, frozenset((value,))))
    return Selector(tuple(reqs))


_EXPRESSION_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def from_label_selector(selector: object) -> Selector:
    """A ``metav1.LabelSelector`` as a :class:`Selector`, checked as apimachinery's
    ``LabelSelectorAsSelector`` and validation do (``In``/``NotIn`` need values,
    ``Exists``/``DoesNotExist`` none). The empty selector is refused (it would select every
    pod of the namespace)."""
    if not isinstance(selector, Mapping):
        raise SelectorError("the selector must be an object with matchLabels or matchExpressions")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be a map of label keys to values")
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions must be a list")
    if not match_labels and not expressions:
        raise SelectorError("the selector is empty: it would select every pod of the namespace")
    requirements = list(from_match_labels(match_labels).requirements)
    for index, expression in enumerate(expressions):
        where = f"matchExpressions[{index}]"
        if not isinstance(expression, Mapping):
            raise SelectorError(f"{where} is not an object")
        key, op_name, values = (
            expression.get("key"),
            expression.get("operator"),
            expression.get("values") or [],
        )
        if not isinstance(key, str):
            raise SelectorError(f"{where}: key must be a string")
        validate_key(key)
        operator = _EXPRESSION_OPERATORS.get(op_name) if isinstance(op_name, str) else None
        if operator is None:
            raise SelectorError(
                f"{where}: unknown operator {op_name!r} (In, NotIn, Exists or DoesNotExist)"
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"{where}: values must be a list of strings")
        if operator in (Operator.IN, Operator.NOT_IN) and not values:
            raise SelectorError(f"{where}: operator {op_name} needs at least one value")
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            raise SelectorError(f"{where}: operator {op_name} takes no values")
        for value in values:
            validate_value(value)
        requirements.append(Requirement(key, operator, frozenset(values)))
    return Selector(tuple(requirements))


# Lexer: identifiers (keys and values), the operators, parentheses and commas.
_TOKEN_RE = re.compile(
    r"\s*(?:(?P<op>==|!=|=|!|<|>|\(|\)|,)|(?P<word>[^\s=!<>(),]+))",
)
_COMPARISONS = {">": Operator.GREATER_THAN, "<": Operator.LESS_THAN}


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        if match is None or match.end() == pos:
            raise SelectorError(f"unexpected character at position {pos} in {text!r}")
        tokens.append(match.group("op") or match.group("word"))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise SelectorError(f"unexpected end of selector {self.text!r}")
        self.pos += 1
        return token

    def word(self, what: str) -> str:
        token = self.take()
        if token in {"=", "==", "!=", "!", "<", ">", "(", ")", ","}:
            raise SelectorError(f"expected {what}, found {token!r} in {self.text!r}")
        return token

    def parse(self) -> Selector:
        reqs: list[Requirement] = []
        while True:
            reqs.append(self.requirement())
            token = self.peek()
            if token is None:
                break
            if token != ",":
                raise SelectorError(f"expected ',' but found {token!r} in {self.text!r}")
            self.take()
        # apimachinery sorts requirements by key; keeping that makes the string form canonical.
        return Selector(tuple(sorted(reqs, key=lambda r: r.key)))

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            key = self.word("a label key after '!'")
            validate_key(key)
            return Requirement(key, Operator.DOES_NOT_EXIST)
        key = self.word("a label key")
        validate_key(key)
        token = self.peek()
        if token is None or token == ",":
            return Requirement(key, Operator.EXISTS)
        self.take()
        if token in {"=", "=="}:
            return Requirement(key, Operator.EQUALS, frozenset((self.value(),)))
        if token == "!=":
            return Requirement(key, Operator.NOT_EQUALS, frozenset((self.value(),)))
        if token in _COMPARISONS:
            # apimachinery: exactly one value, and it must parse as an int64
            number = self.word(f"an integer after {token!r}")
            validate_value(number)
            if _int64(number) is None:
                raise SelectorError(
                    f"invalid value {number!r} after {key}{token}: must be an integer"
                )
            return Requirement(key, _COMPARISONS[token], frozenset((number,)))
        if token in {"in", "notin"}:
            values = self.value_set()
            op = Operator.IN if token == "in" else Operator.NOT_IN
            return Requirement(key, op, values)
        raise SelectorError(f"unknown operator {token!r} after key {key!r} in {self.text!r}")

    def value(self) -> str:
        token = self.peek()
        # "key=" selects an empty value, as apimachinery allows
        value = "" if token is None or token == "," else self.word("a label value")
        validate_value(value)
        return value

    def value_set(self) -> frozenset[str]:
        if self.take() != "(":
            raise SelectorError(f"expected '(' after a set operator in {self.text!r}")
        if self.peek() == ")":
            raise SelectorError(f"a set of values cannot be empty in {self.text!r}")
        values: set[str] = set()
        while True:
            token = self.peek()
            value = "" if token in {",", ")"} else self.word("a label value")
            validate_value(value)
            values.add(value)
            token = self.take()
            if token == ")":
                break
            if token != ",":
                raise SelectorError(f"expected ',' or ')' but found {token!r} in {self.text!r}")
        return frozenset(values)


def parse_selector(text: str) -> Selector:
    """Parse a label selector string.

    The empty (or blank) string is refused: on an annotation it would select every pod in the
    namespace, which is never what someone opting a selectorless Service in meant.
    """
    if not text.strip():
        raise SelectorError("the selector is empty")
    return _Parser(text).parse()
