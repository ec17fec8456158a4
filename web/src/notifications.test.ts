import { describe, expect, it } from 'vitest'
import { translator } from './i18n'
import { KIND_LABEL, browserNotifyState, countLabel, freshUnread, notificationHref, planAlerts, timeAgo } from './notifications'
import type { NotificationItem } from './types'

const item = (id: string, read = false): NotificationItem => ({
  id,
  kind: 'schedule_finished',
  title: `Schedule ${id}`,
  body: 'succeeded: done',
  created_at: '2026-03-01T09:00:00Z',
  read_at: read ? '2026-03-01T09:05:00Z' : null,
})

describe('the bell', () => {
  it('shows nothing at 0, the number up to 99, then 99+', () => {
    expect(countLabel(0)).toBe('')
    expect(countLabel(-1)).toBe('')
    expect(countLabel(Number.NaN)).toBe('')
    expect(countLabel(1)).toBe('1')
    expect(countLabel(99)).toBe('99')
    expect(countLabel(100)).toBe('99+')
    expect(countLabel(12345)).toBe('99+')
  })

  it('finds the unread entries not seen before, newest first', () => {
    const seen = new Set(['a', 'b'])
    const list = [item('d'), item('c'), item('e', true), item('b'), item('a')]
    expect(freshUnread(seen, list).map((n) => n.id)).toEqual(['d', 'c'])
    expect(freshUnread(new Set(['a', 'b', 'c', 'd']), list)).toEqual([])
    expect(freshUnread(new Set(), [])).toEqual([])
  })

  it('shows at most three browser notifications, then one for the rest', () => {
    const some = [item('1'), item('2')]
    expect(planAlerts(some)).toEqual({ each: some, more: 0 })
    const three = [item('1'), item('2'), item('3')]
    expect(planAlerts(three)).toEqual({ each: three, more: 0 })
    const five = [item('1'), item('2'), item('3'), item('4'), item('5')]
    const plan = planAlerts(five)
    expect(plan.each.map((n) => n.id)).toEqual(['1', '2', '3'])
    expect(plan.more).toBe(2)
    expect(planAlerts([])).toEqual({ each: [], more: 0 })
  })

  it('notifies in the browser only when asked and still allowed', () => {
    expect(browserNotifyState('1', 'granted')).toBe('on')
    expect(browserNotifyState('0', 'granted')).toBe('off')
    expect(browserNotifyState(null, 'granted')).toBe('off')
    expect(browserNotifyState('1', 'default')).toBe('off')
    expect(browserNotifyState('1', 'denied')).toBe('denied')
    expect(browserNotifyState('1', undefined)).toBe('unsupported')
  })

  it('says how long ago an entry came', () => {
    const now = Date.parse('2026-03-10T12:00:00Z')
    const ago = (ms: number) => new Date(now - ms).toISOString()
    expect(timeAgo(ago(10_000), 'en', now)).toBe('now')
    expect(timeAgo(ago(5 * 60_000), 'en', now)).toBe('5 minutes ago')
    expect(timeAgo(ago(3 * 3600_000), 'en', now)).toBe('3 hours ago')
    expect(timeAgo(ago(26 * 3600_000), 'en', now)).toBe('yesterday')
    expect(timeAgo(ago(3 * 86400_000), 'en', now)).toBe('3 days ago')
    expect(timeAgo(ago(5 * 60_000), 'zh', now)).toBe('5分钟前')
    expect(timeAgo(ago(30 * 86400_000), 'en', now)).not.toMatch(/ago/)
    expect(timeAgo('not a time', 'en', now)).toBe('not a time')
  })
})

describe('what an entry is and where it goes', () => {
  it('opens a run’s conversation; a channel’s test, which has none, opens the channels page', () => {
    expect(notificationHref({ kind: 'schedule_finished', session_id: 'ses/1' })).toBe('/chat/ses%2F1')
    expect(notificationHref({ kind: 'schedule_waiting', session_id: 'ses1' })).toBe('/chat/ses1')
    // A conversation of the person's own that waits for them: no schedule, the same conversation.
    expect(notificationHref({ kind: 'run_waiting', session_id: 'ses 2' })).toBe('/chat/ses%202')
    expect(notificationHref({ kind: 'channel_test', session_id: null })).toBe('/channels')
    expect(notificationHref({ kind: 'schedule_finished', session_id: null })).toBeNull()
  })

  it('tags each kind, in both languages', () => {
    expect(Object.keys(KIND_LABEL).sort()).toEqual(['channel_test', 'run_waiting', 'schedule_finished', 'schedule_waiting'])
    expect(translator('en')(KIND_LABEL.channel_test)).toBe('channel test')
    expect(translator('zh')(KIND_LABEL.channel_test)).toBe('渠道测试')
    expect(translator('en')(KIND_LABEL.run_waiting)).toBe('conversation waiting')
    expect(translator('zh')(KIND_LABEL.run_waiting)).toBe('对话等待你处理')
    // Each kind has its own tag, so the bell tells a schedule's wait from a conversation's.
    for (const lang of ['en', 'zh'] as const) {
      const t = translator(lang)
      const tags = Object.values(KIND_LABEL).map((k) => t(k))
      expect(new Set(tags).size).toBe(tags.length)
    }
  })
})
