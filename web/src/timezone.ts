// A person's timezone (`GET/PUT /v1/me/timezone`, docs/schedules.md): the zone
// their new schedules take when made without one. Kept pure so it is tested
// without a browser: what the account page shows and sends, which zones the
// pickers offer (and the one-click shortcuts to this browser's or your own),
// and the zone a new schedule's form starts with. The server is the judge of a
// name: what it refuses comes back as a 422 shown under the field.

import { fieldError } from './schedules'
import type { TimezoneDto } from './types'

/** The browser's timezone (IANA), or UTC when it has none to say. */
export function browserTimezone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
  } catch {
    return 'UTC'
  }
}

/** Every IANA zone this browser knows (none where `Intl.supportedValuesOf` is missing). */
export function supportedTimezones(): string[] {
  const intl = Intl as typeof Intl & { supportedValuesOf?: (key: string) => string[] }
  try {
    return intl.supportedValuesOf?.('timeZone') ?? []
  } catch {
    return []
  }
}

/**
 * The zones a picker suggests: the browser's list with UTC (which it leaves out)
 * and the `extra` ones the page knows of (yours, the browser's, a schedule's, even
 * where the list spells them otherwise), sorted, each once.
 */
export function zoneChoices(supported: readonly string[], ...extra: (string | null | undefined)[]): string[] {
  const all = new Set(supported)
  all.add('UTC')
  for (const z of extra) if (z?.trim()) all.add(z.trim())
  return [...all].sort((a, b) => a.localeCompare(b, 'en'))
}

/** Your timezone as the account page shows it: the one you set, or the server's it falls back to. */
export type YourTimezone = { kind: 'yours'; zone: string } | { kind: 'server'; zone: string }

/** `GET /v1/me/timezone`'s answer, shown; `effective` is read only, and UTC when an older server leaves it out. */
export function yourTimezone(dto: TimezoneDto): YourTimezone {
  if (dto.timezone) return { kind: 'yours', zone: dto.timezone }
  return { kind: 'server', zone: dto.effective || 'UTC' }
}

/** What Save does with what was typed: sends a zone, or nothing (an empty field, or your zone unchanged). */
export type TimezoneSave = { ok: true; zone: string } | { ok: false; reason: 'empty' | 'unchanged' }

/**
 * The zone Save sends (`PUT /v1/me/timezone`). An empty field is not "clear" —
 * Clear is its own button — so a stray Save never drops your zone.
 */
export function saveTimezone(typed: string, dto: TimezoneDto): TimezoneSave {
  const zone = typed.trim()
  if (!zone) return { ok: false, reason: 'empty' }
  if (zone === (dto.timezone ?? '')) return { ok: false, reason: 'unchanged' }
  return { ok: true, zone }
}

/** The refusal of a zone shown under the field: the server's words without the `timezone:` they start with. */
export function timezoneError(message: string): string {
  const named = fieldError(message)
  return named.field === 'timezone' ? named.text : message
}

/** A zone a picker offers as one click: the browser's, or yours. */
export interface ZoneShortcut {
  kind: 'browser' | 'yours'
  zone: string
}

/**
 * The shortcuts worth a button next to a field holding `typed`: yours first, then
 * this browser's, each only when it is known and not what the field holds (nor
 * the same as the one before it).
 */
export function zoneShortcuts(typed: string, zones: { yours?: string | null; browser?: string | null }): ZoneShortcut[] {
  const held = typed.trim()
  const out: ZoneShortcut[] = []
  for (const kind of ['yours', 'browser'] as const) {
    const zone = zones[kind]?.trim()
    if (zone && zone !== held && !out.some((s) => s.zone === zone)) out.push({ kind, zone })
  }
  return out
}

/**
 * The zone a new schedule's form starts with: yours as the server applies it
 * (`effective`), else — no answer, as from a server without `/v1/me/timezone` —
 * this browser's.
 */
export function newScheduleTimezone(dto: TimezoneDto | null, browser: string): string {
  return dto?.effective?.trim() || dto?.timezone?.trim() || browser
}
