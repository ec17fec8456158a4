// The rules behind the account part of /settings, kept pure so they are tested
// without a browser: what a new password must be before it is sent, which of
// your tokens are sign-ins, in what order, and how full your file storage is.

import type { ApiToken, Storage } from './types'

/** The server's bounds for a password (gateway `validate_password`: 8 to 1024 characters). */
export const PASSWORD_MIN_CHARS = 8
export const PASSWORD_MAX_CHARS = 1024

export type NewPasswordCheck = 'ok' | 'too_short' | 'too_long' | 'mismatch'

/**
 * Checks a new password and its confirmation before `POST /v1/me/password`.
 * Characters are counted as the server counts them (Unicode scalar values, not
 * UTF-16 units), so "密码" is 2 and an emoji is 1.
 */
export function checkNewPassword(next: string, confirm: string): NewPasswordCheck {
  const chars = [...next].length
  if (chars < PASSWORD_MIN_CHARS) return 'too_short'
  if (chars > PASSWORD_MAX_CHARS) return 'too_long'
  if (next !== confirm) return 'mismatch'
  return 'ok'
}

/** Milliseconds of a token's most recent activity: its last use, else its creation. */
function lastActive(t: ApiToken): number {
  const ms = Date.parse(t.last_used_at ?? t.created_at)
  return Number.isNaN(ms) ? 0 : ms
}

/**
 * Your sign-ins out of `GET /v1/tokens`: every token that is not a personal API
 * token (those have their own list). This browser's first, then the most recently
 * active; ties keep the server's order.
 */
export function signIns(tokens: readonly ApiToken[]): ApiToken[] {
  return tokens
    .filter((t) => t.kind !== 'api')
    .map((t, i) => ({ t, i }))
    .sort((a, b) => Number(b.t.current) - Number(a.t.current) || lastActive(b.t) - lastActive(a.t) || a.i - b.i)
    .map(({ t }) => t)
}

/** Your file storage as the page shows it: a whole percentage of the quota (none without one). */
export interface StorageShare {
  used: number
  limit: number | null
  /** 0 to 100; `null` without a quota. */
  percent: number | null
  /** At or over the quota: a message with a new file would be refused. */
  full: boolean
}

/** `storage` of `GET /v1/me`. A quota is never shown as 0 % used while anything is stored. */
export function storageShare(storage: Storage): StorageShare {
  const { used_bytes: used, limit_bytes: limit } = storage
  if (limit === null || limit === undefined || limit <= 0) return { used, limit: null, percent: null, full: false }
  const raw = (used / limit) * 100
  const percent = Math.min(100, used > 0 ? Math.max(1, Math.floor(raw)) : 0)
  return { used, limit, percent, full: used >= limit }
}
