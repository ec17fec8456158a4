// The one place the web UI talks HTTP to the gateway (docs/protocol.md, "HTTP API").
//
// Same-origin requests are authenticated by the HttpOnly session cookie set at
// login. Cookie-authenticated writes must carry a JSON body or the CSRF header, so
// every non-GET request sends the header, and a JSON body unless it is a multipart
// send with files (an empty body is sent as `{}`). Errors come
// back as `{"error":{"code","message"}}` and are thrown as `ApiError`.

import type {
  Agent,
  AgentList,
  AlternativeList,
  AnswerValue,
  Approval,
  ApprovalDecision,
  ApprovalList,
  ChangePasswordRequest,
  Channel,
  ChannelList,
  CreatedToken,
  CreateChannelRequest,
  CreateMemory,
  CreateScheduleRequest,
  CreateSessionRequest,
  CreateUserRequest,
  DelegationList,
  Delivery,
  DeliveryList,
  DocumentChunks,
  Fire,
  FireList,
  Instructions,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeDocumentList,
  KnowledgeSearchResults,
  KnowledgeUploaded,
  KnowledgeUploadResult,
  KnowledgeVisibility,
  Limits,
  LoginResponse,
  McpStatusList,
  MemoriesForgotten,
  Memory,
  MemoryKind,
  MemoryList,
  MemorySwitch,
  MessageList,
  NotificationList,
  Model,
  PatchMemory,
  Plan,
  PlanDecision,
  PlanList,
  PutAgentRequest,
  Question,
  QuestionList,
  TodoList,
  ReloadResponse,
  Role,
  Run,
  Schedule,
  ScheduleList,
  SchedulePreview,
  SchedulePreviewRequest,
  SendMessageRequest,
  SendResult,
  Session,
  SessionList,
  SettingsView,
  Summary,
  SystemPrompt,
  SetTimezoneRequest,
  TimezoneDto,
  TokenList,
  TurnResult,
  UpdateChannelRequest,
  UpdateScheduleRequest,
  UpdateSessionRequest,
  UpdateUserRequest,
  User,
} from './types'
import { sendForm, type Draft } from './attachments'

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  /** seconds, from Retry-After on 429 */
  readonly retryAfter?: number

  constructor(status: number, code: string, message: string, retryAfter?: number) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.retryAfter = retryAfter
  }
}

export interface ApiOptions {
  fetch?: typeof fetch
  /** prefix for every path; '' for same-origin */
  baseUrl?: string
  /** called once per 401 response, except from the auth endpoints themselves */
  onUnauthorized?: () => void
}

type Query = Record<string, string | number | undefined | null>

export function withQuery(path: string, q?: Query): string {
  if (!q) return path
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(q)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v))
  }
  const s = params.toString()
  return s ? `${path}?${s}` : path
}

const seg = (id: string) => encodeURIComponent(id)

