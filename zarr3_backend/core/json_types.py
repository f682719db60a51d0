"""The type of a decoded JSON document, for signatures that take or return one."""

from __future__ import annotations

from typing import TypeAlias

#: A value `json.loads()` can return (and `json.dumps()` accepts).
JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"
