import { describe, expect, it } from 'vitest'
import {
  CRON_PRESETS,
  createRequest,
  emptyForm,
  fieldError,
  fireLive,
  fmtInZone,
  fmtLateness,
  fmtZoned,
  formFromSchedule,
  latenessMs,
  patchRequest,
  presetOf,
  refreshDelay,
  rfc3339ToWall,
  triggerFromForm,
  wallToRfc3339,
  zoneOffsetMinutes,
  type ScheduleForm,
} from './schedules'
import type { Fire, Schedule } from './types'

const form = (over: Partial<ScheduleForm> = {}): ScheduleForm => ({ ...emptyForm('UTC', 'agent'), ...over })

const schedule = (over: Partial<Schedule> = {}): Schedule => ({
  id: 'sch1',
  name: 'Morning brief',
  agent: 'agent',
  prompt: 'Summarise the news',
  trigger: { cron: '0 9 * * 1-5' },
  timezone: 'Asia/Shanghai',
  enabled: true,
  target: 'new_session',
  misfire: 'run_once',
  overlap: 'skip',
  describe: 'At 09:00, Monday through Friday (Asia/Shanghai)',
  next_fire_at: '2026-12-07T09:00:00+08:00',
  created_at: '2026-12-01T00:00:00Z',
  updated_at: '2026-12-01T00:00:00Z',
  ...over,
})

describe('the trigger a form stands for', () => {
  it('sends a cron pattern with its spaces tidied', () => {
    expect(triggerFromForm(form({ kind: 'cron', cron: '  0  9 * *   1-5 ' }))).toEqual({ ok: true, value: { cron: '0 9 * * 1-5' } })
    expect(triggerFromForm(form({ kind: 'cron', cron: '   ' }))).toMatchObject({ ok: false, field: 'trigger' })
  })

  it('leaves a malformed pattern to the server, which names what is wrong', () => {
    expect(triggerFromForm(form({ kind: 'cron', cron: 'every day' }))).toEqual({ ok: true, value: { cron: 'every day' } })
  })

  it('turns minutes into seconds and refuses what is not a whole number of minutes', () => {
    expect(triggerFromForm(form({ kind: 'every', everyMinutes: '15' }))).toEqual({ ok: true, value: { every_secs: 900 } })
    expect(triggerFromForm(form({ kind: 'every', everyMinutes: ' 1 ' }))).toEqual({ ok: true, value: { every_secs: 60 } })
    for (const bad of ['', '0', '1.5', '-3', 'ten']) {
      expect(triggerFromForm(form({ kind: 'every', everyMinutes: bad }))).toEqual({
        ok: false,
        field: 'trigger',
        message: 'schedules.err.minutes',
      })
    }
  })

  it('reads a one-off time in the schedule’s timezone, with that zone’s offset on the day', () => {
    expect(triggerFromForm(form({ kind: 'at', at: '2026-12-24T18:00', timezone: 'Asia/Shanghai' }))).toEqual({
      ok: true,
      value: { at: '2026-12-24T18:00:00+08:00' },
    })
    expect(triggerFromForm(form({ kind: 'at', at: '', timezone: 'UTC' }))).toMatchObject({ ok: false, field: 'trigger' })
  })

  it('wants a zone for a one-off time: the wall time is read in it', () => {
    expect(triggerFromForm(form({ kind: 'at', at: '2026-12-24T18:00', timezone: '  ' }))).toEqual({
      ok: false,
      field: 'timezone',
      message: 'schedules.err.timezoneEmpty',
    })
    // A cron pattern or an interval does not: the server gives it yours.
    expect(triggerFromForm(form({ kind: 'cron', timezone: '' }))).toMatchObject({ ok: true })
  })
})

