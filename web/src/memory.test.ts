import { describe, expect, it } from 'vitest'
import { translator } from './i18n'
import {
  KIND_TEXT,
  MAX_MEMORY_CHARS,
  MEMORY_KINDS,
  checkMemoryText,
  compareMemories,
  countByKind,
  exportFile,
  forgetConfirmed,
  inPageOrder,
  isProfile,
  kindFromParam,
  memoryChars,
  memoryOrigin,
  wasEdited,
  withSaved,
  withoutMemory,
} from './memory'
import type { Memory } from './types'

const mem = (id: string, extra: Partial<Memory> = {}): Memory => ({
  id,
  kind: 'fact',
  text: `text of ${id}`,
  pinned: false,
  profile: false,
  source: { type: 'manual' },
  created_at: 1_000,
  updated_at: 1_000,
  last_used_at: null,
  ...extra,
})

const ids = (list: readonly Memory[]) => list.map((m) => m.id)

describe('memory kinds', () => {
  it('reads the tab from ?kind=, else the first', () => {
    for (const k of MEMORY_KINDS) expect(kindFromParam(k)).toBe(k)
    expect(kindFromParam(null)).toBe(MEMORY_KINDS[0])
    expect(kindFromParam('')).toBe(MEMORY_KINDS[0])
    expect(kindFromParam('FACT')).toBe(MEMORY_KINDS[0])
    // Names every object has are not kinds.
    expect(kindFromParam('toString')).toBe(MEMORY_KINDS[0])
    expect(kindFromParam('__proto__')).toBe(MEMORY_KINDS[0])
  })

  it('counts each kind, zero for a kind with none', () => {
    const list = [mem('a'), mem('b', { kind: 'procedure' }), mem('c'), mem('d', { kind: 'procedure' }), mem('e')]
    expect(countByKind(list)).toEqual({ fact: 3, episode: 0, procedure: 2 })
    expect(countByKind([])).toEqual({ fact: 0, episode: 0, procedure: 0 })
  })

  it('has words for every kind in both languages', () => {
    for (const lang of ['en', 'zh'] as const) {
      const t = translator(lang)
      for (const k of MEMORY_KINDS) {
        for (const key of Object.values(KIND_TEXT[k])) expect(t(key), `${lang} ${key}`).not.toBe(key)
      }
      const tabs = MEMORY_KINDS.map((k) => t(KIND_TEXT[k].tab))
      expect(new Set(tabs).size, `${lang}: three different tab names`).toBe(MEMORY_KINDS.length)
    }
  })
})

describe('memory text', () => {
  it('counts as the server does: trimmed, in Unicode scalar values', () => {
    expect(memoryChars('  hello \n')).toBe(5)
    expect(memoryChars('记忆')).toBe(2)
    expect(memoryChars('🧠🧠')).toBe(2)
  })

  it('is 1 to 2,000 characters', () => {
    expect(checkMemoryText('')).toBe('empty')
    expect(checkMemoryText(' \n\t ')).toBe('empty')
    expect(checkMemoryText('I like tea')).toBe('ok')
    expect(checkMemoryText('x'.repeat(MAX_MEMORY_CHARS))).toBe('ok')
    expect(checkMemoryText(`  ${'x'.repeat(MAX_MEMORY_CHARS)}  `)).toBe('ok')
    expect(checkMemoryText('x'.repeat(MAX_MEMORY_CHARS + 1))).toBe('too_long')
    // 2,000 emoji are 4,000 UTF-16 units, and still a memory.
    const emoji = '🧠'.repeat(MAX_MEMORY_CHARS)
    expect(emoji.length).toBe(MAX_MEMORY_CHARS * 2)
    expect(checkMemoryText(emoji)).toBe('ok')
    expect(checkMemoryText(`${emoji}🧠`)).toBe('too_long')
  })
})

