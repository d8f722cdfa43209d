from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_rpc_response_error_type_0 import JsonRpcResponseErrorType0
    from ..models.json_rpc_response_result_type_0 import JsonRpcResponseResultType0


T = TypeVar("T", bound="JsonRpcResponse")


@_attrs_define
class JsonRpcResponse:
    """A JSON-RPC 2.0 response: `result` or `error` (`code`, `message`, `data`).

    Attributes:
        jsonrpc (str):
        error (JsonRpcResponseErrorType0 | None | Unset):
        id (int | None | str | Unset):
        result (JsonRpcResponseResultType0 | None | Unset):
    """

    jsonrpc: str
    error: JsonRpcResponseErrorType0 | None | Unset = UNSET
    id: int | None | str | Unset = UNSET
    result: JsonRpcResponseResultType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.json_rpc_response_error_type_0 import JsonRpcResponseErrorType0
        from ..models.json_rpc_response_result_type_0 import JsonRpcResponseResultType0

        jsonrpc = self.jsonrpc

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, JsonRpcResponseErrorType0):
            error = self.error.to_dict()
        else:
            error = self.error

        id: int | None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        result: dict[str, Any] | None | Unset
        if isinstance(self.result, Unset):
            result = UNSET
        elif isinstance(self.result, JsonRpcResponseResultType0):
            result = self.result.to_dict()
        else:
            result = self.result

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "jsonrpc": jsonrpc,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if id is not UNSET:
            field_dict["id"] = id
        if result is not UNSET:
            field_dict["result"] = result

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_rpc_response_error_type_0 import JsonRpcResponseErrorType0
        from ..models.json_rpc_response_result_type_0 import JsonRpcResponseResultType0

        d = dict(src_dict)
        jsonrpc = d.pop("jsonrpc")

        def _parse_error(data: object) -> JsonRpcResponseErrorType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = JsonRpcResponseErrorType0.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JsonRpcResponseErrorType0 | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_id(data: object) -> int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_result(data: object) -> JsonRpcResponseResultType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                result_type_0 = JsonRpcResponseResultType0.from_dict(data)

                return result_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JsonRpcResponseResultType0 | None | Unset, data)

        result = _parse_result(d.pop("result", UNSET))

        json_rpc_response = cls(
            jsonrpc=jsonrpc,
            error=error,
            id=id,
            result=result,
        )

        json_rpc_response.additional_properties = d
        return json_rpc_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
