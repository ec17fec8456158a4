import { describe, expect, it } from 'vitest'
import { adoptAttachments, buildTimeline, mergeMessages } from './timeline'
import type { Message } from './types'

let n = 0
const msg = (role: Message['role'], run_id: string | null, content: string = role): Message => ({
  id: `m${++n}`,
  session_id: 's',
  role,
  content,
  run_id,
  created_at: '',
})

const shape = (items: ReturnType<typeof buildTimeline>) =>
  items.map((i) => (i.kind === 'user' ? `user:${i.message.content}` : i.kind === 'live' ? `live:${i.runId}` : `reply:${i.runId}:${i.messages.length}`))

describe('timeline', () => {
  it('groups each run’s assistant and tool messages into one reply after its user message', () => {
    const ms = [msg('user', 'r1', 'q1'), msg('assistant', 'r1'), msg('tool', 'r1'), msg('assistant', 'r1'), msg('user', 'r2', 'q2'), msg('assistant', 'r2')]
    expect(shape(buildTimeline(ms, []))).toEqual(['user:q1', 'reply:r1:3', 'user:q2', 'reply:r2:1'])
  })

  it('renders a live run from events only: its checkpointed messages are left out', () => {
    const ms = [msg('user', 'r1', 'q1'), msg('assistant', 'r1', 'checkpointed step 1')]
    expect(shape(buildTimeline(ms, ['r1']))).toEqual(['user:q1', 'live:r1'])
  })

  it('places a reply after the last of several queued user messages of one run', () => {
    const ms = [msg('user', 'r1', 'a'), msg('assistant', 'r1'), msg('user', 'r2', 'b'), msg('user', 'r2', 'c')]
    expect(shape(buildTimeline(ms, ['r2']))).toEqual(['user:a', 'reply:r1:1', 'user:b', 'user:c', 'live:r2'])
  })

  it('gives a failed run with no reply a place for its error', () => {
    const ms = [msg('user', 'r1', 'q')]
    expect(shape(buildTimeline(ms, []))).toEqual(['user:q', 'reply:r1:0'])
  })

  it('appends a live run whose user message is not loaded', () => {
    expect(shape(buildTimeline([msg('user', 'r1', 'q')], ['r1', 'r9']))).toEqual(['user:q', 'live:r1', 'live:r9'])
  })

  it('merges a refreshed page without duplicating', () => {
    const a = msg('user', 'r1')
    const b = msg('assistant', 'r1')
    const c = msg('user', 'r2')
    const cur = [a, b]
    expect(mergeMessages(cur, [a, b])).toBe(cur)
    expect(mergeMessages(cur, [b, c]).map((m) => m.id)).toEqual([a.id, b.id, c.id])
  })
})

describe('timeline after a turn is answered again', () => {
  it('shows the regenerated reply in place of the question’s first run', () => {
    // The question keeps run r1's id; r1's reply is now an alternative (hidden).
    const ms = [msg('user', 'r0', 'q0'), msg('assistant', 'r0'), msg('user', 'r1', 'q1'), msg('assistant', 'r2', 'again')]
    expect(shape(buildTimeline(ms, []))).toEqual(['user:q0', 'reply:r0:1', 'user:q1', 'reply:r2:1'])
  })

  it('streams the new run where the old reply was', () => {
    const ms = [msg('user', 'r1', 'q1')]
    expect(shape(buildTimeline(ms, ['r2']))).toEqual(['user:q1', 'live:r2'])
  })

  it('keeps an empty reply that is the last word on its question (a failed run’s error)', () => {
    const ms = [msg('user', 'r1', 'q1'), msg('user', 'r2', 'q2'), msg('assistant', 'r2')]
    expect(shape(buildTimeline(ms, []))).toEqual(['user:q1', 'reply:r1:0', 'user:q2', 'reply:r2:1'])
  })
})

describe('attachments of a message sent from this tab', () => {
  const shot = { id: 'f1', name: 'shot.png', kind: 'image' as const, mime: 'image/png', bytes: 42 }

  it('are taken from the server’s page once it lists them', () => {
    const sent = msg('user', 'r1', 'what is this?')
    const shown = [msg('user', 'r0', 'hi'), sent]
    const page = [{ ...sent, attachments: [shot] }, msg('assistant', 'r1')]
    const adopted = adoptAttachments(shown, page)
    expect(adopted[1].attachments).toEqual([shot])
    expect(adopted[0]).toBe(shown[0])
    // merging does it too, and adds what was missing
    const merged = mergeMessages(shown, page)
    expect(merged.map((m) => m.attachments?.length ?? 0)).toEqual([0, 1, 0])
  })

  it('leave what is shown untouched when the page adds no files', () => {
    const shown = [msg('user', 'r1', 'a')]
    expect(adoptAttachments(shown, [{ ...shown[0] }])).toBe(shown)
    const withFiles = [{ ...msg('user', 'r2', 'b'), attachments: [shot] }]
    expect(adoptAttachments(withFiles, [{ ...withFiles[0], attachments: [{ ...shot, id: 'f2' }] }])).toBe(withFiles)
  })
})
