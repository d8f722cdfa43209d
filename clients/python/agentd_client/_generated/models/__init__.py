"""Contains all the data models used in inputs/outputs"""

from .ag_ui_event import AgUiEvent
from .agent_fallback import AgentFallback
from .agent_final_answer import AgentFinalAnswer
from .agent_max_iter import AgentMaxIter
from .agent_parse_error import AgentParseError
from .agent_spec import AgentSpec
from .agent_thought import AgentThought
from .alias_body import AliasBody
from .alias_list import AliasList
from .alias_move_body import AliasMoveBody
from .api_key import ApiKey
from .api_key_list import ApiKeyList
from .approval_request import ApprovalRequest
from .approval_request_arguments_type_0 import ApprovalRequestArgumentsType0
from .audit_entry import AuditEntry
from .audit_list import AuditList
from .audit_outcome import AuditOutcome
from .call_purpose import CallPurpose
from .case_reference import CaseReference
from .case_report import CaseReport
from .case_report_inputs import CaseReportInputs
from .catch_up import CatchUp
from .check import Check
from .chunking import Chunking
from .created_api_key import CreatedApiKey
from .crew_card_response_200 import CrewCardResponse200
from .crew_import import CrewImport
from .crew_import_mapping_type_0 import CrewImportMappingType0
from .crew_inputs import CrewInputs
from .crew_list import CrewList
from .crew_put_body import CrewPutBody
from .crew_put_body_inputs_schema_type_0 import CrewPutBodyInputsSchemaType0
from .crew_record import CrewRecord
from .crew_record_aliases import CrewRecordAliases
from .crew_spec import CrewSpec
from .crew_spec_inputs_schema_type_0 import CrewSpecInputsSchemaType0
from .crew_version_body import CrewVersionBody
from .crew_version_list import CrewVersionList
from .crew_version_summary import CrewVersionSummary
from .dataset_body import DatasetBody
from .dataset_case import DatasetCase
from .dataset_case_inputs import DatasetCaseInputs
from .dataset_list import DatasetList
from .dataset_request import DatasetRequest
from .dataset_summary import DatasetSummary
from .delivery_body import DeliveryBody
from .delivery_list import DeliveryList
from .discovery_card_response_200 import DiscoveryCardResponse200
from .divergence import Divergence
from .divergence_arguments import DivergenceArguments
from .document_body import DocumentBody
from .document_list import DocumentList
from .document_source import DocumentSource
from .document_status import DocumentStatus
from .empty import Empty
from .error_kind import ErrorKind
from .evaluation_body import EvaluationBody
from .evaluation_judged import EvaluationJudged
from .evaluation_list import EvaluationList
from .evaluation_mode import EvaluationMode
from .evaluation_request import EvaluationRequest
from .evaluation_summary import EvaluationSummary
from .event_data_type_0 import EventDataType0
from .event_data_type_0_type import EventDataType0Type
from .event_data_type_1 import EventDataType1
from .event_data_type_1_type import EventDataType1Type
from .event_data_type_2 import EventDataType2
from .event_data_type_2_type import EventDataType2Type
from .event_data_type_3 import EventDataType3
from .event_data_type_3_type import EventDataType3Type
from .event_data_type_4 import EventDataType4
from .event_data_type_4_type import EventDataType4Type
from .event_data_type_5 import EventDataType5
from .event_data_type_5_type import EventDataType5Type
from .event_data_type_6 import EventDataType6
from .event_data_type_6_type import EventDataType6Type
from .event_data_type_7 import EventDataType7
from .event_data_type_7_type import EventDataType7Type
from .event_data_type_8 import EventDataType8
from .event_data_type_8_type import EventDataType8Type
from .event_data_type_9 import EventDataType9
from .event_data_type_9_type import EventDataType9Type
from .event_data_type_10 import EventDataType10
from .event_data_type_10_type import EventDataType10Type
from .event_data_type_11 import EventDataType11
from .event_data_type_11_type import EventDataType11Type
from .event_data_type_12 import EventDataType12
from .event_data_type_12_type import EventDataType12Type
from .event_data_type_13 import EventDataType13
from .event_data_type_13_type import EventDataType13Type
from .event_data_type_14 import EventDataType14
from .event_data_type_14_type import EventDataType14Type
from .event_data_type_15 import EventDataType15
from .event_data_type_15_type import EventDataType15Type
from .event_data_type_16 import EventDataType16
from .event_data_type_16_type import EventDataType16Type
from .event_data_type_17 import EventDataType17
from .event_data_type_17_type import EventDataType17Type
from .event_data_type_18 import EventDataType18
from .event_data_type_18_type import EventDataType18Type
from .event_data_type_19 import EventDataType19
from .event_data_type_19_type import EventDataType19Type
from .event_data_type_20 import EventDataType20
from .event_data_type_20_type import EventDataType20Type
from .event_data_type_21 import EventDataType21
from .event_data_type_21_type import EventDataType21Type
from .event_data_type_22 import EventDataType22
from .event_data_type_22_type import EventDataType22Type
from .event_data_type_23 import EventDataType23
from .event_data_type_23_type import EventDataType23Type
from .event_data_type_24 import EventDataType24
from .event_data_type_24_type import EventDataType24Type
from .event_data_type_25 import EventDataType25
from .event_data_type_25_type import EventDataType25Type
from .event_data_type_26 import EventDataType26
from .event_data_type_26_type import EventDataType26Type
from .event_data_type_27 import EventDataType27
from .event_data_type_27_type import EventDataType27Type
from .event_data_type_28 import EventDataType28
from .event_data_type_28_type import EventDataType28Type
from .event_data_type_29 import EventDataType29
from .event_data_type_29_type import EventDataType29Type
from .event_data_type_30 import EventDataType30
from .event_data_type_30_type import EventDataType30Type
from .event_data_type_31 import EventDataType31
from .event_data_type_31_type import EventDataType31Type
from .event_data_type_32 import EventDataType32
from .event_data_type_32_type import EventDataType32Type
from .event_data_type_33 import EventDataType33
from .event_data_type_33_type import EventDataType33Type
from .event_data_type_34 import EventDataType34
from .event_data_type_34_type import EventDataType34Type
from .event_data_type_35 import EventDataType35
from .event_data_type_35_type import EventDataType35Type
from .expectations import Expectations
from .expectations_json_schema_type_0 import ExpectationsJsonSchemaType0
from .field_error import FieldError
from .forgotten import Forgotten
from .fork_changes import ForkChanges
from .fork_changes_agents import ForkChangesAgents
from .fork_changes_inputs import ForkChangesInputs
from .fork_changes_tasks import ForkChangesTasks
from .fork_point import ForkPoint
from .fork_request import ForkRequest
from .forked_from import ForkedFrom
from .guardrail_verdict import GuardrailVerdict
from .health import Health
from .http_method import HttpMethod
from .http_tool_spec import HttpToolSpec
from .http_tool_spec_headers import HttpToolSpecHeaders
from .http_tool_spec_query import HttpToolSpecQuery
from .import_format import ImportFormat
from .import_warning import ImportWarning_
from .imported_crew import ImportedCrew
from .json_rpc_message import JsonRpcMessage
from .json_rpc_message_params import JsonRpcMessageParams
from .json_rpc_response import JsonRpcResponse
from .json_rpc_response_error_type_0 import JsonRpcResponseErrorType0
from .json_rpc_response_result_type_0 import JsonRpcResponseResultType0
from .key_end import KeyEnd
from .kickoff_webhook import KickoffWebhook
from .knowledge_base_body import KnowledgeBaseBody
from .knowledge_base_list import KnowledgeBaseList
from .knowledge_hit import KnowledgeHit
from .knowledge_retrieved import KnowledgeRetrieved
from .knowledge_use import KnowledgeUse
from .llm_finished import LlmFinished
from .llm_options import LlmOptions
from .llm_started import LlmStarted
from .mcp_server_spec import McpServerSpec
from .mcp_server_spec_headers import McpServerSpecHeaders
from .mcp_server_spec_idempotent import McpServerSpecIdempotent
from .memory_item import MemoryItem
from .memory_kind import MemoryKind
from .memory_list import MemoryList
from .memory_retrieved import MemoryRetrieved
from .memory_saved import MemorySaved
from .memory_spec import MemorySpec
from .message import Message
from .message_list import MessageList
from .message_tool_calls_type_0_item import MessageToolCallsType0Item
from .multitask_strategy import MultitaskStrategy
from .named_quotas import NamedQuotas
from .new_api_key import NewApiKey
from .new_document_json import NewDocumentJson
from .new_document_upload import NewDocumentUpload
from .new_knowledge_base import NewKnowledgeBase
from .new_memory_note import NewMemoryNote
from .new_schedule import NewSchedule
from .new_schedule_kickoff import NewScheduleKickoff
from .new_thread import NewThread
from .new_thread_metadata import NewThreadMetadata
from .overlap import Overlap
from .plan_step import PlanStep
from .problem import Problem
from .process import Process
from .publish import Publish
from .quotas import Quotas
from .recalled_memory import RecalledMemory
from .report_summary import ReportSummary
from .resume_entry import ResumeEntry
from .resume_entry_metadata_type_0 import ResumeEntryMetadataType0
from .resume_entry_payload_type_0 import ResumeEntryPayloadType0
from .resume_request_type_0 import ResumeRequestType0
from .resume_request_type_1 import ResumeRequestType1
from .resume_status import ResumeStatus
from .retrieved_chunk import RetrievedChunk
from .run import Run
from .run_agent_input import RunAgentInput
from .run_agent_input_context_type_0_item import RunAgentInputContextType0Item
from .run_agent_input_forwarded_props_type_0 import RunAgentInputForwardedPropsType0
from .run_agent_input_messages_item import RunAgentInputMessagesItem
from .run_agent_input_state_type_0 import RunAgentInputStateType0
from .run_agent_input_tools_type_0_item import RunAgentInputToolsType0Item
from .run_batch import RunBatch
from .run_completed import RunCompleted
from .run_details import RunDetails
from .run_details_inputs import RunDetailsInputs
from .run_details_metadata import RunDetailsMetadata
from .run_error import RunError
from .run_failed import RunFailed
from .run_forked import RunForked
from .run_links import RunLinks
from .run_list import RunList
from .run_resumed import RunResumed
from .run_retried import RunRetried
from .run_started import RunStarted
from .run_status import RunStatus
from .run_summary import RunSummary
from .run_throttled import RunThrottled
from .saved_memory import SavedMemory
from .schedule import Schedule
from .schedule_kickoff import ScheduleKickoff
from .schedule_list import ScheduleList
from .schedule_patch import SchedulePatch
from .schedule_patch_kickoff import SchedulePatchKickoff
from .schedule_runs import ScheduleRuns
from .schedule_tick import ScheduleTick
from .scope import Scope
from .search_mode import SearchMode
from .search_result import SearchResult
from .secret_list import SecretList
from .secret_record import SecretRecord
from .secret_ref import SecretRef
from .secret_value import SecretValue
from .sse_message import SseMessage
from .step_completed import StepCompleted
from .step_failed import StepFailed
from .step_started import StepStarted
from .stream_closed import StreamClosed
from .task_answered import TaskAnswered
from .task_completed import TaskCompleted
from .task_failed import TaskFailed
from .task_output import TaskOutput
from .task_output_json_type_0 import TaskOutputJsonType0
from .task_planned import TaskPlanned
from .task_run import TaskRun
from .task_spec import TaskSpec
from .task_spec_output_schema_type_0 import TaskSpecOutputSchemaType0
from .task_started import TaskStarted
from .task_status import TaskStatus
from .tenant import Tenant
from .tenant_list import TenantList
from .tenant_usage import TenantUsage
from .thread import Thread
from .thread_list import ThreadList
from .thread_metadata import ThreadMetadata
from .thread_removed import ThreadRemoved
from .thread_run import ThreadRun
from .thread_status import ThreadStatus
from .tick_outcome import TickOutcome
from .token_usage import TokenUsage
from .tool_call import ToolCall
from .tool_call_approval_type_0 import ToolCallApprovalType0
from .tool_call_arguments import ToolCallArguments
from .tool_call_list import ToolCallList
from .tool_calling import ToolCalling
from .tool_failed import ToolFailed
from .tool_finished import ToolFinished
from .tool_info import ToolInfo
from .tool_info_parameters import ToolInfoParameters
from .tool_list import ToolList
from .tool_rejected import ToolRejected
from .tool_spec import ToolSpec
from .tool_spec_parameters import ToolSpecParameters
from .tool_spec_parameters_type import ToolSpecParametersType
from .tool_started import ToolStarted
from .tool_started_arguments import ToolStartedArguments
from .usage import Usage
from .usage_line import UsageLine
from .webhook_body import WebhookBody
from .webhook_create import WebhookCreate
from .webhook_list import WebhookList
from .webhook_patch import WebhookPatch
from .webhook_with_secret import WebhookWithSecret
from .who_am_i import WhoAmI

