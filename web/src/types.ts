// Wire types of the Weft HTTP API and run events (docs/protocol.md).
//
// They are aliases of `openapi.gen.ts`, which `npm run gen:api` generates from the
// checked-in `openapi.json` (itself generated from the gateway's Rust types), so the
// UI cannot drift from the API: a changed DTO changes these types and `tsc` points
// at every use. `npm test` fails while `openapi.gen.ts` is stale (`npm run check:api`).
//
// Only what the document does not say is written by hand here, marked as such.

import type { components } from './openapi.gen'

type Schemas = components['schemas']

export type User = Schemas['UserDto']
export type Storage = Schemas['StorageDto']
export type Session = Schemas['SessionDto']
export type SessionList = Schemas['SessionList']
export type ToolCallRef = Schemas['ToolCallDto']
export type Message = Schemas['MessageDto']
/** A file sent with a user message; `GET /v1/files/{id}` returns its bytes. */
export type Attachment = Schemas['AttachmentDto']
export type AttachmentKind = Schemas['AttachmentKind']
export type MessageList = Schemas['MessageList']
export type Usage = Schemas['UsageDto']
export type ErrorBody = Schemas['ErrorBody']
export type ErrorEnvelope = Schemas['ErrorEnvelope']
export type Run = Schemas['RunDto']
/** Where a run stands (generated: a status the server adds fails tsc wherever one is matched exhaustively). */
export type RunStatus = Schemas['RunStatus']
export type Model = Schemas['ModelDto']
export type LoginResponse = Schemas['LoginResponse']
/** One of your tokens: `kind` is `api`, `login` (a web sign-in) or `bootstrap`; `current` marks this browser's. */
export type ApiToken = Schemas['TokenDto']
export type TokenList = Schemas['TokenList']
export type CreatedToken = Schemas['CreatedToken']
export type ChangePasswordRequest = Schemas['ChangePasswordRequest']
export type CreateSessionRequest = Schemas['CreateSessionRequest']
export type UpdateSessionRequest = Schemas['UpdateSessionRequest']
export type CreateUserRequest = Schemas['CreateUserRequest']
export type UpdateUserRequest = Schemas['UpdateUserRequest']
export type Limits = Schemas['LimitsDto']
export type Multitask = Schemas['Multitask']
export type SendMessageRequest = Schemas['SendMessageRequest']
/** 202 of a send: a run was created (`run_id`), or the message waits behind `active_run_id` (`status` = `queued`). */
export type SendResult = Schemas['SendAccepted']
/** A run event (docs/protocol.md, "Run events"); narrow on `type`. */
export type RunEvent = Schemas['RunEvent']
export type RunEventType = RunEvent['type']
/** A tool call waiting for (or given) a decision; `status` is `pending`, `approved`, `denied` or `expired`. */
export type Approval = Schemas['ApprovalDto']
export type ApprovalList = Schemas['ApprovalList']
export type ApprovalDecision = Schemas['ApprovalDecision']
/** A question the agent asked (`ask_user`); `status` is `pending`, `answered` or `expired`. */
export type Question = Schemas['QuestionDto']
export type QuestionList = Schemas['QuestionList']
export type QuestionStatus = Schemas['QuestionStatus']
/** One answer (a typed text or one option), or several options when the question allows `multiple`. */
export type AnswerValue = Schemas['AnswerValue']
/** A plan the agent proposed in plan mode; `status` is `proposed`, `approved`, `rejected`, `revised` or `expired`. */
export type Plan = Schemas['PlanDto']
export type PlanList = Schemas['PlanList']
export type PlanStatus = Schemas['PlanStatus']
/** `approve`, `reject` or `revise` (with a comment saying what to change). */
export type PlanDecision = Schemas['PlanDecision']
export type DecidePlanRequest = Schemas['DecidePlanRequest']
/** Where a delegated run stands (`agent_start` / `agent_end`): `running`, then `succeeded`, `failed` or `cancelled`. */
export type DelegationStatus = Schemas['DelegationStatus']
/** A task a run handed to another agent (`delegate`), with its child's session and run. */
export type Delegation = Schemas['DelegationDto']
export type DelegationList = Schemas['DelegationList']
/** `GET /v1/mcp` (admin): the configured MCP servers, and each reporting worker's view of them. */
export type McpStatusList = Schemas['McpStatusList']
export type SettingsView = Schemas['SettingsDto']
export type ReloadResponse = Schemas['ReloadResponse']
export type ConfigChange = Schemas['ConfigChangeDto']
export type McpWorkerStatus = Schemas['McpWorkerStatus']
/** `state` is `starting`, `ready`, `error` or `stopped`; `policy` `auto`, `confirm` or `deny`. */
export type McpServer = Schemas['McpServerDto']
/** An agent (`GET /v1/agents`): `tools` null means every tool; `origin` is `builtin`, `config` or `admin`. */
export type Agent = Schemas['AgentDto']
export type AgentList = Schemas['AgentList']
export type PutAgentRequest = Schemas['PutAgentRequest']
/** `GET/PUT /v1/me/instructions`: the user's own instructions, added after the agent's. */
export type Instructions = Schemas['InstructionsDto']
/** `GET /v1/sessions/{id}/system-prompt`: exactly what the session's model is sent. */
export type SystemPrompt = Schemas['SystemPromptDto']
/** One reply of the newest turn (`GET /v1/sessions/{id}/alternatives`). */
export type Alternative = Schemas['AlternativeDto']
export type AlternativeList = Schemas['AlternativeList']
/** The run an undo, redo or alternative choice touched, or a regenerate/edit started. */
export type TurnResult = Schemas['TurnResult']
/** The stored summary of a session's older messages. */
export type Summary = Schemas['SummaryDto']
/** A source an answer cites as `[n]` (the `citations` event; `citations` on a stored reply). */
export type Citation = Schemas['Citation']
export type MemoryRef = Schemas['MemoryRef']
export type TodoItem = Schemas['TodoItem']
export type TodoList = Schemas['TodoList']
/** One of your memories (`GET /v1/me/memories`); times are milliseconds since the epoch. */
export type Memory = Schemas['MemoryDto']
/** `fact`, `episode` or `procedure`. */
export type MemoryKind = Schemas['MemoryKind']
/** `manual` (added by hand) or `conversation` (with the session it came from). */
export type MemorySource = Schemas['MemorySource']
/** Your memories and your switch (`enabled`); `available`: the instance has memory at all. */
export type MemoryList = Schemas['MemoryList']
export type CreateMemory = Schemas['CreateMemory']
export type PatchMemory = Schemas['PatchMemory']
export type MemoriesForgotten = Schemas['MemoriesForgotten']
export type MemorySwitch = Schemas['MemorySwitch']
/** `GET /v1/knowledge/{id}/documents/{doc}/chunks`: a stretch of a document's text, and its chunk count. */
export type DocumentChunks = Schemas['DocumentChunks']
export type DocumentChunk = Schemas['DocumentChunk']
/** A knowledge base (`GET /v1/knowledge`); `can_edit`: you may change or delete it (owner or admin). */
export type KnowledgeBase = Schemas['KnowledgeBaseDto']
export type KnowledgeBaseList = Schemas['KnowledgeBaseList']
export type CreateKnowledgeBase = Schemas['CreateKnowledgeBase']
export type KnowledgeVisibility = Schemas['KnowledgeVisibility']
/** A base's document; `status` goes `queued` → `processing` → `ready` or `failed` (with `error`). */
export type KnowledgeDocument = Schemas['KnowledgeDocumentDto']
export type KnowledgeEvent = Schemas['KnowledgeEvent']
export type DocumentStatus = Schemas['DocumentStatus']
export type KnowledgeDocumentList = Schemas['KnowledgeDocumentList']
export type KnowledgeUploadResult = Schemas['KnowledgeUploadResult']
/** One file of an upload: its document, and `created: false` when the base already had these bytes. */
export type KnowledgeUploaded = Schemas['KnowledgeUploaded']
export type KnowledgeHit = Schemas['KnowledgeHit']
export type KnowledgeSearchResults = Schemas['KnowledgeSearchResults']
/** `lexical` (the full-text index) or `hybrid` (the full-text index and vectors, fused). */
export type SearchMode = Schemas['SearchMode']
/** A document's ingestion under way: `reading`, or `embedding` with chunks `done` of `total`. */
export type IngestProgress = Schemas['IngestProgress']
/** How an agent uses its bases: `tool` (the model searches) or `auto` (passages put in the context). */
export type KnowledgeMode = Schemas['KnowledgeMode']

