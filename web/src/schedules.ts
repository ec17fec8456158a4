// The rules behind the /schedules page (docs/schedules.md), kept pure so they are
// tested without a browser: the form and the trigger it stands for (a cron
// pattern, every N minutes, or once at a wall time in the schedule's timezone),
// the channels it delivers to, the cron presets, what an edit changes, which field
// a 422 names, how a time the server wrote in a timezone is shown, and a fire's
// lateness.

import { sameChoice } from './channels'
import type { MessageKey } from './i18n'
import type {
  CreateScheduleRequest,
  Fire,
  Misfire,
  Overlap,
  Schedule,
  ScheduleTarget,
  Trigger,
  UpdateScheduleRequest,
} from './types'

export type TriggerKind = 'cron' | 'every' | 'at'

/** Everything the form holds, as typed: nothing is lost when the server refuses it. */
export interface ScheduleForm {
  name: string
  prompt: string
  /** an agent id; '' = the server's default agent */
  agent: string
  kind: TriggerKind
  cron: string
  /** whole minutes, as typed */
  everyMinutes: string
  /** `YYYY-MM-DDTHH:MM[:SS]` (an `<input type=datetime-local>`), read in `timezone` */
  at: string
  /** IANA, as typed; '' = yours (the server's choice at save) */
  timezone: string
  /** '' = a new session each time; else the session every fire writes to */
  session: string
  misfire: Misfire
  overlap: Overlap
  /** the channels (ids) its notifications also go to, in the order ticked */
  deliver: string[]
}

/** The parts of the form a 422 can name (`trigger.cron` and its siblings are `trigger`). */
export type FormField = 'name' | 'prompt' | 'agent' | 'trigger' | 'timezone' | 'target' | 'deliver'

export function emptyForm(timezone: string, agent = ''): ScheduleForm {
  return {
    name: '',
    prompt: '',
    agent,
    kind: 'cron',
    cron: '0 9 * * 1-5',
    everyMinutes: '60',
    at: '',
    timezone,
    session: '',
    misfire: 'run_once',
    overlap: 'skip',
    deliver: [],
  }
}

/** A cron pattern the form offers with one click. */
export interface CronPreset {
  id: string
  cron: string
  label: MessageKey
}

export const CRON_PRESETS: readonly CronPreset[] = [
  { id: 'weekdays-9', cron: '0 9 * * 1-5', label: 'schedules.preset.weekdays' },
  { id: 'daily-9', cron: '0 9 * * *', label: 'schedules.preset.daily' },
  { id: 'monday-9', cron: '0 9 * * 1', label: 'schedules.preset.monday' },
  { id: 'hourly', cron: '0 * * * *', label: 'schedules.preset.hourly' },
]

/** The preset a pattern is (spaces aside), if any: the button shown as chosen. */
export function presetOf(cron: string): CronPreset | undefined {
  const norm = cron.trim().split(/\s+/).join(' ')
  return CRON_PRESETS.find((p) => p.cron === norm)
}

export type Built<T> = { ok: true; value: T } | { ok: false; field: FormField; message: MessageKey }

/**
 * The trigger the form stands for, or why it stands for none yet: what only the
 * server can judge (a cron's fields, a timezone, an `at` in the past) is left to
 * its 422.
 */
export function triggerFromForm(f: ScheduleForm): Built<Trigger> {
  switch (f.kind) {
    case 'cron': {
      const cron = f.cron.trim().split(/\s+/).join(' ')
      if (!cron) return { ok: false, field: 'trigger', message: 'schedules.err.cronEmpty' }
      return { ok: true, value: { cron } }
    }
    case 'every': {
      const s = f.everyMinutes.trim()
      if (!/^\d+$/.test(s) || Number(s) < 1) return { ok: false, field: 'trigger', message: 'schedules.err.minutes' }
      return { ok: true, value: { every_secs: Number(s) * 60 } }
    }
    case 'at': {
      // A wall time means nothing without its zone (an empty one is the server's to choose).
      if (!f.timezone.trim()) return { ok: false, field: 'timezone', message: 'schedules.err.timezoneEmpty' }
      const at = wallToRfc3339(f.at, f.timezone)
      if (!at) return { ok: false, field: 'trigger', message: 'schedules.err.atEmpty' }
      return { ok: true, value: { at } }
    }
  }
}

export function targetFromForm(f: ScheduleForm): ScheduleTarget {
  return f.session ? { session: f.session } : 'new_session'
}

/**
 * `POST /v1/schedules` from the form; an empty name lets the server name it after
 * the prompt, an empty timezone gives it yours.
 */
