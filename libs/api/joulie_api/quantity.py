"""Kubernetes resource quantities ("500m", "2", "1Gi", "1e3", "128974848") as plain floats.

Pure: no I/O. Shared by every component that reads pod requests or node allocatable. The Go
original's extender understood only a few suffixes (no lower-case `k`, no exponents, no decimal
`m` on memory); this parser follows the Kubernetes quantity grammar, so any value the API server
accepted is read as the API server reads it.
"""

from __future__ import annotations

import math
import re
from typing import Final

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY: Final = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)$")


class QuantityError(ValueError):
    """A resource quantity that does not follow the Kubernetes quantity grammar."""


def parse_quantity(value: object) -> float:
    """The quantity as a float in base units (cores, bytes, devices).

    Accepts JSON numbers too (a hand-written request may carry `"cpu": 2`). Raises
    `QuantityError` naming the value for anything else, including NaN and infinities.
    """
    if isinstance(value, bool):
        raise QuantityError(f"expected a quantity, got the boolean {value!r}")
    if isinstance(value, (int, float)):  # a tuple, not `int | float`: kubectl-joulie runs this on Python 3.9
        number = float(value)
    elif isinstance(value, str):
        match = _QUANTITY.match(value.strip())
        if match is None:
            raise QuantityError(f"{value!r} is not a Kubernetes quantity (e.g. '500m', '2', '1Gi')")
        digits, suffix = match.groups()
        if suffix in _BINARY:
            mult = float(_BINARY[suffix])
        elif suffix[:1] in ("e", "E"):
            exp = int(suffix[1:])
            if abs(exp) > 30:
                raise QuantityError(f"{value!r}: exponent out of range")
            mult = 10.0**exp
        else:
            mult = _DECIMAL[suffix]
        number = float(digits) * mult
    else:
        raise QuantityError(f"expected a quantity string or number, got {type(value).__name__}")
    if not math.isfinite(number):
        raise QuantityError(f"{value!r} is not a finite quantity")
    return number