describe('the list after a write', () => {
  const list = [
    mem('p1', { pinned: true, updated_at: 50 }),
    mem('a', { updated_at: 40 }),
    mem('b', { updated_at: 30 }),
    mem('c', { updated_at: 20 }),
  ]

  it("keeps the server's order: pinned first, then the most recently changed", () => {
    expect(ids([...list].reverse().sort(compareMemories))).toEqual(ids(list))
    // Ties as the server breaks them: the later id first.
    expect(ids([mem('m1'), mem('m2')].sort(compareMemories))).toEqual(['m2', 'm1'])
  })

  it('puts a new memory first among its kind of pin', () => {
    expect(ids(withSaved(list, mem('new', { updated_at: 60 }), false))).toEqual(['p1', 'new', 'a', 'b', 'c'])
    expect(ids(withSaved(list, mem('top', { pinned: true, updated_at: 60 }), false))).toEqual([
      'top',
      'p1',
      'a',
      'b',
      'c',
    ])
  })

  it('moves a changed memory where the server would put it', () => {
    const pinned = withSaved(list, { ...list[3], pinned: true, updated_at: 60 }, false)
    expect(ids(pinned)).toEqual(['c', 'p1', 'a', 'b'])
    expect(pinned[0].pinned).toBe(true)
    const unpinned = withSaved(pinned, { ...pinned[0], pinned: false, updated_at: 70 }, false)
    expect(ids(unpinned)).toEqual(['p1', 'c', 'a', 'b'])
    const edited = withSaved(list, { ...list[2], text: 'changed', updated_at: 60 }, false)
    expect(ids(edited)).toEqual(['p1', 'b', 'a', 'c'])
    expect(edited[1].text).toBe('changed')
    expect(edited).toHaveLength(list.length)
  })

  it("leaves a search's ranking alone", () => {
    const ranked = [list[2], list[0], list[3]]
    const edited = withSaved(ranked, { ...list[0], pinned: false, updated_at: 90 }, true)
    expect(ids(edited)).toEqual(['b', 'p1', 'c'])
    expect(edited[1].pinned).toBe(false)
    expect(ids(withSaved(ranked, mem('new', { updated_at: 90 }), true))).toEqual(['new', 'b', 'p1', 'c'])
  })

  it('puts the profile first, even before a memory pinned after it', () => {
    const profile = mem('me', { pinned: true, profile: true, updated_at: 45 })
    // The server's order: pinned, then the most recently changed.
    const served = [list[0], profile, list[1], list[2], list[3]]
    expect(ids(inPageOrder(served, false))).toEqual(['me', 'p1', 'a', 'b', 'c'])
    expect(ids([...served].reverse().sort(compareMemories))).toEqual(['me', 'p1', 'a', 'b', 'c'])
    // Unpinned by its person, it is still the profile, still first.
    const unpinned = { ...profile, pinned: false, updated_at: 10 }
    expect(ids(inPageOrder([list[0], list[1], unpinned], false))).toEqual(['me', 'p1', 'a'])
    // A search's ranking is left alone.
    expect(ids(inPageOrder(served, true))).toEqual(ids(served))
    // Without a profile, the server's order as it came.
    expect(ids(inPageOrder(list, false))).toEqual(ids(list))
  })

  it('keeps the profile first when it or another memory is saved', () => {
    const withProfile = [mem('me', { pinned: true, profile: true, updated_at: 45 }), ...list]
    expect(ids(withSaved(withProfile, mem('top', { pinned: true, updated_at: 90 }), false))).toEqual([
      'me',
      'top',
      'p1',
      'a',
      'b',
      'c',
    ])
    const edited = withSaved(withProfile, { ...withProfile[0], text: '- on the payments team', updated_at: 95 }, false)
    expect(ids(edited)).toEqual(ids(withProfile))
    expect(edited[0].text).toBe('- on the payments team')
  })

  it('takes a deleted memory out, and nothing else', () => {
    expect(ids(withoutMemory(list, 'a'))).toEqual(['p1', 'b', 'c'])
    expect(ids(withoutMemory(list, 'nope'))).toEqual(ids(list))
  })
})

describe('a memory', () => {
  it('comes from a conversation (its page) or by hand', () => {
    expect(memoryOrigin({ type: 'manual' })).toEqual({ type: 'manual' })
    expect(memoryOrigin({ type: 'conversation', session_id: 'ses_1', message_id: 'msg_1' })).toEqual({
      type: 'conversation',
      href: '/chat/ses_1',
    })
    expect(memoryOrigin({ type: 'conversation', session_id: 'a/b?c' })).toEqual({
      type: 'conversation',
      href: '/chat/a%2Fb%3Fc',
    })
  })

  it('is the profile only when the server says so', () => {
    expect(isProfile(mem('a', { profile: true }))).toBe(true)
    expect(isProfile(mem('a', { pinned: true }))).toBe(false)
    expect(isProfile(mem('a', { profile: undefined }))).toBe(false)
  })

  it('was edited once it changed after it was made', () => {
    expect(wasEdited(mem('a'))).toBe(false)
    expect(wasEdited(mem('a', { updated_at: 1_001 }))).toBe(true)
  })
})

describe('forget everything', () => {
  it('needs the phrase typed, whatever the case and spacing', () => {
    const phrase = translator('en')('memory.forgetPhrase')
    expect(forgetConfirmed(phrase, phrase)).toBe(true)
    expect(forgetConfirmed(`  ${phrase.toUpperCase()}  `, phrase)).toBe(true)
    expect(forgetConfirmed(phrase.replace(' ', '   '), phrase)).toBe(true)
    expect(forgetConfirmed(phrase.slice(0, -1), phrase)).toBe(false)
    expect(forgetConfirmed('', phrase)).toBe(false)
    expect(forgetConfirmed('yes', phrase)).toBe(false)
  })

  it('takes the phrase of the language shown', () => {
    const zh = translator('zh')('memory.forgetPhrase')
    const en = translator('en')('memory.forgetPhrase')
    expect(forgetConfirmed(zh, zh)).toBe(true)
    expect(forgetConfirmed(en, zh)).toBe(false)
  })

  it('never goes ahead on an empty phrase', () => {
    expect(forgetConfirmed('', '')).toBe(false)
    expect(forgetConfirmed('  ', ' ')).toBe(false)
  })
})

describe('the export', () => {
  it("is named by the local day and holds the server's list", () => {
    const list = { enabled: true, available: true, memories: [mem('a'), mem('b', { kind: 'episode', text: '记忆 "quoted"' })] }
    const f = exportFile(list, new Date(2026, 0, 5, 23, 59))
    expect(f.name).toBe('weft-memories-2026-01-05.json')
    expect(JSON.parse(f.json)).toEqual(list)
    expect(f.json.endsWith('\n')).toBe(true)
    expect(exportFile(list, new Date(2026, 10, 30)).name).toBe('weft-memories-2026-11-30.json')
  })
})
