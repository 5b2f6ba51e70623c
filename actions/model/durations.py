"""Durations as the settings take them: :data:`Seconds`, :data:`Hours` and :data:`Days`, floats
that refuse infinity, NaN and anything over a year, whatever else the key itself bounds.

An infinite or absurd duration validates as a float yet breaks far from the config: ``1e309``
(read as infinity) overflows the first datetime it is added to, ``1e12`` s is a PromQL range
Prometheus refuses with a 400. A year is longer than any window, timeout or pause the bot has a
use for, and short enough for every datetime and PromQL duration.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator

MAX_DAYS = 366
MAX_SECONDS = MAX_DAYS * 86400


def _at_most(limit: float, unit: str) -> BeforeValidator:
    def check(value: Any) -> Any:
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits
            number = math.inf
        except (TypeError, ValueError):
            return value  # not a number at all: pydantic's own error says so
        if not number <= limit:  # NaN compares false too
            year = "" if unit == "days" else f" ({MAX_DAYS} days)"
            raise ValueError(f"{value!r} is not a usable duration: write a finite number of {unit}, at most {limit:.0f}{year}")
        return value

    return BeforeValidator(check)


Seconds = Annotated[float, _at_most(MAX_SECONDS, "seconds")]
Hours = Annotated[float, _at_most(MAX_SECONDS / 3600, "hours")]
Days = Annotated[float, _at_most(MAX_DAYS, "days")]
