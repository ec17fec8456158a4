// Wire types of the Weft HTTP API and run events (ARCHITECTURE.md §5, §6).
// They mirror the gateway's DTOs; keep them in step with `shared`.

export type Role = 'admin' | 'user'

export interface User {
  id: string
  username: string
  role: Role
  created_at: string
}

export interface Session {
  id: string
  /** '' when untitled */
  title: string
  model: string
  mode: string
  source: string
  active_run_id: string | null
  created_at: string
  updated_at: string
}

export interface ToolCallRef {
  id: string
  name: string
  args: unknown
}

export interface Message {
  id: string
  session_id: string
  role: 'user' | 'assistant' | 'tool'
  content: string
  run_id: string | null
  step?: number | null
  created_at: string
  tool_calls?: ToolCallRef[]
  call_id?: string
  name?: string
}

export interface Usage {
  input: number
  output: number
  cache_read: number
  reasoning: number
}

export type RunStatus =
  | 'queued'
  | 'running'
  | 'waiting_approval'
  | 'succeeded'
  | 'failed'
  | 'cancelled'

export interface ErrorBody {
  code: string
  message: string
}

export interface Run {
  id: string
  session_id: string
  status: RunStatus
  attempt: number
  model: string
  usage: Usage | null
  ttft_ms: number | null
  duration_ms: number | null
  error: ErrorBody | null
  final_message_id?: string | null
  created_at: string
}

export interface Model {
  id: string
  provider: string
  default: boolean
}

export interface Mode {
  id: string
  description: string
  default: boolean
}

export interface ApiToken {
  id: string
  name: string
  /** 'api' (personal API token), 'login' (web / sign-in session) or 'bootstrap'. */
  kind: 'api' | 'login' | 'bootstrap'
  created_at: string
  last_used_at: string | null
  expires_at: string | null
  /** The token this browser is signed in with. */
  current: boolean
}

export interface CreatedToken {
  id: string
  name: string
  token: string
}

export interface Limits {
  body_bytes: number
  message_chars: number
  attachments_bytes: number
  active_runs_per_user: number
  runs_per_minute_per_user: number
}

export type Multitask = 'enqueue' | 'interrupt' | 'reject'

/** 202 of a send: a run was created, or the message waits behind `active_run_id`. */
export type SendResult =
  | { status: 'queued'; message_id: string; session_id?: string; active_run_id: string; run_id?: undefined }
  | { status: RunStatus; run_id: string; message_id: string; session_id?: string; active_run_id?: undefined }

// ---- run events -------------------------------------------------------------

interface EventBase {
  run_id: string
  seq: number
  ts: number
}

export type RunEvent = EventBase &
  (
    | { type: 'run_started'; session_id: string; model: string; attempt: number; resume_step: number }
    | { type: 'text'; step: number; delta: string }
    | { type: 'thinking'; step: number; delta: string }
    | { type: 'tool_start'; step: number; call_id: string; name: string; args: unknown }
    | {
        type: 'tool_end'
        step: number
        call_id: string
        name: string
        ok: boolean
        output: string
        duration_ms: number
      }
    | {
        type: 'approval_required'
        step: number
        approval_id: string
        call_id: string
        name: string
        args: unknown
      }
    | ({ type: 'usage' } & Usage)
    | { type: 'retrying'; step: number; attempt: number; reason: string; delay_ms: number }
    | { type: 'heartbeat'; elapsed_ms: number }
    | {
        type: 'done'
        message_id: string
        model: string
        usage: Usage
        ttft_ms: number | null
        duration_ms: number
      }
    | { type: 'error'; code: string; message: string }
    | { type: 'cancelled'; by: string }
  )

export const RUN_EVENT_TYPES = [
  'run_started',
  'text',
  'thinking',
  'tool_start',
  'tool_end',
  'approval_required',
  'usage',
  'retrying',
  'heartbeat',
  'done',
  'error',
  'cancelled',
] as const
