// The rules behind the account part of /settings, kept pure so they are tested
// without a browser: what a new password must be before it is sent, and which of
// your tokens are sign-ins, in what order.

import type { ApiToken } from './types'

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