describe('wall times in a timezone', () => {
  it('knows a zone’s offset, summer and winter', () => {
    expect(zoneOffsetMinutes(Date.parse('2026-07-01T12:00:00Z'), 'Europe/Berlin')).toBe(120)
    expect(zoneOffsetMinutes(Date.parse('2026-01-01T12:00:00Z'), 'Europe/Berlin')).toBe(60)
    expect(zoneOffsetMinutes(Date.parse('2026-01-01T12:00:00Z'), 'America/New_York')).toBe(-300)
    expect(zoneOffsetMinutes(Date.parse('2026-01-01T12:00:00Z'), 'Asia/Kolkata')).toBe(330)
    expect(zoneOffsetMinutes(0, 'Not/AZone')).toBeNull()
  })

  it('writes a wall time as RFC 3339 and reads it back', () => {
    expect(wallToRfc3339('2026-07-01T09:30:15', 'Europe/Berlin')).toBe('2026-07-01T09:30:15+02:00')
    expect(wallToRfc3339('2026-01-01T09:30', 'America/New_York')).toBe('2026-01-01T09:30:00-05:00')
    expect(wallToRfc3339('2026-01-01T09:30', 'Asia/Kolkata')).toBe('2026-01-01T09:30:00+05:30')
    // The browser does not know the zone: UTC, and the server's 422 names the timezone.
    expect(wallToRfc3339('2026-01-01T09:30', 'Mars/Base')).toBe('2026-01-01T09:30:00+00:00')
    expect(wallToRfc3339('soon', 'UTC')).toBeNull()
    expect(rfc3339ToWall('2026-07-01T07:30:15Z', 'Europe/Berlin')).toBe('2026-07-01T09:30:15')
    expect(rfc3339ToWall('2026-12-24T18:00:00+08:00', 'Asia/Shanghai')).toBe('2026-12-24T18:00:00')
  })

  it('shows a time the server wrote in a zone as that zone’s clock', () => {
    expect(fmtZoned('2026-12-07T09:00:00+08:00', 'en', 2026)).toBe('Mon, Dec 7, 09:00')
    expect(fmtZoned('2027-01-04T09:00:00-05:00', 'en', 2026)).toMatch(/2027/)
    expect(fmtInZone('2026-12-07T01:00:00Z', 'Asia/Shanghai', 'en', 2026)).toBe('Mon, Dec 7, 09:00')
    expect(fmtInZone('2026-12-07T01:00:05Z', 'Asia/Shanghai', 'en', 2026)).toBe('Mon, Dec 7, 09:00:05')
  })
})

describe('the cron presets', () => {
  it('are the four the form offers, each a five-field pattern', () => {
    expect(CRON_PRESETS.map((p) => p.cron)).toEqual(['0 9 * * 1-5', '0 9 * * *', '0 9 * * 1', '0 * * * *'])
    for (const p of CRON_PRESETS) expect(p.cron.split(' ')).toHaveLength(5)
  })

  it('are recognised in what was typed', () => {
    expect(presetOf(' 0 9  * * 1-5')?.id).toBe('weekdays-9')
    expect(presetOf('0 * * * *')?.id).toBe('hourly')
    expect(presetOf('5 9 * * *')).toBeUndefined()
  })
})

describe('what a save sends', () => {
  it('makes a schedule with the form’s choices; an empty name is left to the server', () => {
    const built = createRequest(form({ prompt: 'Brief me', session: 'ses1', overlap: 'queue' }))
    expect(built).toEqual({
      ok: true,
      value: {
        prompt: 'Brief me',
        agent: 'agent',
        trigger: { cron: '0 9 * * 1-5' },
        timezone: 'UTC',
        target: { session: 'ses1' },
        misfire: 'run_once',
        overlap: 'queue',
      },
    })
    expect(createRequest(form({ prompt: 'x', name: ' Daily ' }))).toMatchObject({ value: { name: 'Daily', target: 'new_session' } })
    expect(createRequest(form({ prompt: '  ' }))).toMatchObject({ ok: false, field: 'prompt' })
  })

  it('sends the timezone as typed, and none when the field is empty (the server gives it yours)', () => {
    expect(createRequest(form({ prompt: 'x', timezone: ' Asia/Shanghai ' }))).toMatchObject({ value: { timezone: 'Asia/Shanghai' } })
    expect(createRequest(form({ prompt: 'x', timezone: '' }))).not.toHaveProperty('value.timezone')
  })

  it('reads a schedule back into the form', () => {
    expect(formFromSchedule(schedule())).toMatchObject({ kind: 'cron', cron: '0 9 * * 1-5', timezone: 'Asia/Shanghai', session: '' })
    expect(formFromSchedule(schedule({ trigger: { every_secs: 900 } }))).toMatchObject({ kind: 'every', everyMinutes: '15' })
    expect(formFromSchedule(schedule({ trigger: { at: '2026-12-24T10:00:00Z' }, target: { session: 's9' } }))).toMatchObject({
      kind: 'at',
      at: '2026-12-24T18:00:00',
      session: 's9',
    })
  })

  it('changes only what the form changed: an untouched trigger keeps its next fire', () => {
    const s = schedule()
    expect(patchRequest(s, formFromSchedule(s))).toEqual({ ok: true, value: {} })
    expect(patchRequest(s, { ...formFromSchedule(s), name: 'Brief', overlap: 'queue' })).toEqual({
      ok: true,
      value: { name: 'Brief', overlap: 'queue' },
    })
    expect(patchRequest(s, { ...formFromSchedule(s), cron: '0 10 * * *' })).toEqual({ ok: true, value: { trigger: { cron: '0 10 * * *' } } })
    const at = schedule({ trigger: { at: '2026-12-24T10:00:00Z' } })
    expect(patchRequest(at, formFromSchedule(at))).toEqual({ ok: true, value: {} })
    expect(patchRequest(s, { ...formFromSchedule(s), session: 'ses2' })).toEqual({ ok: true, value: { target: { session: 'ses2' } } })
  })

  it('delivers to the channels ticked: none sends nothing, so the inbox alone gets it', () => {
    expect(createRequest(form({ prompt: 'x' }))).not.toHaveProperty('value.deliver')
    expect(createRequest(form({ prompt: 'x', deliver: ['chn1', 'chn2'] }))).toMatchObject({ value: { deliver: ['chn1', 'chn2'] } })
    expect(formFromSchedule(schedule({ deliver: ['chn1'] })).deliver).toEqual(['chn1'])
    expect(formFromSchedule(schedule()).deliver).toEqual([])
  })

  it('sends the channels again only when the set changed (untouched, or reordered, it is left out)', () => {
    const s = schedule({ deliver: ['chn1', 'chn2'] })
    expect(patchRequest(s, formFromSchedule(s))).toEqual({ ok: true, value: {} })
    expect(patchRequest(s, { ...formFromSchedule(s), deliver: ['chn2', 'chn1'] })).toEqual({ ok: true, value: {} })
    expect(patchRequest(s, { ...formFromSchedule(s), deliver: ['chn2'] })).toEqual({ ok: true, value: { deliver: ['chn2'] } })
    // Unticking the last one sends an empty list: the schedule stops delivering anywhere but the inbox.
    expect(patchRequest(s, { ...formFromSchedule(s), deliver: [] })).toEqual({ ok: true, value: { deliver: [] } })
    expect(patchRequest(schedule(), { ...formFromSchedule(schedule()), deliver: ['chn3'] })).toEqual({
      ok: true,
      value: { deliver: ['chn3'] },
    })
  })
})

