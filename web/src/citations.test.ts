import { describe, expect, it } from 'vitest'
import { earlierWindow, mergeChunks, placeLabel, replyCitations, splitCitations } from './citations'
import type { Citation, DocumentChunk, Message } from './types'

const cited = new Set([1, 2])

const cite = (n: number, document_name = `doc${n}.md`): Citation => ({
  n,
  knowledge_id: 'kb',
  document_id: `d${n}`,
  document_name,
  chunk_id: `c${n}`,
  snippet: `passage ${n}`,
  position: 'Handbook > Leave',
})

const chunk = (ord: number): DocumentChunk => ({ id: `c${ord}`, ord, text: `text ${ord}`, position: '' })

describe('citations in a reply’s text', () => {
  it('splits out every cited [n], side by side and in lists', () => {
    expect(splitCitations('Leave is 25 days [1].', cited)).toEqual(['Leave is 25 days ', 1, '.'])
    expect(splitCitations('Both [1][2] agree', cited)).toEqual(['Both ', 1, 2, ' agree'])
    expect(splitCitations('Both [1, 2] and [2,1]', cited)).toEqual(['Both ', 1, 2, ' and ', 2, 1])
    expect(splitCitations('[2] first', cited)).toEqual([2, ' first'])
  })

  it('leaves numbers nobody cited as they were written', () => {
    expect(splitCitations('see [3] and [10]', cited)).toEqual(['see [3] and [10]'])
    expect(splitCitations('arrays like a[0] or [x]', cited)).toEqual(['arrays like a[0] or [x]'])
    // In a list with a cited number, the uncited one keeps its brackets.
    expect(splitCitations('see [1, 3].', cited)).toEqual(['see ', 1, '[3].'])
    expect(splitCitations('no sources [1]', new Set())).toEqual(['no sources [1]'])
  })

  it('collects a stored reply’s sources from its assistant messages, each number once', () => {
    const m = (role: Message['role'], citations?: Citation[]): Message => ({
      id: role,
      session_id: 's',
      role,
      content: '',
      run_id: 'r',
      created_at: '',
      citations,
    })
    expect(replyCitations([m('assistant'), m('tool'), m('assistant', [cite(2), cite(1)])]).map((c) => c.n)).toEqual([2, 1])
    expect(replyCitations([m('assistant', [cite(1)]), m('assistant', [cite(1, 'other.md'), cite(3)])]).map((c) => c.document_name)).toEqual([
      'doc1.md',
      'doc3.md',
    ])
    expect(replyCitations([m('user', [cite(1)])])).toEqual([])
  })
})

describe('reading a cited document on', () => {
  it('asks for the chunks just before the first one shown, never before the start', () => {
    expect(earlierWindow(0, 20)).toBeNull()
    expect(earlierWindow(7, 20)).toEqual({ limit: 7 })
    expect(earlierWindow(20, 20)).toEqual({ limit: 20 })
    // after=29 reads ords 30…49: the 20 before ord 50.
    expect(earlierWindow(50, 20)).toEqual({ after: 29, limit: 20 })
  })

  it('merges pages into one run of chunks in document order, each once', () => {
    const shown = [chunk(10), chunk(11), chunk(12)]
    expect(mergeChunks(shown, [chunk(7), chunk(8), chunk(9)]).map((c) => c.ord)).toEqual([7, 8, 9, 10, 11, 12])
    expect(mergeChunks(shown, [chunk(12), chunk(13)]).map((c) => c.ord)).toEqual([10, 11, 12, 13])
  })

  it('names a chunk’s place where it changes and the text does not show its heading', () => {
    const page = (ord: number, n: number, text = 'plain text'): DocumentChunk => ({ id: `p${ord}`, ord, text, position: `page ${n}`, page: n })
    expect(placeLabel(page(0, 1), undefined)).toBe('page 1')
    expect(placeLabel(page(1, 1), page(0, 1))).toBeNull()
    expect(placeLabel(page(2, 2), page(1, 1))).toBe('page 2')
    const section = { id: 's', ord: 3, text: '## Leave\n\n25 days.', position: 'Handbook > Leave' }
    expect(placeLabel(section, page(2, 2))).toBeNull()
    expect(placeLabel({ ...section, text: 'continued' }, page(2, 2))).toBe('Handbook > Leave')
    expect(placeLabel({ ...chunk(4), position: '' }, undefined)).toBeNull()
  })
})