export function createRequest(f: ScheduleForm): Built<CreateScheduleRequest> {
  const trigger = triggerFromForm(f)
  if (!trigger.ok) return trigger
  if (!f.prompt.trim()) return { ok: false, field: 'prompt', message: 'schedules.err.promptEmpty' }
  const body: CreateScheduleRequest = {
    prompt: f.prompt,
    trigger: trigger.value,
    target: targetFromForm(f),
    misfire: f.misfire,
    overlap: f.overlap,
  }
  // Left empty, the server gives it yours (`/v1/me/timezone`, else its default).
  if (f.timezone.trim()) body.timezone = f.timezone.trim()
  if (f.name.trim()) body.name = f.name.trim()
  if (f.agent) body.agent = f.agent
  if (f.deliver.length) body.deliver = [...f.deliver]
  return { ok: true, value: body }
}

/** The form for editing a schedule as it stands. */
export function formFromSchedule(s: Schedule): ScheduleForm {
  const base = emptyForm(s.timezone, s.agent)
  const t = s.trigger
  const trig: Partial<ScheduleForm> =
    'cron' in t
      ? { kind: 'cron', cron: t.cron }
      : 'every_secs' in t
        ? { kind: 'every', everyMinutes: String(Math.max(1, Math.round(t.every_secs / 60))) }
        : { kind: 'at', at: rfc3339ToWall(t.at, s.timezone) }
  return {
    ...base,
    ...trig,
    name: s.name,
    prompt: s.prompt,
    session: s.target === 'new_session' ? '' : s.target.session,
    misfire: s.misfire,
    overlap: s.overlap,
    deliver: [...(s.deliver ?? [])],
  }
}

const sameTrigger = (a: Trigger, b: Trigger) => JSON.stringify(a) === JSON.stringify(b)
const sameTarget = (a: ScheduleTarget, b: ScheduleTarget) => JSON.stringify(a) === JSON.stringify(b)

/**
 * `PATCH /v1/schedules/{id}` with only what the form changed: a trigger or
 * timezone sent again would set the next fire time from now (an interval's count
 * would start over), so an unchanged one is left out.
 */
export function patchRequest(s: Schedule, f: ScheduleForm): Built<UpdateScheduleRequest> {
  const trigger = triggerFromForm(f)
  if (!trigger.ok) return trigger
  if (!f.prompt.trim()) return { ok: false, field: 'prompt', message: 'schedules.err.promptEmpty' }
  const body: UpdateScheduleRequest = {}
  if (f.name.trim() !== s.name) body.name = f.name.trim()
  if (f.prompt !== s.prompt) body.prompt = f.prompt
  if (f.agent && f.agent !== s.agent) body.agent = f.agent
  // An `at` read back into the form is written again with the same instant, perhaps another spelling.
  const retimed =
    'at' in trigger.value && 'at' in s.trigger
      ? Date.parse(trigger.value.at) !== Date.parse(s.trigger.at)
      : !sameTrigger(trigger.value, s.trigger)
  if (retimed) body.trigger = trigger.value
  if (f.timezone.trim() !== s.timezone) body.timezone = f.timezone.trim()
  const target = targetFromForm(f)
  if (!sameTarget(target, s.target)) body.target = target
  if (f.misfire !== s.misfire) body.misfire = f.misfire
  if (f.overlap !== s.overlap) body.overlap = f.overlap
  if (!sameChoice(f.deliver, s.deliver ?? [])) body.deliver = [...f.deliver]
  return { ok: true, value: body }
}

/**
 * The field a 422's message names (`trigger.cron: "x" has 1 fields…`), and the
 * rest of the message; `field` is null when it names none of the form's fields.
 */
export function fieldError(message: string): { field: FormField | null; text: string } {
  const m = /^([a-z_]+(?:\.[a-z_]+)*):\s*([\s\S]*)$/.exec(message)
  if (!m) return { field: null, text: message }
  const head = m[1].split('.')[0]
  const fields: Record<string, FormField> = {
    name: 'name',
    prompt: 'prompt',
    agent: 'agent',
    trigger: 'trigger',
    timezone: 'timezone',
    target: 'target',
    deliver: 'deliver',
  }
  const field = Object.hasOwn(fields, head) ? fields[head] : null
  return field ? { field, text: m[2] } : { field: null, text: message }
}

// ---- times ----

/** The parts of a wall time `YYYY-MM-DDTHH:MM[:SS]` (any offset after it ignored). */
function wallParts(s: string): [number, number, number, number, number, number] | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?/.exec(s.trim())
  if (!m) return null
  return [+m[1], +m[2], +m[3], +m[4], +m[5], m[6] ? +m[6] : 0]
}