export function createApi(opts: ApiOptions = {}) {
  const base = opts.baseUrl ?? ''
  const doFetch = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init))

  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    extra?: { quiet401?: boolean; headers?: Record<string, string> },
  ): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json', ...extra?.headers }
    let payload: string | FormData | undefined
    if (method !== 'GET' && method !== 'HEAD') {
      headers['X-Weft-Csrf'] = '1'
      if (body instanceof FormData) {
        // The browser writes the multipart Content-Type, with its boundary.
        payload = body
      } else {
        headers['Content-Type'] = 'application/json'
        payload = JSON.stringify(body ?? {})
      }
    }
    let res: Response
    try {
      res = await doFetch(base + path, { method, headers, body: payload, credentials: 'same-origin' })
    } catch (e) {
      throw new ApiError(0, 'network_error', e instanceof Error ? e.message : String(e))
    }
    if (res.status === 401 && !extra?.quiet401) opts.onUnauthorized?.()
    if (!res.ok) throw await toError(res)
    if (res.status === 204) return undefined as T
    const text = await res.text()
    if (!text) return undefined as T
    try {
      return JSON.parse(text) as T
    } catch {
      throw new ApiError(res.status, 'bad_response', 'The server sent a response that is not JSON.')
    }
  }

  const get = <T>(path: string, q?: Query) => request<T>('GET', withQuery(path, q))
  const post = <T>(path: string, body?: unknown) => request<T>('POST', path, body)
  const patch = <T>(path: string, body?: unknown) => request<T>('PATCH', path, body)
  const put = <T>(path: string, body?: unknown) => request<T>('PUT', path, body)
  const del = (path: string) => request<void>('DELETE', path)

  return {
    // auth
    login: (username: string, password: string) =>
      request<LoginResponse>('POST', '/v1/auth/login', { username, password }, { quiet401: true }),
    logout: () => request<void>('POST', '/v1/auth/logout', {}, { quiet401: true }),
    me: () => request<User>('GET', '/v1/me', undefined, { quiet401: true }),

    // catalogue
    models: () => get<{ models: Model[] }>('/v1/models').then((r) => r.models),
    agents: () => get<AgentList>('/v1/agents').then((r) => r.agents),

    // sessions
    listSessions: (q?: { q?: string; limit?: number; cursor?: string | null }) =>
      get<SessionList>('/v1/sessions', q),
    createSession: (body: CreateSessionRequest) => post<Session>('/v1/sessions', body),
    getSession: (id: string) => get<Session>(`/v1/sessions/${seg(id)}`),
    updateSession: (id: string, body: UpdateSessionRequest) =>
      patch<Session>(`/v1/sessions/${seg(id)}`, body),
    deleteSession: (id: string) => del(`/v1/sessions/${seg(id)}`),
    listMessages: (id: string, q?: { limit?: number; cursor?: string | null }) =>
      get<MessageList>(`/v1/sessions/${seg(id)}/messages`, q),
    /** With files, the body goes as `multipart/form-data` (see `attachments.ts`). */
    sendMessage: (
      id: string,
      body: SendMessageRequest,
      idempotencyKey?: string,
      files: readonly Pick<Draft, 'file' | 'name'>[] = [],
    ) =>
      request<SendResult>('POST', `/v1/sessions/${seg(id)}/messages`, files.length ? sendForm(body, files) : body, {
        headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : undefined,
      }),

    // turns: all refused with 409 `run_active` while a run is active in the session
    /** 409 `nothing_to_undo` when no turn is shown. */
    undo: (id: string) => post<TurnResult>(`/v1/sessions/${seg(id)}/undo`, {}),
    /** 409 `nothing_to_redo` when nothing was undone (or something was said since). */
    redo: (id: string) => post<TurnResult>(`/v1/sessions/${seg(id)}/redo`, {}),
    /** 202: the new run; the reply shown so far becomes an alternative. */
    regenerate: (id: string) => post<TurnResult>(`/v1/sessions/${seg(id)}/regenerate`, {}),
    /** 202: replaces the last user message's text and answers it again. */
    editLast: (id: string, text: string) => post<TurnResult>(`/v1/sessions/${seg(id)}/edit`, { text }),
    alternatives: (id: string) =>
      get<AlternativeList>(`/v1/sessions/${seg(id)}/alternatives`).then((r) => r.alternatives),
    chooseAlternative: (id: string, runId: string) =>
      post<TurnResult>(`/v1/sessions/${seg(id)}/alternatives/${seg(runId)}`, {}),
    /** 202: the next reply summarises the older turns first. */
    compact: (id: string) => post<void>(`/v1/sessions/${seg(id)}/compact`, {}),
    /** The stored summary of older turns; null when there is none (404). */
    summary: (id: string) =>
      get<Summary>(`/v1/sessions/${seg(id)}/summary`).catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 404) return null
        throw e
      }),
    systemPrompt: (id: string) => get<SystemPrompt>(`/v1/sessions/${seg(id)}/system-prompt`),

    // runs
    getRun: (id: string) => get<Run>(`/v1/runs/${seg(id)}`),
    cancelRun: (id: string) => post<void>(`/v1/runs/${seg(id)}/cancel`, {}),
    /** 409 `already_decided` / `expired` / `run_ended` say why a decision came too late. */
    decideApproval: (id: string, decision: ApprovalDecision) =>
      post<Approval>(`/v1/approvals/${seg(id)}`, { decision }),
    /** The session's tool calls waiting for a decision (what a lost event log cannot replay). */
    listApprovals: (sessionId: string) =>
      get<ApprovalList>(`/v1/sessions/${seg(sessionId)}/approvals`).then((r) => r.approvals),
    /**
     * Answers a question the agent asked: a text or one option, or several options
     * when it allows `multiple`. 409 `already_answered` / `expired` / `run_ended`
     * say what stands; 422 `validation_failed` says why the answer does not fit.
     */
    answerQuestion: (id: string, answer: AnswerValue) => post<Question>(`/v1/questions/${seg(id)}`, { answer }),
    /** Every question a run asked, answered or not: what a finished reply shows again. */
    /** The session's todo list as it stands (`todo_update`; undone turns left out). */
    sessionTodos: (sessionId: string) =>
      get<TodoList>(`/v1/sessions/${seg(sessionId)}/todos`).then((r) => r.items),
    runQuestions: (runId: string) =>
      get<QuestionList>(`/v1/runs/${seg(runId)}/questions`).then((r) => r.questions),
    /** The session's questions waiting for an answer (what a lost event log cannot replay). */
    listQuestions: (sessionId: string) =>
      get<QuestionList>(`/v1/sessions/${seg(sessionId)}/questions`).then((r) => r.questions),
    /**
     * Decides a plan the agent proposed (plan mode): `approve`, `reject`, or `revise`
     * with a comment saying what to change (422 `validation_failed` without one).
     * 409 `already_decided` / `expired` / `run_ended` name what stands.
     */
    decidePlan: (id: string, decision: PlanDecision, comment?: string) =>
      post<Plan>(`/v1/plans/${seg(id)}`, comment === undefined ? { decision } : { decision, comment }),
    /** Every plan a run proposed, whatever became of it: what a finished reply shows again. */
    runPlans: (runId: string) => get<PlanList>(`/v1/runs/${seg(runId)}/plans`).then((r) => r.plans),
    /** The session's plans waiting for a decision (what a lost event log cannot replay). */
    listPlans: (sessionId: string) =>
      get<PlanList>(`/v1/sessions/${seg(sessionId)}/plans`).then((r) => r.plans),
    /** Every task a run handed to other agents (`delegate`), in the order made: what a finished reply shows again. */
    runDelegations: (runId: string) =>
      get<DelegationList>(`/v1/runs/${seg(runId)}/delegations`).then((r) => r.delegations),

    // knowledge
    /** The bases you may search: yours and the shared ones. */
    listKnowledge: () => get<KnowledgeBaseList>('/v1/knowledge').then((r) => r.knowledge_bases),
    /** 409 when you have a base of that name; 403 for `shared` unless you are an admin. */
    createKnowledge: (body: { name: string; description?: string; visibility?: KnowledgeVisibility }) =>
      post<KnowledgeBase>('/v1/knowledge', body),
    getKnowledge: (id: string) => get<KnowledgeBase>(`/v1/knowledge/${seg(id)}`),
    deleteKnowledge: (id: string) => del(`/v1/knowledge/${seg(id)}`),
    /** Newest first, each with its ingestion `status`. */
    listDocuments: (id: string) =>
      get<KnowledgeDocumentList>(`/v1/knowledge/${seg(id)}/documents`).then((r) => r.documents),
    deleteDocument: (id: string, doc: string) => del(`/v1/knowledge/${seg(id)}/documents/${seg(doc)}`),
    searchKnowledge: (id: string, query: string, topK?: number) =>
      post<KnowledgeSearchResults>(`/v1/knowledge/${seg(id)}/search`, { query, top_k: topK }),
    /**
     * A stretch of a document's text: `around` a chunk (centred on it) or `after` a
     * chunk's `ord` (from the start with neither); 404 when the document is gone or
     * its base is not open to you.
     */
    documentChunks: (
      knowledgeId: string,
      documentId: string,
      q: { around?: string; after?: number; limit?: number },
    ) => get<DocumentChunks>(`/v1/knowledge/${seg(knowledgeId)}/documents/${seg(documentId)}/chunks`, q),

    // your own account: password, tokens and sign-ins
    changePassword: (body: ChangePasswordRequest) => post<void>('/v1/me/password', body),
    /** Every token of yours, of every kind (API tokens, sign-ins, bootstrap); `current` marks this browser's. */
    listAllTokens: () => get<TokenList>('/v1/tokens').then((r) => r.tokens),
    /** Your personal API tokens only (GET /v1/tokens lists sign-ins too). */
    listTokens: () =>
      get<TokenList>('/v1/tokens').then((r) => r.tokens.filter((t) => t.kind === 'api')),
    createToken: (name: string) => post<CreatedToken>('/v1/tokens', { name }),
    revokeToken: (id: string) => del(`/v1/tokens/${seg(id)}`),
    instructions: () => get<Instructions>('/v1/me/instructions').then((r) => r.instructions),
    setInstructions: (instructions: string) =>
      put<Instructions>('/v1/me/instructions', { instructions }).then((r) => r.instructions),

    // your memories (docs/memory.md): only ever your own
    /** Pinned first, then the most recently changed; with `q` only those sharing words with it, best first. */
    listMemories: (q?: { kind?: MemoryKind; q?: string }) => get<MemoryList>('/v1/me/memories', q),
    /** 201; 422 for an empty, over-long or secret-looking text, 413 past the per-person limit. */
    addMemory: (body: CreateMemory) => post<Memory>('/v1/me/memories', body),
    updateMemory: (id: string, body: PatchMemory) => patch<Memory>(`/v1/me/memories/${seg(id)}`, body),
    deleteMemory: (id: string) => del(`/v1/me/memories/${seg(id)}`),
    /** Every memory of yours, at once; how many went. */
    forgetMemories: () => request<MemoriesForgotten>('DELETE', '/v1/me/memories').then((r) => r.deleted),
    /** Everything of yours, for the file the page saves (`GET /v1/me/memories/export`). */
    exportMemories: () => get<MemoryList>('/v1/me/memories/export'),
    /** Your switch: off, nothing is remembered or recalled (what is kept stays). */
    setMemoryEnabled: (enabled: boolean) =>
      patch<MemorySwitch>('/v1/me/memory', { enabled } satisfies MemorySwitch).then((r) => r.enabled),

    // your schedules (docs/schedules.md): a 422's message starts with the field it names
    /** Oldest first, each with its newest fire. */
    listSchedules: () => get<ScheduleList>('/v1/schedules').then((r) => r.schedules),
    createSchedule: (body: CreateScheduleRequest) => post<Schedule>('/v1/schedules', body),
    getSchedule: (id: string) => get<Schedule>(`/v1/schedules/${seg(id)}`),
    /** Only the fields to change; a new trigger or timezone, or resuming, sets the next fire from now. */
    updateSchedule: (id: string, body: UpdateScheduleRequest) => patch<Schedule>(`/v1/schedules/${seg(id)}`, body),
    /** Its history goes with it; the runs it made and their sessions stay. */
    deleteSchedule: (id: string) => del(`/v1/schedules/${seg(id)}`),
    /** "Run now": one fire outside the trigger (the overlap rule applies); the fire, with its run. */
    runSchedule: (id: string) => post<Fire>(`/v1/schedules/${seg(id)}/run`, {}),
    /** Newest first. */
    scheduleFires: (id: string, limit?: number) =>
      get<FireList>(`/v1/schedules/${seg(id)}/fires`, { limit }).then((r) => r.fires),
    /** A trigger's next fire times in a timezone (none: yours), and the trigger in words (the form's preview). */
    previewSchedule: (body: SchedulePreviewRequest) => post<SchedulePreview>('/v1/schedules/preview', body),
    /** Your timezone (null: none set) and the one your new schedules take (`effective`). */
    myTimezone: () => get<TimezoneDto>('/v1/me/timezone'),
    /**
     * Sets your timezone (IANA), or clears it with null; the answer is the new
     * state. 422 `timezone: …` for a name the server does not know. Existing
     * schedules keep theirs.
     */
    setMyTimezone: (timezone: string | null) => put<TimezoneDto>('/v1/me/timezone', { timezone } satisfies SetTimezoneRequest),

    // your channels (docs/schedules.md, "Channels"): where notifications go besides the inbox;
    // a 422's message starts with the field it names (`target.url: refused: …`)
    /** Oldest first, each with its newest delivery. */
    listChannels: () => get<ChannelList>('/v1/channels').then((r) => r.channels),
    /** 201; a webhook made without a secret gets one, in this answer only (`target.secret`). 409: you have one of that name. */
    createChannel: (body: CreateChannelRequest) => post<Channel>('/v1/channels', body),
    getChannel: (id: string) => get<Channel>(`/v1/channels/${seg(id)}`),
    /** A new webhook target without a secret keeps the old one; with one, the answer shows it. */
    updateChannel: (id: string, body: UpdateChannelRequest) => patch<Channel>(`/v1/channels/${seg(id)}`, body),
    /** Schedules stop delivering to it. */
    deleteChannel: (id: string) => del(`/v1/channels/${seg(id)}`),
    /** 202: the test message's delivery, pending; its history (or `last_delivery`) says how it went. */
    testChannel: (id: string) => post<Delivery>(`/v1/channels/${seg(id)}/test`, {}),
    /** Newest first (`limit` 1–200, default 50). */
    channelDeliveries: (id: string, limit?: number) =>
      get<DeliveryList>(`/v1/channels/${seg(id)}/deliveries`, { limit }).then((r) => r.deliveries),

    // your notifications (docs/schedules.md, "Notifications"): the bell's inbox
    /** Newest first (`limit` 1–200, default 50), and how many are unread whatever the limit. */
    notifications: (q?: { unread?: boolean; limit?: number }) =>
      get<NotificationList>('/v1/me/notifications', {
        unread: q?.unread === undefined ? undefined : String(q.unread),
        limit: q?.limit,
      }),
    /** The ids given (others' are ignored), or every one of yours when none are given. */
    markNotificationsRead: (ids?: readonly string[]) =>
      post<void>('/v1/me/notifications/read', ids ? { ids } : {}),

    // admin
    listUsers: () => get<{ users: User[] }>('/v1/admin/users').then((r) => r.users),
    createUser: (body: CreateUserRequest & { role: Role }) => post<User>('/v1/admin/users', body),
    updateUser: (id: string, body: UpdateUserRequest & { role?: Role }) =>
      patch<User>(`/v1/admin/users/${seg(id)}`, body),
    deleteUser: (id: string) => del(`/v1/admin/users/${seg(id)}`),
    limits: () => get<Limits>('/v1/admin/limits'),
    mcpStatus: () => get<McpStatusList>('/v1/mcp'),
    /** The live config's editable sections, secrets masked. */
    settings: () => get<SettingsView>('/v1/admin/settings'),
    /** Saves sections (each whole); 422/409 name what is wrong, and nothing changed. */
    saveSettings: (settings: Record<string, unknown>) =>
      put<ReloadResponse>('/v1/admin/settings', { settings }),
    /** Reads the config file again on every replica. */
    reloadConfig: () => post<ReloadResponse>('/v1/admin/reload'),
    /** Create or replace an agent; 422 names what is wrong. */
    putAgent: (id: string, body: PutAgentRequest) => put<Agent>(`/v1/admin/agents/${seg(id)}`, body),
    /** 409 for the built-in `agent` (the fallback). */
    deleteAgent: (id: string) => del(`/v1/admin/agents/${seg(id)}`),
  }
}

