"""YAML input at the boundary: one loader, one error type, messages that name the place.

Every YAML file a user hands us (cluster specs, node specs, hardware profiles, the hardware
catalog, Helm values, kubeconfigs) goes through here, so every such error reads the same way:
``<file>: <field>: <what was expected> (line N)``. Mappings refuse duplicate keys: PyYAML would
silently keep the last one, and a spec that says two things means one of them is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
_UNSET: Any = object()

# Longer integers are refused where they are read: past 4300 digits Python's int() raises with an
# interpreter hint (sys.set_int_max_str_digits), which a user must not be shown (issue 23 fuzzing).
MAX_INT_DIGITS = 100


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing integers too long for any field with a marked error."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {digits} digits (at most {MAX_INT_DIGITS})", node.start_mark)
        return int(super().construct_yaml_int(node))


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


class YamlError(ValueError):
    """Bad YAML input. ``source`` is the file (or what the text came from), ``field`` the dotted
    path to the offending value (empty when unknown), ``line`` 1-based where known."""

    def __init__(self, source: str, why: str, *, field: str = "", line: int | None = None) -> None:
        self.source, self.why, self.field, self.line = source, why, field, line
        where = f"{field}: " if field else ""
        at = f" (line {line})" if line is not None else ""
        super().__init__(f"{source}: {where}{why}{at}")


@dataclass(frozen=True)
class Document:
    """A parsed YAML document: its data and the node tree, kept to point at lines later."""

    source: str
    data: Any
    node: yaml.Node | None

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """The line of the value at ``loc`` (or of its nearest existing parent)."""
        node = self.node
        line = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
            else:
                node = None
            if node is None:
                break
            line = node.start_mark.line + 1
        return line

    def error(self, loc: Sequence[str | int], why: str) -> YamlError:
        """A YamlError for the value at ``loc``, with its line."""
        return YamlError(self.source, why, field=_dotted(loc) or "(top level)", line=self.line_of(loc))

    def validate(self, model: type[M]) -> M:
        """The document as ``model``; the first validation error names the field and its line."""
        try:
            return model.model_validate(self.data)
        except ValidationError as e:
            first = e.errors()[0]
            raise self.error(first["loc"], first["msg"]) from e


def _dotted(loc: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in loc)


def _check_unique_keys(node: yaml.Node, source: str, path: tuple[str | int, ...] = ()) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key.start_mark)
            if name in seen:
                raise YamlError(source, f"duplicate key {name!r}", field=_dotted(path) or "(top level)",
                                line=key.start_mark.line + 1)
            seen.add(name)
            _check_unique_keys(value, source, (*path, name))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_unique_keys(item, source, (*path, i))


def _syntax_error(source: str, e: yaml.YAMLError) -> YamlError:
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        why = " ".join(p for p in (e.context, e.problem) if p)
        return YamlError(source, f"not valid YAML: {why}", line=mark.line + 1 if mark else None)
    if isinstance(e, yaml.reader.ReaderError):
        return YamlError(source, f"not valid YAML: character #x{e.character:04x} at offset {e.position} is not allowed")
    return YamlError(source, f"not valid YAML: {e}")


def _expect(doc: Document, mapping: bool, empty: Any) -> Document:
    if doc.data is None and empty is not _UNSET:
        doc = Document(doc.source, empty, doc.node)
    if mapping and not isinstance(doc.data, dict):
        raise YamlError(doc.source, f"expected a mapping, got {type(doc.data).__name__}", field="(top level)",
                        line=doc.line_of(()))
    return doc


def parse_documents(text: str, source: str, *, unique_keys: bool = True) -> list[Document]:
    """Every document of a (multi-document) YAML text, empty ones included."""
    out: list[Document] = []
    try:
        # The reader checks the characters on construction: a NUL byte is refused there.
        loader = _Loader(text)
    except yaml.YAMLError as e:
        raise _syntax_error(source, e) from None
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None and unique_keys:
                _check_unique_keys(node, source)
            out.append(Document(source, loader.construct_document(node) if node is not None else None, node))
    except yaml.YAMLError as e:
        raise _syntax_error(source, e) from None
    finally:
        loader.dispose()
    return out


def parse_document(text: str, source: str, *, mapping: bool = False, empty: Any = _UNSET,
                   unique_keys: bool = True) -> Document:
    """One YAML document. ``mapping``: the top level must be a mapping; ``empty``: the data of an
    empty document (default None, which ``mapping`` then refuses)."""
    docs = parse_documents(text, source, unique_keys=unique_keys)
    if len(docs) > 1:
        raise YamlError(source, f"expected one YAML document, found {len(docs)}", line=docs[1].line_of(()))
    doc = docs[0] if docs else Document(source, None, None)
    return _expect(doc, mapping, empty)


def read_text(path: Path, source: str | None = None) -> str:
    """The file's text; an unreadable file is a YamlError naming it and the reason."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise YamlError(source or str(path), f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise YamlError(source or str(path), f"not UTF-8 text: {e.reason} at byte {e.start}") from None


def load_document(path: Path, *, source: str | None = None, mapping: bool = False, empty: Any = _UNSET,
                  unique_keys: bool = True) -> Document:
    """One YAML document from a file; ``source`` names it in errors (default: the path)."""
    src = source or str(path)
    return parse_document(read_text(path, src), src, mapping=mapping, empty=empty, unique_keys=unique_keys)


def load_yaml(path: Path, *, source: str | None = None, mapping: bool = False, empty: Any = _UNSET,
              unique_keys: bool = True) -> Any:
    """The data of one YAML document from a file (see :func:`parse_document`)."""
    return load_document(path, source=source, mapping=mapping, empty=empty, unique_keys=unique_keys).data


def parse_yaml(text: str, source: str, *, mapping: bool = False, empty: Any = _UNSET, unique_keys: bool = True) -> Any:
    """The data of one YAML document from text (see :func:`parse_document`)."""
    return parse_document(text, source, mapping=mapping, empty=empty, unique_keys=unique_keys).data


def load_yaml_all(path: Path, *, source: str | None = None, unique_keys: bool = True) -> list[Any]:
    """The data of every non-empty document of a multi-document YAML file."""
    src = source or str(path)
    return [d.data for d in parse_documents(read_text(path, src), src, unique_keys=unique_keys) if d.data is not None]
