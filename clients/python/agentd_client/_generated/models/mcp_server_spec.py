from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.mcp_server_spec_headers import McpServerSpecHeaders
    from ..models.mcp_server_spec_idempotent import McpServerSpecIdempotent


T = TypeVar("T", bound="McpServerSpec")


@_attrs_define
class McpServerSpec:
    """An MCP server a crew's agents may use (the Streamable HTTP transport).

    Attributes:
        name (str): Letters, digits, `-` and `_` (not `__`), at most 32: the prefix of its tools' names.
        url (str): The server's MCP endpoint, an `http` or `https` URL (reached through the egress guard).
        headers (McpServerSpecHeaders | Unset): Headers sent with every request: plain strings or secret references.
        idempotent (McpServerSpecIdempotent | Unset): Per tool: safe to call again after a crash interrupted a call?
            Overrides the tool's
            annotations (`readOnlyHint` or `idempotentHint`: yes; otherwise no).
        requires_approval (list[str] | Unset): The server's tools (by their own names) whose calls wait for a person's
            approval.
        timeout_ms (int | Unset): Milliseconds one request may take (default 30,000).
        tools (list[str] | None | Unset): The server's tools agents may use; absent: all it offers.
    """

    name: str
    url: str
    headers: McpServerSpecHeaders | Unset = UNSET
    idempotent: McpServerSpecIdempotent | Unset = UNSET
    requires_approval: list[str] | Unset = UNSET
    timeout_ms: int | Unset = UNSET
    tools: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        url = self.url

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        idempotent: dict[str, Any] | Unset = UNSET
        if not isinstance(self.idempotent, Unset):
            idempotent = self.idempotent.to_dict()

        requires_approval: list[str] | Unset = UNSET
        if not isinstance(self.requires_approval, Unset):
            requires_approval = self.requires_approval

        timeout_ms = self.timeout_ms

        tools: list[str] | None | Unset
        if isinstance(self.tools, Unset):
            tools = UNSET
        elif isinstance(self.tools, list):
            tools = self.tools

        else:
            tools = self.tools

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "url": url,
            }
        )
        if headers is not UNSET:
            field_dict["headers"] = headers
        if idempotent is not UNSET:
            field_dict["idempotent"] = idempotent
        if requires_approval is not UNSET:
            field_dict["requires_approval"] = requires_approval
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.mcp_server_spec_headers import McpServerSpecHeaders
        from ..models.mcp_server_spec_idempotent import McpServerSpecIdempotent

        d = dict(src_dict)
        name = d.pop("name")

        url = d.pop("url")

        _headers = d.pop("headers", UNSET)
        headers: McpServerSpecHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = McpServerSpecHeaders.from_dict(_headers)

        _idempotent = d.pop("idempotent", UNSET)
        idempotent: McpServerSpecIdempotent | Unset
        if isinstance(_idempotent, Unset):
            idempotent = UNSET
        else:
            idempotent = McpServerSpecIdempotent.from_dict(_idempotent)

        requires_approval = cast(list[str], d.pop("requires_approval", UNSET))

        timeout_ms = d.pop("timeout_ms", UNSET)

        def _parse_tools(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tools_type_0 = cast(list[str], data)

                return tools_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        tools = _parse_tools(d.pop("tools", UNSET))

        mcp_server_spec = cls(
            name=name,
            url=url,
            headers=headers,
            idempotent=idempotent,
            requires_approval=requires_approval,
            timeout_ms=timeout_ms,
            tools=tools,
        )

        return mcp_server_spec