describe('a 422 next to its field', () => {
  it('finds the field the message starts with', () => {
    expect(fieldError('trigger.cron: "0 9 * *" has 4 fields; a pattern has five')).toEqual({
      field: 'trigger',
      text: '"0 9 * *" has 4 fields; a pattern has five',
    })
    expect(fieldError('timezone: "Mars" is not an IANA timezone')).toEqual({ field: 'timezone', text: '"Mars" is not an IANA timezone' })
    expect(fieldError('target.session: no session "x" of yours').field).toBe('target')
    expect(fieldError('name: must not be empty').field).toBe('name')
    expect(fieldError('deliver: no channel "chn9" of yours')).toEqual({ field: 'deliver', text: 'no channel "chn9" of yours' })
  })

  it('keeps a message that names no field of the form whole', () => {
    expect(fieldError('count: must be between 1 and 20')).toEqual({ field: null, text: 'count: must be between 1 and 20' })
    expect(fieldError('You have too many schedules')).toEqual({ field: null, text: 'You have too many schedules' })
  })
})

describe('a fire’s lateness', () => {
  const fire = (fire_at: string, fired_at: string): Fire => ({ fire_at, fired_at, outcome: 'started', manual: false })

  it('is the time between when it was due and when it was claimed', () => {
    expect(latenessMs(fire('2026-12-07T01:00:00Z', '2026-12-07T01:00:00.400Z'))).toBe(400)
    expect(latenessMs(fire('2026-12-07T01:00:00Z', '2026-12-07T01:03:05Z'))).toBe(185_000)
    expect(latenessMs(fire('2026-12-07T01:00:01Z', '2026-12-07T01:00:00Z'))).toBe(0)
  })

  it('reads shortly', () => {
    expect(fmtLateness(400)).toBe('0.4 s')
    expect(fmtLateness(12_300)).toBe('12 s')
    expect(fmtLateness(185_000)).toBe('3 min 5 s')
    expect(fmtLateness(120_000)).toBe('2 min')
    expect(fmtLateness(3 * 3600_000 + 10 * 60_000)).toBe('3 h 10 min')
    expect(fmtLateness(2 * 86_400_000 + 4 * 3600_000)).toBe('2 d 4 h')
    expect(fmtLateness(86_400_000)).toBe('1 d')
  })
})

describe('when the list is read again', () => {
  const now = Date.parse('2026-12-07T00:59:50Z')

  it('just after the soonest fire, at most every 30 s', () => {
    expect(refreshDelay([], now)).toBe(30_000)
    expect(refreshDelay([schedule({ next_fire_at: '2026-12-07T09:00:00+08:00' })], now)).toBe(11_500)
    expect(refreshDelay([schedule({ next_fire_at: '2026-12-07T09:00:00+08:00', enabled: false })], now)).toBe(30_000)
    expect(refreshDelay([schedule({ next_fire_at: '2026-12-07T00:00:00Z' })], now)).toBe(1_000)
  })

  it('soon while a fire’s run is going', () => {
    const running: Fire = { fire_at: 'x', fired_at: 'x', outcome: 'started', manual: true, run_id: 'r', run_status: 'running' }
    expect(fireLive(running)).toBe(true)
    expect(fireLive({ ...running, run_status: 'succeeded' })).toBe(false)
    expect(fireLive({ ...running, outcome: 'skipped', run_status: undefined })).toBe(false)
    expect(refreshDelay([schedule({ next_fire_at: null, last_fire: running })], now)).toBe(2_000)
  })
})