__all__ = (
    "AgUiEvent",
    "AgentFallback",
    "AgentFinalAnswer",
    "AgentMaxIter",
    "AgentParseError",
    "AgentSpec",
    "AgentThought",
    "AliasBody",
    "AliasList",
    "AliasMoveBody",
    "ApiKey",
    "ApiKeyList",
    "ApprovalRequest",
    "ApprovalRequestArgumentsType0",
    "AuditEntry",
    "AuditList",
    "AuditOutcome",
    "CallPurpose",
    "CaseReference",
    "CaseReport",
    "CaseReportInputs",
    "CatchUp",
    "Check",
    "Chunking",
    "CreatedApiKey",
    "CrewCardResponse200",
    "CrewImport",
    "CrewImportMappingType0",
    "CrewInputs",
    "CrewList",
    "CrewPutBody",
    "CrewPutBodyInputsSchemaType0",
    "CrewRecord",
    "CrewRecordAliases",
    "CrewSpec",
    "CrewSpecInputsSchemaType0",
    "CrewVersionBody",
    "CrewVersionList",
    "CrewVersionSummary",
    "DatasetBody",
    "DatasetCase",
    "DatasetCaseInputs",
    "DatasetList",
    "DatasetRequest",
    "DatasetSummary",
    "DeliveryBody",
    "DeliveryList",
    "DiscoveryCardResponse200",
    "Divergence",
    "DivergenceArguments",
    "DocumentBody",
    "DocumentList",
    "DocumentSource",
    "DocumentStatus",
    "Empty",
    "ErrorKind",
    "EvaluationBody",
    "EvaluationJudged",
    "EvaluationList",
    "EvaluationMode",
    "EvaluationRequest",
    "EvaluationSummary",
    "EventDataType0",
    "EventDataType0Type",
    "EventDataType1",
    "EventDataType1Type",
    "EventDataType2",
    "EventDataType2Type",
    "EventDataType3",
    "EventDataType3Type",
    "EventDataType4",
    "EventDataType4Type",
    "EventDataType5",
    "EventDataType5Type",
    "EventDataType6",
    "EventDataType6Type",
    "EventDataType7",
    "EventDataType7Type",
    "EventDataType8",
    "EventDataType8Type",
    "EventDataType9",
    "EventDataType9Type",
    "EventDataType10",
    "EventDataType10Type",
    "EventDataType11",
    "EventDataType11Type",
    "EventDataType12",
    "EventDataType12Type",
    "EventDataType13",
    "EventDataType13Type",
    "EventDataType14",
    "EventDataType14Type",
    "EventDataType15",
    "EventDataType15Type",
    "EventDataType16",
    "EventDataType16Type",
    "EventDataType17",
    "EventDataType17Type",
    "EventDataType18",
    "EventDataType18Type",
    "EventDataType19",
    "EventDataType19Type",
    "EventDataType20",
    "EventDataType20Type",
    "EventDataType21",
    "EventDataType21Type",
    "EventDataType22",
    "EventDataType22Type",
    "EventDataType23",
    "EventDataType23Type",
    "EventDataType24",
    "EventDataType24Type",
    "EventDataType25",
    "EventDataType25Type",
    "EventDataType26",
    "EventDataType26Type",
    "EventDataType27",
    "EventDataType27Type",
    "EventDataType28",
    "EventDataType28Type",
    "EventDataType29",
    "EventDataType29Type",
    "EventDataType30",
    "EventDataType30Type",
    "EventDataType31",
    "EventDataType31Type",
    "EventDataType32",
    "EventDataType32Type",
    "EventDataType33",
    "EventDataType33Type",
    "EventDataType34",
    "EventDataType34Type",
    "EventDataType35",
    "EventDataType35Type",
    "Expectations",
    "ExpectationsJsonSchemaType0",
    "FieldError",
    "Forgotten",
    "ForkChanges",
    "ForkChangesAgents",
    "ForkChangesInputs",
    "ForkChangesTasks",
    "ForkPoint",
    "ForkRequest",
    "ForkedFrom",
    "GuardrailVerdict",
    "Health",
    "HttpMethod",
    "HttpToolSpec",
    "HttpToolSpecHeaders",
    "HttpToolSpecQuery",
    "ImportFormat",
    "ImportWarning_",
    "ImportedCrew",
    "JsonRpcMessage",
    "JsonRpcMessageParams",
    "JsonRpcResponse",
    "JsonRpcResponseErrorType0",
    "JsonRpcResponseResultType0",
    "KeyEnd",
    "KickoffWebhook",
    "KnowledgeBaseBody",
    "KnowledgeBaseList",
    "KnowledgeHit",
    "KnowledgeRetrieved",
    "KnowledgeUse",
    "LlmFinished",
    "LlmOptions",
    "LlmStarted",
    "McpServerSpec",
    "McpServerSpecHeaders",
    "McpServerSpecIdempotent",
    "MemoryItem",
    "MemoryKind",
    "MemoryList",
    "MemoryRetrieved",
    "MemorySaved",
    "MemorySpec",
    "Message",
    "MessageList",
    "MessageToolCallsType0Item",
    "MultitaskStrategy",
    "NamedQuotas",
    "NewApiKey",
    "NewDocumentJson",
    "NewDocumentUpload",
    "NewKnowledgeBase",
    "NewMemoryNote",
    "NewSchedule",
    "NewScheduleKickoff",
    "NewThread",
    "NewThreadMetadata",
    "Overlap",
    "PlanStep",
    "Problem",
    "Process",
    "Publish",
    "Quotas",
    "RecalledMemory",
    "ReportSummary",
    "ResumeEntry",
    "ResumeEntryMetadataType0",
    "ResumeEntryPayloadType0",
    "ResumeRequestType0",
    "ResumeRequestType1",
    "ResumeStatus",
    "RetrievedChunk",
    "Run",
    "RunAgentInput",
    "RunAgentInputContextType0Item",
    "RunAgentInputForwardedPropsType0",
    "RunAgentInputMessagesItem",
    "RunAgentInputStateType0",
    "RunAgentInputToolsType0Item",
    "RunBatch",
    "RunCompleted",
    "RunDetails",
    "RunDetailsInputs",
    "RunDetailsMetadata",
    "RunError",
    "RunFailed",
    "RunForked",
    "RunLinks",
    "RunList",
    "RunResumed",
    "RunRetried",
    "RunStarted",
    "RunStatus",
    "RunSummary",
    "RunThrottled",
    "SavedMemory",
    "Schedule",
    "ScheduleKickoff",
    "ScheduleList",
    "SchedulePatch",
    "SchedulePatchKickoff",
    "ScheduleRuns",
    "ScheduleTick",
    "Scope",
    "SearchMode",
    "SearchResult",
    "SecretList",
    "SecretRecord",
    "SecretRef",
    "SecretValue",
    "SseMessage",
    "StepCompleted",
    "StepFailed",
    "StepStarted",
    "StreamClosed",
    "TaskAnswered",
    "TaskCompleted",
    "TaskFailed",
    "TaskOutput",
    "TaskOutputJsonType0",
    "TaskPlanned",
    "TaskRun",
    "TaskSpec",
    "TaskSpecOutputSchemaType0",
    "TaskStarted",
    "TaskStatus",
    "Tenant",
    "TenantList",
    "TenantUsage",
    "Thread",
    "ThreadList",
    "ThreadMetadata",
    "ThreadRemoved",
    "ThreadRun",
    "ThreadStatus",
    "TickOutcome",
    "TokenUsage",
    "ToolCall",
    "ToolCallApprovalType0",
    "ToolCallArguments",
    "ToolCallList",
    "ToolCalling",
    "ToolFailed",
    "ToolFinished",
    "ToolInfo",
    "ToolInfoParameters",
    "ToolList",
    "ToolRejected",
    "ToolSpec",
    "ToolSpecParameters",
    "ToolSpecParametersType",
    "ToolStarted",
    "ToolStartedArguments",
    "Usage",
    "UsageLine",
    "WebhookBody",
    "WebhookCreate",
    "WebhookList",
    "WebhookPatch",
    "WebhookWithSecret",
    "WhoAmI",
)
