from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Publish")


@_attrs_define
class Publish:
    """Which protocols publish a registered crew.

    Attributes:
        a2a (bool | Unset): An A2A agent (`/a2a/{name}`, card at `/a2a/{name}/.well-known/agent-card.json`).
        ag_ui (bool | Unset): An AG-UI agent (`POST /v1/ag-ui/crews/{name}`).
        mcp (bool | Unset): A tool of the MCP server (`/mcp`).
    """

    a2a: bool | Unset = UNSET
    ag_ui: bool | Unset = UNSET
    mcp: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        a2a = self.a2a

        ag_ui = self.ag_ui

        mcp = self.mcp

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if a2a is not UNSET:
            field_dict["a2a"] = a2a
        if ag_ui is not UNSET:
            field_dict["ag_ui"] = ag_ui
        if mcp is not UNSET:
            field_dict["mcp"] = mcp

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        a2a = d.pop("a2a", UNSET)

        ag_ui = d.pop("ag_ui", UNSET)

        mcp = d.pop("mcp", UNSET)

        publish = cls(
            a2a=a2a,
            ag_ui=ag_ui,
            mcp=mcp,
        )

        return publish