export type Api = ReturnType<typeof createApi>

/**
 * Adds one file to a knowledge base as `multipart/form-data`, through
 * XMLHttpRequest because `fetch` reports no upload progress: `onProgress` gets
 * 0–100 as the bytes go out. A refusal (413, 422…) is thrown as `ApiError` with
 * the server's message, like every other call.
 */
export function uploadKnowledgeDocument(
  knowledgeId: string,
  file: Blob,
  name: string,
  onProgress: (pct: number) => void,
  baseUrl = '',
): Promise<KnowledgeUploaded> {
  const form = new FormData()
  form.append('file', file, name)
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('POST', `${baseUrl}/v1/knowledge/${seg(knowledgeId)}/documents`)
    xhr.setRequestHeader('Accept', 'application/json')
    xhr.setRequestHeader('X-Weft-Csrf', '1')
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(Math.min(100, Math.round((e.loaded / e.total) * 100)))
    }
    xhr.onerror = () => reject(new ApiError(0, 'network_error', 'The upload did not reach the server.'))
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'The upload was stopped.'))
    xhr.onload = () => {
      if (xhr.status === 401) unauthorizedHandler?.()
      if (xhr.status < 200 || xhr.status >= 300) {
        reject(errorFromBody(xhr.status, xhr.statusText, xhr.responseText))
        return
      }
      try {
        const body = JSON.parse(xhr.responseText) as KnowledgeUploadResult
        const first = body.documents[0]
        if (!first) throw new Error('no document')
        resolve(first)
      } catch {
        reject(new ApiError(xhr.status, 'bad_response', 'The server sent a response that is not JSON.'))
      }
    }
    xhr.send(form)
  })
}

