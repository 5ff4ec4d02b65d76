"""CosyVoice's released YAML (HyperPyYAML) read as plain data, within bounds.

The released files use ``!new:pkg.Class`` (build an object), ``!name:pkg.fn`` (a partial),
``!apply:pkg.fn`` (call at load time) and ``!ref <key>`` (a reference, sometimes with arithmetic
such as ``<chunk_size> * <token_mel_ratio>``). We never import or call what they name: a
``SafeLoader`` subclass turns each tagged node into a :class:`Tagged` value (target +
arguments), and ``!ref`` is resolved against the document.

A model folder comes from anywhere, so everything the reader evaluates is bounded by
:data:`LIMITS` before it is evaluated — document size, nodes, nesting, aliases and what they
expand to, copies made by ``!ref``, digits of a number, length of a ``!ref`` expression, the
operators it may use (``+ - * / // % **`` on numbers, nothing else) and the size of each
result (an exponent is checked before the power is taken: ``9 ** 9 ** 9`` would hold the GIL
for hours). The released files are far inside every bound (7 kB, 444 nodes, 6 deep, no
aliases). A breach is a :class:`HParamsError` naming the line or key. The folder's YAML is read
in a child process as well (yaml_child.py), in case a bound is missed.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

import yaml


class HParamsError(ValueError):
    """The YAML cannot be read as a CosyVoice hyper-parameter file (the message names why)."""


@dataclass(frozen=True)
class Limits:
    """What one YAML document may hold (the released ones: 7 kB, 444 nodes, depth 6)."""

    max_bytes: int = 256 * 2**10  # the document
    max_nodes: int = 5_000  # scalars, sequences and mappings as written
    max_depth: int = 32  # nesting, aliases and !ref copies included
    max_aliases: int = 100
    max_values: int = 100_000  # values once aliases and !ref copies are expanded
    max_chars: int = 4 * 2**20  # characters of all strings once expanded
    max_number_chars: int = 64  # a number as written
    max_ref_chars: int = 256  # one !ref expression
    max_ref_chain: int = 32  # !ref <a> -> !ref <b> -> ...
    max_int_bits: int = 64  # integer operands and results of !ref arithmetic


LIMITS = Limits()


@dataclass
class Tagged:
    """A ``!new:``/``!name:``/``!apply:`` node: what it names and its arguments, never executed."""

    kind: str  # "new" | "name" | "apply"
    target: str  # dotted name, e.g. "cosyvoice.llm.llm.Qwen2LM"
    kwargs: dict[str, Any] = field(default_factory=dict)
    args: list[Any] = field(default_factory=list)

    @property
    def class_name(self) -> str:
        return self.target.rsplit(".", 1)[-1]


@dataclass
class _Ref:
    expr: str
    line: int


def _at(mark: yaml.Mark | None, message: str) -> HParamsError:
    return HParamsError(f"line {mark.line + 1}: {message}" if mark is not None else message)


class _DataLoader(yaml.SafeLoader):
    """SafeLoader that keeps HyperPyYAML tags as data and counts what it composes: nodes,
    nesting, aliases, and each node's size and depth with its aliases expanded (measured as
    the node is composed, from its children's, so a billion-laughs tower is refused at the
    anchor that crosses the bound, before anything is constructed)."""

    limits = LIMITS

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._nodes = self._aliases = self._depth = 0
        self._measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) expanded

    def compose_node(self, parent, index):
        lim = self.limits
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self._aliases += 1
            if self._aliases > lim.max_aliases:
                raise _at(event.start_mark, f"more than {lim.max_aliases} aliases (*name)")
            node = super().compose_node(parent, index)
            if id(node) not in self._measured:
                raise _at(event.start_mark, f"alias *{event.anchor} refers to a node that "
                                            "holds it")
            return node
        event = self.peek_event()
        self._nodes += 1
        self._depth += 1
        if self._nodes > lim.max_nodes:
            raise _at(event.start_mark, f"more than {lim.max_nodes:,} values")
        if self._depth > lim.max_depth:
            raise _at(event.start_mark, f"values nested more than {lim.max_depth} deep")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._measure(node)
        return node

    def _measure(self, node: yaml.Node) -> None:
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        sizes = [self._measured[id(c)] for c in children]
        values = 1 + sum(s for s, _ in sizes)
        depth = 1 + max((d for _, d in sizes), default=0)
        lim = self.limits
        if values > lim.max_values:
            raise _at(node.start_mark, f"this value expands to more than {lim.max_values:,} "
                                       "values through its aliases (*name)")
        if depth > lim.max_depth:
            raise _at(node.start_mark, f"values nested more than {lim.max_depth} deep once "
                                       "aliases (*name) are expanded")
        self._measured[id(node)] = (values, depth)

    def construct_yaml_int(self, node):
        self._check_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        self._check_number(node)
        return super().construct_yaml_float(node)

    def _check_number(self, node: yaml.ScalarNode) -> None:
        if len(node.value) > self.limits.max_number_chars:
            raise _at(node.start_mark, f"a number of {len(node.value):,} digits; the limit is "
                                       f"{self.limits.max_number_chars}")


def _tagged(kind: str):
    def construct(loader: _DataLoader, suffix: str, node: yaml.Node) -> Tagged:
        if isinstance(node, yaml.MappingNode):
            return Tagged(kind, suffix, kwargs=loader.construct_mapping(node, deep=True))
        if isinstance(node, yaml.SequenceNode):
            return Tagged(kind, suffix, args=loader.construct_sequence(node, deep=True))
        value = loader.construct_scalar(node)
        return Tagged(kind, suffix, args=[value] if value not in ("", None) else [])
    return construct


def _ref(loader: _DataLoader, node: yaml.Node) -> _Ref:
    expr = loader.construct_scalar(node)
    if len(expr) > loader.limits.max_ref_chars:
        raise _at(node.start_mark, f"a !ref expression of {len(expr):,} characters; the limit "
                                   f"is {loader.limits.max_ref_chars}")
    return _Ref(expr, node.start_mark.line + 1)


for _kind in ("new", "name", "apply"):
    _DataLoader.add_multi_constructor(f"!{_kind}:", _tagged(_kind))
# YAML 1.2 floats without a dot ("1e-06"), which HyperPyYAML's ruamel reads as numbers.
_DataLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))
_DataLoader.add_constructor("tag:yaml.org,2002:int", _DataLoader.construct_yaml_int)
_DataLoader.add_constructor("tag:yaml.org,2002:float", _DataLoader.construct_yaml_float)
_DataLoader.add_constructor("!ref", _ref)


_REF = re.compile(r"<([^<>]+)>")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_ALLOWED = "numbers, <references> and + - * / // % ** ( )"


class _Arithmetic:
    """``!ref`` arithmetic: numbers, references (``names``) and :data:`_OPS` only; every
    operand and result a finite number of at most ``max_int_bits`` bits, a power's size
    checked before it is taken."""

    def __init__(self, names: dict[str, Any], limits: Limits) -> None:
        self.names, self.limits = names, limits

    def eval(self, node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant):
            return self.number(node.value, "a constant")
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.number(self.names[node.id][1], f"<{self.names[node.id][0]}>")
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return self.result(_OPS[type(node.op)](self.eval(node.operand)))
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = self.eval(node.left), self.eval(node.right)
            if isinstance(node.op, ast.Pow):
                self.check_power(left, right)
            try:
                return self.result(_OPS[type(node.op)](left, right))
            except ZeroDivisionError as e:
                raise HParamsError("division by zero") from e
            except OverflowError as e:
                raise HParamsError("the result is not a finite number") from e
        what = type(getattr(node, "op", node)).__name__
        raise HParamsError(f"{what} is not allowed in !ref (only {_ALLOWED})")

    def number(self, value: Any, what: str) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise HParamsError(f"{what} is a {type(value).__name__}; !ref arithmetic takes "
                               "numbers only")
        return self.result(value)

    def result(self, value: Any) -> int | float:
        bits = self.limits.max_int_bits
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > bits:
                raise HParamsError(f"a number of {value.bit_length()} bits; the limit is {bits}")
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise HParamsError(f"the result ({type(value).__name__}) is not a finite number")

    def check_power(self, base: int | float, exponent: int | float) -> None:
        """Refuse ``base ** exponent`` whose result would pass the bit limit, before taking it
        (an integer power of b bits to the n is about b·n bits)."""
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
            bits = exponent * math.log2(abs(base))
            if bits > self.limits.max_int_bits:
                raise HParamsError(f"the exponent {exponent} makes a number of about "
                                   f"{bits:,.0f} bits; the limit is {self.limits.max_int_bits}")


class _Resolver:
    """Every ``!ref`` resolved to a copy of what it names; the copies counted (values,
    characters, depth, chain length) against the limits. ``at``: the key (and line) where
    resolving failed."""

    def __init__(self, doc: dict, limits: Limits) -> None:
        self.doc, self.limits = doc, limits
        self.chain: list[str] = []  # the !ref keys being resolved, outermost first
        self.path: list[str] = []  # the key being resolved
        self.values = self.chars = 0
        self.at = ""

    def lookup(self, key: str, depth: int) -> Any:
        if key in self.chain:
            raise HParamsError(f"!ref <{key}> refers to itself")
        if len(self.chain) >= self.limits.max_ref_chain:
            raise HParamsError(f"!ref <{key}>: references nested more than "
                               f"{self.limits.max_ref_chain} deep")
        node: Any = self.doc
        for part in re.split(r"[.\[\]]+", key.strip()):
            if not part:
                continue
            if not isinstance(node, dict) or part not in node:
                raise HParamsError(f"!ref <{key}>: no such key in the YAML")
            node = node[part]
        self.chain.append(key)
        try:
            return self.resolve(node, depth)
        finally:
            self.chain.pop()

    def resolve(self, node: Any, depth: int = 0) -> Any:
        self.count(node, depth)
        if isinstance(node, _Ref):
            return self.ref(node, depth)
        if isinstance(node, Tagged):
            return Tagged(node.kind, node.target, self.resolve(node.kwargs, depth),
                          self.resolve(node.args, depth))
        if isinstance(node, dict):
            return {key: self.item(key, value, depth + 1) for key, value in node.items()}
        if isinstance(node, list):
            return [self.resolve(v, depth + 1) for v in node]
        return node

    def item(self, key: Any, value: Any, depth: int) -> Any:
        """A mapping's value resolved, the innermost failing key (and line) kept in ``at``."""
        self.path.append(str(key))
        try:
            return self.resolve(value, depth)
        except HParamsError:
            if not self.at:
                line = f" (line {value.line})" if isinstance(value, _Ref) else ""
                self.at = f"key {'.'.join(self.path)}{line}"
            raise
        finally:
            self.path.pop()

    def count(self, node: Any, depth: int) -> None:
        lim = self.limits
        self.values += 1
        if isinstance(node, str):
            self.chars += len(node)
        if self.values > lim.max_values:
            raise HParamsError(f"the YAML expands to more than {lim.max_values:,} values "
                               "(!ref copies and aliases)")
        if self.chars > lim.max_chars:
            raise HParamsError(f"the YAML expands to more than {lim.max_chars:,} characters "
                               "of text (!ref copies and aliases)")
        if depth > lim.max_depth:
            raise HParamsError(f"values nested more than {lim.max_depth} deep once !ref "
                               "copies are made")

    def ref(self, node: _Ref, depth: int) -> Any:
        whole = _REF.fullmatch(node.expr.strip())
        if whole:
            return self.lookup(whole.group(1), depth)
        names: dict[str, tuple[str, Any]] = {}

        def name(match: re.Match) -> str:
            key = f"_r{len(names)}"
            names[key] = (match.group(1), self.lookup(match.group(1), depth))
            return f" {key} "

        text = _REF.sub(name, node.expr)
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError) as e:
            raise HParamsError(f"cannot read !ref {node.expr!r}") from e
        return _Arithmetic(names, self.limits).eval(tree)


def load_yaml(text: str, limits: Limits = LIMITS) -> dict:
    """The document as plain data: tags → :class:`Tagged`, every ``!ref`` resolved, within
    ``limits`` (:class:`HParamsError` naming the line or key otherwise)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise HParamsError(f"the YAML is {size / 2**10:,.0f} kB; a hyper-parameter file is at "
                           f"most {limits.max_bytes / 2**10:,.0f} kB (the released ones: 7 kB)")
    loader = _DataLoader(text)
    loader.limits = limits
    try:
        doc = loader.get_single_data()
    except (HParamsError, MemoryError, RecursionError):
        raise
    except Exception as e:  # YAMLError, or PyYAML's constructors on odd input ("!!int abc")
        raise HParamsError(f"not a readable YAML file: {e}") from e
    finally:
        loader.dispose()
    if not isinstance(doc, dict):
        raise HParamsError("the YAML's top level is not a mapping")
    resolver = _Resolver(doc, limits)
    try:
        return resolver.resolve(doc)
    except HParamsError as e:
        raise HParamsError(f"{resolver.at or 'the top level'}: {e}") from e