/** A schedule (`GET /v1/schedules`): `next_fire_at` is RFC 3339 in its `timezone`; `describe` is the trigger in words. */
export type Schedule = Schemas['ScheduleDto']
export type ScheduleList = Schemas['ScheduleList']
/** Exactly one of `{cron}`, `{every_secs}` (at least 60) or `{at}` (RFC 3339, once). */
export type Trigger = Schemas['Trigger']
/** `new_session` (a fresh session each fire) or `{session}` (one of yours). */
export type ScheduleTarget = Schemas['ScheduleTarget']
/** `skip` or `run_once`: what a fire found late after downtime does. */
export type Misfire = Schemas['Misfire']
/** `skip` or `queue`: what a fire does while the previous run is still going. */
export type Overlap = Schemas['Overlap']
/** One fire in a schedule's history; `fire_at` and `fired_at` are RFC 3339 in UTC. */
export type Fire = Schemas['FireDto']
/** `started`, `queued`, `skipped`, `missed` or `refused` (with `detail`). */
export type FireOutcome = Schemas['FireOutcome']
export type FireList = Schemas['FireList']
export type CreateScheduleRequest = Schemas['CreateScheduleRequest']
export type UpdateScheduleRequest = Schemas['UpdateScheduleRequest']
export type SchedulePreviewRequest = Schemas['PreviewRequest']
/** A trigger's next fire times (RFC 3339 in the timezone) and the trigger in words. */
export type SchedulePreview = Schemas['PreviewResponse']
/**
 * Your timezone (`GET/PUT /v1/me/timezone`): `timezone` is the one you set (null:
 * none), `effective` what your new schedules take — yours, else the server's
 * `schedules.default_timezone`. Read only: a PUT sends `timezone` alone.
 */
