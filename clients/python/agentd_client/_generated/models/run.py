from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.forked_from import ForkedFrom
    from ..models.run_details_inputs import RunDetailsInputs
    from ..models.run_details_metadata import RunDetailsMetadata
    from ..models.run_error import RunError
    from ..models.run_links import RunLinks
    from ..models.task_output import TaskOutput
    from ..models.task_run import TaskRun
    from ..models.usage import Usage
    from ..models.usage_line import UsageLine


T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """A run as the API returns it: the run and links to its resources.

    Attributes:
        attempt (int): How many times a worker has claimed the run (0 while it waits for its first claim).
        created_at (datetime.datetime):
        crew_name (str):
        fake_llm (bool): True when a model of the run's crew is served by a fake provider (`kind = "fake"` in the
            server's configuration): its replies are scripted, not a real model's.
        id (UUID): The id of a run.
        inputs (RunDetailsInputs):
        metadata (RunDetailsMetadata):
        status (RunStatus): Where a run is in its life. Mirrors the `runs.status` CHECK constraint.
        tasks (list[TaskRun]):
        tenant (str): The tenant that owns the run (the kickoff's key's).
        usage (Usage): Counters of what a run consumed.
        links (RunLinks): Links to a run's resources.
        crew_version (int | None | Unset): The version of the registered crew the run runs (a kickoff naming `name`,
            `name@3` or
            `name@alias` records the version it resolved to); absent for a crew given inline.
        error (None | RunError | Unset):
        finished_at (datetime.datetime | None | Unset):
        forked_from (ForkedFrom | None | Unset):
        output (None | TaskOutput | Unset):
        started_at (datetime.datetime | None | Unset):
        thread_id (None | Unset | UUID): The thread the run belongs to (a kickoff's `thread_id`); absent for a run of
            none.
        trace_id (None | str | Unset): The OpenTelemetry trace the run's spans belong to (32 hex digits): the kickoff's
            `traceparent`'s, or the run's own when traces are on; absent otherwise.
        usage_breakdown (list[UsageLine] | None | Unset): The usage split by task, agent and model (`GET /v1/runs/{id}`
            only; absent in lists).
    """

    attempt: int
    created_at: datetime.datetime
    crew_name: str
    fake_llm: bool
    id: UUID
    inputs: RunDetailsInputs
    metadata: RunDetailsMetadata
    status: RunStatus
    tasks: list[TaskRun]
    tenant: str
    usage: Usage
    links: RunLinks
    crew_version: int | None | Unset = UNSET
    error: None | RunError | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    forked_from: ForkedFrom | None | Unset = UNSET
    output: None | TaskOutput | Unset = UNSET
    started_at: datetime.datetime | None | Unset = UNSET
    thread_id: None | Unset | UUID = UNSET
    trace_id: None | str | Unset = UNSET
    usage_breakdown: list[UsageLine] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.forked_from import ForkedFrom
        from ..models.run_error import RunError
        from ..models.task_output import TaskOutput

        attempt = self.attempt

        created_at = self.created_at.isoformat()

        crew_name = self.crew_name

        fake_llm = self.fake_llm

        id = str(self.id)

        inputs = self.inputs.to_dict()

        metadata = self.metadata.to_dict()

        status = self.status.value

        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        tenant = self.tenant

        usage = self.usage.to_dict()

        links = self.links.to_dict()

        crew_version: int | None | Unset
        if isinstance(self.crew_version, Unset):
            crew_version = UNSET
        else:
            crew_version = self.crew_version

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, RunError):
            error = self.error.to_dict()
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        forked_from: dict[str, Any] | None | Unset
        if isinstance(self.forked_from, Unset):
            forked_from = UNSET
        elif isinstance(self.forked_from, ForkedFrom):
            forked_from = self.forked_from.to_dict()
        else:
            forked_from = self.forked_from

        output: dict[str, Any] | None | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        elif isinstance(self.output, TaskOutput):
            output = self.output.to_dict()
        else:
            output = self.output

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        elif isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        thread_id: None | str | Unset
        if isinstance(self.thread_id, Unset):
            thread_id = UNSET
        elif isinstance(self.thread_id, UUID):
            thread_id = str(self.thread_id)
        else:
            thread_id = self.thread_id

        trace_id: None | str | Unset
        if isinstance(self.trace_id, Unset):
            trace_id = UNSET
        else:
            trace_id = self.trace_id

        usage_breakdown: list[dict[str, Any]] | None | Unset
        if isinstance(self.usage_breakdown, Unset):
            usage_breakdown = UNSET
        elif isinstance(self.usage_breakdown, list):
            usage_breakdown = []
            for usage_breakdown_type_0_item_data in self.usage_breakdown:
                usage_breakdown_type_0_item = usage_breakdown_type_0_item_data.to_dict()
                usage_breakdown.append(usage_breakdown_type_0_item)

        else:
            usage_breakdown = self.usage_breakdown

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "crew_name": crew_name,
                "fake_llm": fake_llm,
                "id": id,
                "inputs": inputs,
                "metadata": metadata,
                "status": status,
                "tasks": tasks,
                "tenant": tenant,
                "usage": usage,
                "links": links,
            }
        )
        if crew_version is not UNSET:
            field_dict["crew_version"] = crew_version
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if forked_from is not UNSET:
            field_dict["forked_from"] = forked_from
        if output is not UNSET:
            field_dict["output"] = output
        if started_at is not UNSET:
            field_dict["started_at"] = started_at
        if thread_id is not UNSET:
            field_dict["thread_id"] = thread_id
        if trace_id is not UNSET:
            field_dict["trace_id"] = trace_id
        if usage_breakdown is not UNSET:
            field_dict["usage_breakdown"] = usage_breakdown

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.forked_from import ForkedFrom
        from ..models.run_details_inputs import RunDetailsInputs
        from ..models.run_details_metadata import RunDetailsMetadata
        from ..models.run_error import RunError
        from ..models.run_links import RunLinks
        from ..models.task_output import TaskOutput
        from ..models.task_run import TaskRun
        from ..models.usage import Usage
        from ..models.usage_line import UsageLine

        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        crew_name = d.pop("crew_name")

        fake_llm = d.pop("fake_llm")

        id = UUID(d.pop("id"))

        inputs = RunDetailsInputs.from_dict(d.pop("inputs"))

        metadata = RunDetailsMetadata.from_dict(d.pop("metadata"))

        status = RunStatus(d.pop("status"))

        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = TaskRun.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        tenant = d.pop("tenant")

        usage = Usage.from_dict(d.pop("usage"))

        links = RunLinks.from_dict(d.pop("links"))

        def _parse_crew_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        crew_version = _parse_crew_version(d.pop("crew_version", UNSET))

        def _parse_error(data: object) -> None | RunError | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_1 = RunError.from_dict(data)

                return error_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunError | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_forked_from(data: object) -> ForkedFrom | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                forked_from_type_1 = ForkedFrom.from_dict(data)

                return forked_from_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ForkedFrom | None | Unset, data)

        forked_from = _parse_forked_from(d.pop("forked_from", UNSET))

        def _parse_output(data: object) -> None | TaskOutput | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_type_1 = TaskOutput.from_dict(data)

                return output_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskOutput | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        def _parse_started_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        def _parse_thread_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                thread_id_type_0 = UUID(data)

                return thread_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        thread_id = _parse_thread_id(d.pop("thread_id", UNSET))

        def _parse_trace_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        trace_id = _parse_trace_id(d.pop("trace_id", UNSET))

        def _parse_usage_breakdown(data: object) -> list[UsageLine] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                usage_breakdown_type_0 = []
                _usage_breakdown_type_0 = data
                for usage_breakdown_type_0_item_data in _usage_breakdown_type_0:
                    usage_breakdown_type_0_item = UsageLine.from_dict(
                        usage_breakdown_type_0_item_data
                    )

                    usage_breakdown_type_0.append(usage_breakdown_type_0_item)

                return usage_breakdown_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[UsageLine] | None | Unset, data)

        usage_breakdown = _parse_usage_breakdown(d.pop("usage_breakdown", UNSET))

        run = cls(
            attempt=attempt,
            created_at=created_at,
            crew_name=crew_name,
            fake_llm=fake_llm,
            id=id,
            inputs=inputs,
            metadata=metadata,
            status=status,
            tasks=tasks,
            tenant=tenant,
            usage=usage,
            links=links,
            crew_version=crew_version,
            error=error,
            finished_at=finished_at,
            forked_from=forked_from,
            output=output,
            started_at=started_at,
            thread_id=thread_id,
            trace_id=trace_id,
            usage_breakdown=usage_breakdown,
        )

        run.additional_properties = d
        return run

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
