from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.http_method import HttpMethod
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.http_tool_spec_headers import HttpToolSpecHeaders
    from ..models.http_tool_spec_query import HttpToolSpecQuery


T = TypeVar("T", bound="HttpToolSpec")


@_attrs_define
class HttpToolSpec:
    """Where an HTTP tool sends its arguments.

    Attributes:
        url (str): An `http` or `https` URL with a host and no credentials.
        headers (HttpToolSpecHeaders | Unset): Headers sent with every call: plain strings or secret references. Not
            `Host`,
            `Content-Length`, `Transfer-Encoding`, `Connection` or `Idempotency-Key` (agentd sets it).
        method (HttpMethod | Unset): The HTTP method of a tool call: arguments go in the query for GET, as a JSON body
            for POST.
        query (HttpToolSpecQuery | Unset): Query parameters added to every call's URL (beside a GET call's arguments).
        timeout_ms (int | Unset): Milliseconds a call may take (default 10,000).
    """

    url: str
    headers: HttpToolSpecHeaders | Unset = UNSET
    method: HttpMethod | Unset = UNSET
    query: HttpToolSpecQuery | Unset = UNSET
    timeout_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        method: str | Unset = UNSET
        if not isinstance(self.method, Unset):
            method = self.method.value

        query: dict[str, Any] | Unset = UNSET
        if not isinstance(self.query, Unset):
            query = self.query.to_dict()

        timeout_ms = self.timeout_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if headers is not UNSET:
            field_dict["headers"] = headers
        if method is not UNSET:
            field_dict["method"] = method
        if query is not UNSET:
            field_dict["query"] = query
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.http_tool_spec_headers import HttpToolSpecHeaders
        from ..models.http_tool_spec_query import HttpToolSpecQuery

        d = dict(src_dict)
        url = d.pop("url")

        _headers = d.pop("headers", UNSET)
        headers: HttpToolSpecHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = HttpToolSpecHeaders.from_dict(_headers)

        _method = d.pop("method", UNSET)
        method: HttpMethod | Unset
        if isinstance(_method, Unset):
            method = UNSET
        else:
            method = HttpMethod(_method)

        _query = d.pop("query", UNSET)
        query: HttpToolSpecQuery | Unset
        if isinstance(_query, Unset):
            query = UNSET
        else:
            query = HttpToolSpecQuery.from_dict(_query)

        timeout_ms = d.pop("timeout_ms", UNSET)

        http_tool_spec = cls(
            url=url,
            headers=headers,
            method=method,
            query=query,
            timeout_ms=timeout_ms,
        )

        return http_tool_spec