/** How far `timezone`'s clock is ahead of UTC at the instant `ms`, in minutes; null for a zone Intl does not know. */
export function zoneOffsetMinutes(ms: number, timezone: string): number | null {
  let parts: Intl.DateTimeFormatPart[]
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone.trim(),
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    }).formatToParts(new Date(ms))
  } catch {
    return null
  }
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour') % 24, get('minute'), get('second'))
  return Math.round((wall - Math.floor(ms / 1000) * 1000) / 60_000)
}

const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0')

function offsetText(minutes: number): string {
  return `${minutes < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(minutes) / 60))}:${pad(Math.abs(minutes) % 60)}`
}

/**
 * A wall time read in `timezone`, as RFC 3339 with that zone's offset then
 * (`2026-12-24T18:00` in Asia/Shanghai → `2026-12-24T18:00:00+08:00`). A zone the
 * browser does not know is written as UTC: the server's 422 names the timezone.
 * In a clock change's gap the later offset wins, as the server reads it.
 */
export function wallToRfc3339(wall: string, timezone: string): string | null {
  const p = wallParts(wall)
  if (!p) return null
  const [y, mo, d, h, mi, s] = p
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, s)
  let offset = zoneOffsetMinutes(asUtc, timezone) ?? 0
  const again = zoneOffsetMinutes(asUtc - offset * 60_000, timezone)
  if (again !== null) offset = again
  return `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${offsetText(offset)}`
}

/** An RFC 3339 instant as a wall time in `timezone`, for `<input type=datetime-local step=1>`. */
export function rfc3339ToWall(iso: string, timezone: string): string {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return ''
  const offset = zoneOffsetMinutes(ms, timezone) ?? 0
  const d = new Date(ms + offset * 60_000)
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
}

/**
 * A time the server wrote in a schedule's timezone (`2026-12-07T09:00:00+08:00`),
 * shown as that zone's wall clock — "Mon, Dec 7, 09:00" — whatever the browser's
 * own zone; the year only when it is not `nowYear`.
 */
export function fmtZoned(iso: string, lang: 'en' | 'zh', nowYear = new Date().getFullYear()): string {
  const p = wallParts(iso)
  if (!p) return iso
  const [y, mo, d, h, mi] = p
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi))
  return date.toLocaleString(lang === 'zh' ? 'zh-CN' : 'en-US', {
    timeZone: 'UTC',
    weekday: 'short',
    year: y === nowYear ? undefined : 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
}

/** An instant (a fire's `fire_at`, in UTC) shown in `timezone`, or in the browser's zone when Intl does not know it. */
export function fmtInZone(iso: string, timezone: string, lang: 'en' | 'zh', nowYear = new Date().getFullYear()): string {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return iso
  const offset = zoneOffsetMinutes(ms, timezone) ?? -new Date(ms).getTimezoneOffset()
  const wall = new Date(ms + offset * 60_000).toISOString().slice(0, 19)
  const text = fmtZoned(wall, lang, nowYear)
  return wall.endsWith(':00') ? text : `${text}:${wall.slice(17, 19)}`
}

/** How late a fire was claimed: `fired_at − fire_at`, in ms (never below 0). */
export function latenessMs(f: Pick<Fire, 'fire_at' | 'fired_at'>): number {
  const d = Date.parse(f.fired_at) - Date.parse(f.fire_at)
  return Number.isFinite(d) ? Math.max(0, d) : 0
}

/** A lateness as a short text (`0.4 s`, `2 min 5 s`, `3 h 10 min`, `2 d 4 h`). */
export function fmtLateness(ms: number): string {
  if (ms < 60_000) return `${+(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`
  const s = Math.floor(ms / 1000)
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`
  const m = Math.floor(s / 60)
  if (m < 24 * 60) return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m / 60} h`
  const h = Math.floor(m / 60)
  return h % 24 ? `${Math.floor(h / 24)} d ${h % 24} h` : `${h / 24} d`
}

/** Lateness under this is "on time": the scheduler looks once a second. */
export const ON_TIME_MS = 2_000

/** A fire's run is still going: the page looks again until it ends. */
export function fireLive(f: Fire | null | undefined): boolean {
  if (!f?.run_status) return f?.outcome === 'queued'
  return !['succeeded', 'failed', 'cancelled'].includes(f.run_status)
}

/**
 * When the list should be read again: just after the soonest next fire, sooner
 * while a last fire's run is going, and at least every `maxMs`.
 */
export function refreshDelay(list: readonly Schedule[], now: number, maxMs = 30_000): number {
  let delay = maxMs
  for (const s of list) {
    if (fireLive(s.last_fire)) delay = Math.min(delay, 2_000)
    if (s.enabled && s.next_fire_at) {
      const due = Date.parse(s.next_fire_at)
      if (Number.isFinite(due)) delay = Math.min(delay, Math.max(1_000, due - now + 1_500))
    }
  }
  return delay
}