/** URL of a run's SSE stream; `after` resumes after that seq (manual re-attach). */
export function runEventsUrl(runId: string, after?: number, baseUrl = ''): string {
  return withQuery(`${baseUrl}/v1/runs/${seg(runId)}/events`, { after: after && after > 0 ? after : undefined })
}

async function toError(res: Response): Promise<ApiError> {
  const retry = res.headers.get('Retry-After')
  const retryAfter = retry && /^\d+$/.test(retry) ? Number(retry) : undefined
  let text = ''
  try {
    text = await res.text()
  } catch {
    // no body: keep the status line
  }
  return errorFromBody(res.status, res.statusText, text, retryAfter)
}

/** The error envelope `{"error":{"code","message"}}`, or the status line when the body is not one. */
export function errorFromBody(status: number, statusText: string, text: string, retryAfter?: number): ApiError {
  let code = `http_${status}`
  let message = statusText || `HTTP ${status}`
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } }
    if (body?.error?.code) code = body.error.code
    if (body?.error?.message) message = body.error.message
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(status, code, message, retryAfter)
}

let unauthorizedHandler: (() => void) | undefined

/** Lets the app decide what a 401 means (go to /login) without a cyclic import. */
export function setUnauthorizedHandler(fn: (() => void) | undefined): void {
  unauthorizedHandler = fn
}

export const api: Api = createApi({ onUnauthorized: () => unauthorizedHandler?.() })
