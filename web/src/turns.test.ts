import { describe, expect, it } from 'vitest'
import { buildTimeline } from './timeline'
import { altNav, lastTurn } from './turns'
import type { Alternative, Message } from './types'

const alt = (run_id: string, minute: number, shown = false): Alternative => ({
  run_id,
  reply: `reply of ${run_id}`,
  shown,
  created_at: `2025-03-01T10:${String(minute).padStart(2, '0')}:00Z`,
})

describe('alternatives navigation', () => {
  it('shows nothing to switch for one reply (or none)', () => {
    expect(altNav([])).toBeNull()
    expect(altNav([alt('r1', 0, true)])).toBeNull()
  })

  it('places the shown reply among the others, oldest first, with its neighbours', () => {
    const list = [alt('r3', 2), alt('r1', 0), alt('r2', 1, true)]
    expect(altNav(list)).toEqual({ position: 2, total: 3, prev: 'r1', next: 'r3' })
    expect(altNav([alt('r1', 0, true), alt('r2', 1)])).toEqual({ position: 1, total: 2, prev: null, next: 'r2' })
    expect(altNav([alt('r1', 0), alt('r2', 1, true)])).toEqual({ position: 2, total: 2, prev: 'r1', next: null })
  })

  it('hides the switch when the list does not describe the reply on screen', () => {
    const list = [alt('r1', 0), alt('r2', 1, true)]
    // The page shows r2: fine.
    expect(altNav(list, 'r2')?.position).toBe(2)
    // The page shows r3 (a newer run the list predates), or r1 while the server says r2.
    expect(altNav(list, 'r3')).toBeNull()
    expect(altNav(list, 'r1')).toBeNull()
    // The shown reply failed and is not listed.
    expect(altNav([alt('r1', 0), alt('r2', 1)])).toBeNull()
  })
})

let n = 0
const msg = (role: string, run_id: string | null, content = role): Message => ({
  id: `m${++n}`,
  session_id: 's',
  role,
  content,
  run_id,
  created_at: '',
})

describe('the newest turn', () => {
  it('is the last user message and the reply after it', () => {
    const items = buildTimeline([msg('user', 'r1'), msg('assistant', 'r1'), msg('user', 'r2'), msg('assistant', 'r2')], [])
    expect(lastTurn(items)).toEqual({ user: 2, reply: 3, runId: 'r2' })
  })

  it('follows a regenerated reply streaming live', () => {
    const items = buildTimeline([msg('user', 'r1'), msg('assistant', 'r1'), msg('user', 'r2')], ['r3'])
    expect(lastTurn(items)).toEqual({ user: 2, reply: 3, runId: 'r3' })
  })

  it('has no reply while the question waits, and is absent in an empty chat', () => {
    const items = buildTimeline([msg('user', null, 'queued')], [])
    expect(lastTurn(items)).toEqual({ user: 0, reply: -1, runId: null })
    expect(lastTurn([])).toBeNull()
  })
})
