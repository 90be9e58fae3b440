"""``json.loads`` without importing the json package.

fakesmi parses the node's state files (``gpus.json``, ``tools.json``, ``faults.json``) at every GPU
tool start, and ``import json`` was 40 % of an nvidia-smi or dcgmi start (31 M of 74 M instructions):
the package compiles its regular expressions at import, and imports ``re`` and ``enum`` to do so.
``json.loads`` itself parses with CPython's C scanner (``_json.make_scanner``, what
``json.JSONDecoder`` builds); this calls that scanner with ``JSONDecoder()``'s settings and leaves
everything else to ``json.loads``: an interpreter without the accelerator, and any text the scanner
does not take whole, are parsed by ``json.loads`` (which then raises its own error).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"  # JSON's (json.decoder.WHITESPACE)


class _Decoder:
    """What the C scanner reads of a ``json.JSONDecoder()``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


def _c_scanner() -> Callable[[str, int], tuple[Any, int]] | None:
    try:
        from _json import make_scanner
    except ImportError:
        return None
    # typeshed types the context as a scanner; the C code reads only JSONDecoder's attributes of it.
    scan: Callable[[str, int], tuple[Any, int]] = make_scanner(_Decoder)  # type: ignore[arg-type]
    return scan


_scan = _c_scanner()


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ``json.JSONDecodeError``."""
    if _scan is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _scan(text, start)
        except (StopIteration, ValueError):
            pass  # json.loads raises the error, with its message
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json

    return json.loads(text)