export type TimezoneDto = Schemas['TimezoneDto']
export type SetTimezoneRequest = Schemas['SetTimezoneRequest']

/**
 * One entry of your inbox (`GET /v1/me/notifications`): a scheduled run that ended
 * or waits for you, a run of your own that waits for you, or a test message sent
 * to one of your channels. Not
 * `Notification`, which is the browser's.
 */
export type NotificationItem = Schemas['NotificationDto']
/**
 * `schedule_finished`, `schedule_waiting`, `run_waiting` (a run of the person's own
 * waits for them; only with a channel that takes waits) or `channel_test` (already
 * read when it comes).
 */
export type NotificationKind = Schemas['NotificationKind']
/** Newest first, and how many of yours are unread. */
export type NotificationList = Schemas['NotificationList']

/** A channel (`GET /v1/channels`): where your notifications go besides the inbox. */
export type Channel = Schemas['ChannelDto']
export type ChannelList = Schemas['ChannelList']
/**
 * `{kind: 'lark', chat_id?}` (no chat: a direct message to you), `{kind: 'webhook',
 * url, secret?}` (the secret only in the answer that made or changed it) or
 * `{kind: 'email', to}`.
 */
export type ChannelTarget = Schemas['ChannelTarget']
export type ChannelKind = Schemas['ChannelKind']
export type CreateChannelRequest = Schemas['CreateChannelRequest']
export type UpdateChannelRequest = Schemas['UpdateChannelRequest']
/** One notification's delivery to one channel: `pending` (perhaps retrying, with `error`), then `delivered` or `failed`. */
export type Delivery = Schemas['DeliveryDto']
export type DeliveryList = Schemas['DeliveryList']
export type DeliveryStatus = Schemas['DeliveryStatus']

/**
 * Hand-written: the document gives `role` as a plain string ("`admin` or `user`"
 * in prose), and the UI needs the two values to offer them.
 */
export type Role = 'admin' | 'user'

// Every run event type, for `EventSource.addEventListener` (SSE names each message
// by its type). A record, so `tsc` fails if openapi.json gains or loses a type.
const EVENT_TYPES: Record<RunEventType, true> = {
  run_started: true,
  text: true,
  thinking: true,
  tool_start: true,
  tool_end: true,
  approval_required: true,
  approval_decided: true,
  question: true,
  question_answered: true,
  plan_proposed: true,
  plan_decided: true,
  agent_start: true,
  agent_end: true,
  usage: true,
  memory_used: true,
  todo: true,
  citations: true,
  retrying: true,
  heartbeat: true,
  done: true,
  error: true,
  cancelled: true,
}

export const RUN_EVENT_TYPES = Object.keys(EVENT_TYPES) as readonly RunEventType[]
