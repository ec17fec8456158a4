import { describe, expect, it } from 'vitest'
import {
  browserTimezone,
  newScheduleTimezone,
  saveTimezone,
  supportedTimezones,
  timezoneError,
  yourTimezone,
  zoneChoices,
  zoneShortcuts,
} from './timezone'

describe('the zones a picker offers', () => {
  it('adds UTC (which Intl leaves out) and the zones the page knows of, sorted, each once', () => {
    expect(zoneChoices(['Europe/Berlin', 'Asia/Shanghai'])).toEqual(['Asia/Shanghai', 'Europe/Berlin', 'UTC'])
    // The browser may spell its own zone as an alias its list does not hold.
    expect(zoneChoices(['Asia/Kolkata'], 'Asia/Calcutta', ' Asia/Kolkata ', null, undefined, '')).toEqual([
      'Asia/Calcutta',
      'Asia/Kolkata',
      'UTC',
    ])
    expect(zoneChoices([])).toEqual(['UTC'])
  })

  it('reads the browser’s list and its own zone', () => {
    const zones = supportedTimezones()
    // Node (as every browser the UI targets) has `Intl.supportedValuesOf`.
    expect(zones).toContain('Asia/Shanghai')
    expect(zones).toContain('Europe/Berlin')
    expect(browserTimezone()).toMatch(/^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/)
  })
})

describe('your timezone on the account page', () => {
  it('shows the one you set, else the server’s default it falls back to', () => {
    expect(yourTimezone({ timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' })).toEqual({ kind: 'yours', zone: 'Asia/Shanghai' })
    expect(yourTimezone({ timezone: null, effective: 'America/New_York' })).toEqual({ kind: 'server', zone: 'America/New_York' })
    expect(yourTimezone({ timezone: null, effective: '' })).toEqual({ kind: 'server', zone: 'UTC' })
  })

  it('saves what was typed, trimmed; nothing for an empty field or your zone again', () => {
    const none = { timezone: null, effective: 'UTC' }
    expect(saveTimezone(' Asia/Shanghai ', none)).toEqual({ ok: true, zone: 'Asia/Shanghai' })
    // An empty field is not a way to clear it: Clear is.
    expect(saveTimezone('   ', { timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' })).toEqual({ ok: false, reason: 'empty' })
    expect(saveTimezone('Asia/Shanghai', { timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' })).toEqual({
      ok: false,
      reason: 'unchanged',
    })
    // The server's default written as yours is a choice of its own: it stays when the default changes.
    expect(saveTimezone('UTC', none)).toEqual({ ok: true, zone: 'UTC' })
  })

  it('shows a refused name in the server’s words, without the field it names', () => {
    expect(timezoneError('timezone: "Mars/Olympus" is not an IANA timezone (e.g. Asia/Shanghai, Europe/Berlin, UTC)')).toBe(
      '"Mars/Olympus" is not an IANA timezone (e.g. Asia/Shanghai, Europe/Berlin, UTC)',
    )
    expect(timezoneError('Too many requests')).toBe('Too many requests')
  })
})

describe('the one-click zones next to a field', () => {
  it('offers yours and this browser’s when they are not what the field holds', () => {
    expect(zoneShortcuts('Asia/Shanghai', { yours: 'Asia/Shanghai', browser: 'Europe/Berlin' })).toEqual([
      { kind: 'browser', zone: 'Europe/Berlin' },
    ])
    expect(zoneShortcuts(' Europe/Berlin ', { yours: 'Asia/Shanghai', browser: 'Europe/Berlin' })).toEqual([
      { kind: 'yours', zone: 'Asia/Shanghai' },
    ])
    expect(zoneShortcuts('UTC', { yours: 'Asia/Shanghai', browser: 'Europe/Berlin' })).toEqual([
      { kind: 'yours', zone: 'Asia/Shanghai' },
      { kind: 'browser', zone: 'Europe/Berlin' },
    ])
  })

  it('offers nothing when they agree with the field, and one button when they agree with each other', () => {
    expect(zoneShortcuts('Europe/Berlin', { yours: 'Europe/Berlin', browser: 'Europe/Berlin' })).toEqual([])
    expect(zoneShortcuts('UTC', { yours: 'Europe/Berlin', browser: 'Europe/Berlin' })).toEqual([{ kind: 'yours', zone: 'Europe/Berlin' }])
    expect(zoneShortcuts('', { browser: 'Europe/Berlin' })).toEqual([{ kind: 'browser', zone: 'Europe/Berlin' }])
    expect(zoneShortcuts('', { yours: null, browser: '' })).toEqual([])
  })
})

describe('a new schedule’s timezone', () => {
  it('starts as yours as the server applies it, else the server’s default, else this browser’s', () => {
    expect(newScheduleTimezone({ timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' }, 'Europe/Berlin')).toBe('Asia/Shanghai')
    expect(newScheduleTimezone({ timezone: null, effective: 'UTC' }, 'Europe/Berlin')).toBe('UTC')
    // No answer (the request failed, or an older server): the browser's, as before.
    expect(newScheduleTimezone(null, 'Europe/Berlin')).toBe('Europe/Berlin')
    expect(newScheduleTimezone({ timezone: 'Asia/Tokyo', effective: '' }, 'Europe/Berlin')).toBe('Asia/Tokyo')
  })
})
