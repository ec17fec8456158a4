import { describe, expect, it } from 'vitest'
import { translator } from './i18n'
import {
  applyKnowledgeEvent,
  errorNote,
  fallbackNote,
  isHidden,
  needsPolling,
  news,
  pickedFromList,
  progressFraction,
  progressLabel,
  searchModeHint,
  searchModeLabel,
  uploadsReducer,
  uploadSummary,
  validBaseName,
  walkEntries,
  type EntryLike,
  type UploadRow,
} from './knowledge'
import type { KnowledgeDocument } from './types'

const file = (name: string, text = 'x', relative = '') => {
  const f = new File([text], name)
  if (relative) Object.defineProperty(f, 'webkitRelativePath', { value: relative })
  return f
}

function fileEntry(name: string): EntryLike {
  return { name, isFile: true, isDirectory: false, file: (ok: (f: File) => void) => ok(file(name)) } as EntryLike
}

/** A directory whose reader hands out `batch` entries per call, then an empty batch. */
function dirEntry(name: string, children: EntryLike[], batch = 2): EntryLike {
  return {
    name,
    isFile: false,
    isDirectory: true,
    createReader() {
      let at = 0
      return {
        readEntries(ok: (es: EntryLike[]) => void) {
          const out = children.slice(at, at + batch)
          at += out.length
          setTimeout(() => ok(out), 0)
        },
      }
    },
  } as EntryLike
}

const doc = (id: string, status: KnowledgeDocument['status'], extra: Partial<KnowledgeDocument> = {}): KnowledgeDocument => ({
  id,
  status,
  name: `${id}.md`,
  bytes: 10,
  chunks: status === 'ready' ? 3 : 0,
  created_at: 0,
  updated_at: 0,
  knowledge_id: 'kb',
  mime: 'text/markdown',
  sha256: 'ab',
  ...extra,
})

describe('hidden files', () => {
  it('skips dot-files and anything under a dot-folder', () => {
    expect(isHidden('.DS_Store')).toBe(true)
    expect(isHidden('docs/.git/config')).toBe(true)
    expect(isHidden('docs/setup.md')).toBe(false)
    expect(isHidden('notes.v2.md')).toBe(false)
  })

  it('keeps the folder path from a folder picker', () => {
    const picked = pickedFromList([file('a.md', 'x', 'docs/a.md'), file('.env', 'x', 'docs/.env'), file('b.txt')])
    expect(picked.map((p) => p.path)).toEqual(['docs/a.md', 'b.txt'])
  })
})

describe('walking dropped folders', () => {
  it('reads every batch of every folder, depth first, without hidden entries', async () => {
    const tree = [
      fileEntry('top.md'),
      dirEntry('docs', [
        fileEntry('a.md'),
        fileEntry('.hidden.md'),
        dirEntry('sub', [fileEntry('b.md'), fileEntry('c.txt'), fileEntry('d.csv')]),
        dirEntry('.git', [fileEntry('HEAD')]),
        fileEntry('e.md'),
      ]),
      fileEntry('.DS_Store'),
    ]
    const files = await walkEntries(tree)
    expect(files.map((f) => f.path)).toEqual(['top.md', 'docs/a.md', 'docs/sub/b.md', 'docs/sub/c.txt', 'docs/sub/d.csv', 'docs/e.md'])
    expect(files[2].file.name).toBe('b.md')
  })

  it('gives nothing for an empty folder', async () => {
    expect(await walkEntries([dirEntry('empty', [])])).toEqual([])
  })
})

describe('the upload list', () => {
  const start = (): UploadRow[] =>
    uploadsReducer([], {
      type: 'add',
      rows: [
        { key: 'a', path: 'a.md', bytes: 5 },
        { key: 'b', path: 'b.bin', bytes: 7 },
      ],
    })

  it('goes waiting → uploading → indexing → ready, and a refusal fails only its row', () => {
    let rows = start()
    expect(rows.map((r) => r.state.phase)).toEqual(['waiting', 'waiting'])
    rows = uploadsReducer(rows, { type: 'progress', key: 'a', pct: 42.4 })
    expect(rows[0].state).toEqual({ phase: 'uploading', pct: 42 })
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'a', doc: doc('d1', 'queued'), created: true, at: 10 })
    expect(rows[0].state).toMatchObject({ phase: 'indexing', docId: 'd1', status: 'queued' })
    rows = uploadsReducer(rows, { type: 'refused', key: 'b', error: 'blob.bin: unsupported type' })
    expect(rows[1].state).toEqual({ phase: 'failed', error: 'blob.bin: unsupported type' })
    expect(needsPolling(rows, [])).toBe(true)

    rows = uploadsReducer(rows, { type: 'documents', documents: [doc('d1', 'processing')], asOf: 11 })
    expect(rows[0].state).toMatchObject({ phase: 'indexing', status: 'processing' })
    rows = uploadsReducer(rows, { type: 'documents', documents: [doc('d1', 'ready')], asOf: 12 })
    expect(rows[0].state).toEqual({ phase: 'ready', docId: 'd1', chunks: 3, duplicate: false })
    expect(needsPolling(rows, [doc('d1', 'ready')])).toBe(false)
    expect(uploadSummary(rows)).toEqual({ done: 1, failed: 1, total: 2 })

    rows = uploadsReducer(rows, { type: 'clear' })
    expect(rows).toEqual([])
  })

  it("shows a failed document's error, and a duplicate as already there", () => {
    let rows = start()
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'a', doc: doc('d1', 'ready'), created: false, at: 1 })
    expect(rows[0].state).toMatchObject({ phase: 'ready', duplicate: true })
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'b', doc: doc('d2', 'queued'), created: true, at: 2 })
    rows = uploadsReducer(rows, {
      type: 'documents',
      documents: [doc('d2', 'failed', { error: 'no text layer (scanned PDF)' })],
      asOf: 3,
    })
    expect(rows[1].state).toEqual({ phase: 'failed', docId: 'd2', error: 'no text layer (scanned PDF)' })
  })

  it('ignores a list asked for before the upload was stored, but not a later one without the document', () => {
    let rows = start()
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'a', doc: doc('d1', 'queued'), created: true, at: 100 })
    const before = uploadsReducer(rows, { type: 'documents', documents: [], asOf: 99 })
    expect(before).toBe(rows)
    const after = uploadsReducer(rows, { type: 'documents', documents: [], asOf: 101 }, 'deleted')
    expect(after[0].state).toEqual({ phase: 'failed', error: 'deleted' })
  })

  it('carries the stage and the retry note of a document still indexing', () => {
    let rows = start()
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'a', doc: doc('d1', 'queued'), created: true, at: 1 })
    const embedding = { stage: 'embedding' as const, done: 40, total: 480 }
    rows = uploadsReducer(rows, {
      type: 'documents',
      documents: [doc('d1', 'processing', { progress: embedding, error: 'embeddings: connection refused' })],
      asOf: 2,
    })
    expect(rows[0].state).toMatchObject({ phase: 'indexing', progress: embedding, note: 'embeddings: connection refused' })
    // the same list again changes nothing; a new count does
    expect(
      uploadsReducer(rows, {
        type: 'documents',
        documents: [doc('d1', 'processing', { progress: embedding, error: 'embeddings: connection refused' })],
        asOf: 3,
      }),
    ).toBe(rows)
    const next = uploadsReducer(rows, {
      type: 'documents',
      documents: [doc('d1', 'processing', { progress: { ...embedding, done: 120 } })],
      asOf: 4,
    })
    expect(next[0].state).toMatchObject({ phase: 'indexing', progress: { done: 120 } })
    // the try after the error went through: the note is gone
    expect(next[0].state.phase === 'indexing' && next[0].state.note).toBeUndefined()
  })

  it('polls while a document of the base is still being read', () => {
    expect(needsPolling([], [doc('x', 'ready'), doc('y', 'processing')])).toBe(true)
    expect(needsPolling([], [doc('x', 'failed')])).toBe(false)
  })
})

describe("the base's event stream", () => {
  const at = (id: string, status: KnowledgeDocument['status'], updated_at: number, extra: Partial<KnowledgeDocument> = {}) =>
    doc(id, status, { updated_at, ...extra })

  it('adds a new document first, replaces a known one, and drops a deleted one', () => {
    let docs = [at('d1', 'ready', 5)]
    docs = applyKnowledgeEvent(docs, { type: 'document', document: at('d2', 'queued', 6) })
    expect(docs.map((d) => [d.id, d.status])).toEqual([
      ['d2', 'queued'],
      ['d1', 'ready'],
    ])
    const reading = { stage: 'reading' as const, done: 0, total: 0 }
    docs = applyKnowledgeEvent(docs, { type: 'document', document: at('d2', 'processing', 7, { progress: reading }) })
    expect(docs[0]).toMatchObject({ status: 'processing', progress: reading })
    docs = applyKnowledgeEvent(docs, { type: 'document_deleted', document_id: 'd1' })
    expect(docs.map((d) => d.id)).toEqual(['d2'])
    for (const ev of [{ type: 'resync' as const }, { type: 'deleted' as const, knowledge_id: 'kb' }]) {
      expect(applyKnowledgeEvent(docs, ev)).toBe(docs)
    }
  })

  it('ignores old news: an event that was on its way while the list was read', () => {
    const ready = at('d1', 'ready', 9)
    // progress told while it was read, arriving after the list that shows it ready
    expect(news(at('d1', 'processing', 7), ready)).toBe(false)
    expect(news(at('d1', 'processing', 9), ready)).toBe(false)
    expect(applyKnowledgeEvent([ready], { type: 'document', document: at('d1', 'processing', 7) })).toEqual([ready])
    // progress within one state keeps its `updated_at`: each report is news
    expect(news(at('d1', 'processing', 7), at('d1', 'processing', 7))).toBe(true)
    // tried again later (a retry from the page): news
    expect(news(at('d1', 'queued', 12), ready)).toBe(true)
  })

  it("moves an upload row with its document's events, old news aside", () => {
    let rows = uploadsReducer([], { type: 'add', rows: [{ key: 'a', path: 'a.md', bytes: 5 }] })
    rows = uploadsReducer(rows, { type: 'uploaded', key: 'a', doc: at('d1', 'queued', 3), created: true, at: 1 })
    const embedding = { stage: 'embedding' as const, done: 8, total: 16 }
    rows = uploadsReducer(rows, { type: 'document', document: at('d1', 'processing', 4, { progress: embedding }) })
    expect(rows[0].state).toMatchObject({ phase: 'indexing', status: 'processing', progress: embedding })
    const other = uploadsReducer(rows, { type: 'document', document: at('d9', 'ready', 5) })
    expect(other).toBe(rows)
    const stale = uploadsReducer(rows, { type: 'document', document: at('d1', 'queued', 3) })
    expect(stale).toBe(rows)
    rows = uploadsReducer(rows, { type: 'document', document: at('d1', 'ready', 6) })
    expect(rows[0].state).toEqual({ phase: 'ready', docId: 'd1', chunks: 3, duplicate: false })
    // a document deleted while it was read
    let gone = uploadsReducer([], { type: 'add', rows: [{ key: 'b', path: 'b.md', bytes: 5 }] })
    gone = uploadsReducer(gone, { type: 'uploaded', key: 'b', doc: at('d2', 'queued', 3), created: true, at: 1 })
    gone = uploadsReducer(gone, { type: 'deleted', id: 'd2' }, 'deleted meanwhile')
    expect(gone[0].state).toEqual({ phase: 'failed', error: 'deleted meanwhile' })
  })
})

describe('base names', () => {
  it('follows the server rule', () => {
    expect(validBaseName('Handbook 2026')).toBe(true)
    expect(validBaseName('手册_v1.2')).toBe(true)
    expect(validBaseName('')).toBe(false)
    expect(validBaseName('a/b')).toBe(false)
    expect(validBaseName('x'.repeat(65))).toBe(false)
  })
})

describe('ingestion progress', () => {
  const en = translator('en')
  const zh = translator('zh')
  const reading = { stage: 'reading' as const, done: 0, total: 0 }
  const embedding = (done: number, total: number) => ({ stage: 'embedding' as const, done, total })

  it('tells the stage of a document being ingested, in both languages', () => {
    expect(progressLabel(doc('a', 'processing', { progress: reading }), en)).toBe('Reading…')
    expect(progressLabel(doc('a', 'processing', { progress: reading }), zh)).toBe('读取中…')
    expect(progressLabel(doc('a', 'processing', { progress: embedding(120, 480) }), en)).toBe('Embedding 120 / 480 chunks')
    expect(progressLabel(doc('a', 'processing', { progress: embedding(120, 480) }), zh)).toBe('向量化 120 / 480 个分块')
    // queued again (a retry) after a report: still told
    expect(progressLabel(doc('a', 'queued', { progress: embedding(3, 4) }), en)).toBe('Embedding 3 / 4 chunks')
  })

  it('says nothing before the first report, and nothing once the document is done', () => {
    expect(progressLabel(doc('a', 'queued'), en)).toBeNull()
    expect(progressLabel(doc('a', 'processing', { progress: null }), en)).toBeNull()
    expect(progressLabel(doc('a', 'ready', { progress: embedding(480, 480) }), en)).toBeNull()
    expect(progressLabel(doc('a', 'failed', { progress: reading }), en)).toBeNull()
    expect(progressFraction(doc('a', 'ready', { progress: embedding(480, 480) }))).toBeNull()
  })

  it('shows a bar only for embedding with a known total, kept within 0–1', () => {
    expect(progressFraction(doc('a', 'processing', { progress: embedding(120, 480) }))).toBe(0.25)
    expect(progressFraction(doc('a', 'processing', { progress: reading }))).toBeNull()
    expect(progressFraction(doc('a', 'processing', { progress: embedding(0, 0) }))).toBeNull()
    expect(progressFraction(doc('a', 'processing', { progress: embedding(9, 4) }))).toBe(1)
    // no total yet: no count either
    expect(progressLabel(doc('a', 'processing', { progress: embedding(0, 0) }), en)).toBe('Embedding…')
    expect(progressLabel(doc('a', 'processing', { progress: embedding(9, 4) }), en)).toBe('Embedding 4 / 4 chunks')
  })

  it("tells a retried document's last error apart from a failed one's", () => {
    const err = 'embeddings: 503 Service Unavailable'
    expect(errorNote(doc('a', 'processing', { error: err }), en)).toEqual({
      kind: 'retry',
      text: `Waiting to retry: ${err}`,
    })
    expect(errorNote(doc('a', 'processing', { error: err }), zh)?.text).toBe(`等待重试：${err}`)
    expect(errorNote(doc('a', 'failed', { error: 'no text layer (scanned PDF)' }), en)).toEqual({
      kind: 'failed',
      text: 'no text layer (scanned PDF)',
    })
    expect(errorNote(doc('a', 'processing'), en)).toBeNull()
    expect(errorNote(doc('a', 'processing', { error: '  ' }), en)).toBeNull()
  })
})

describe('how search results were found', () => {
  const en = translator('en')
  const zh = translator('zh')

  it('labels the mode in both languages', () => {
    expect(searchModeLabel('lexical', en)).toBe('Found by words')
    expect(searchModeLabel('hybrid', en)).toBe('Found by words and meaning')
    expect(searchModeLabel('lexical', zh)).toBe('按字词匹配')
    expect(searchModeLabel('hybrid', zh)).toBe('按字词和语义匹配')
    expect(searchModeHint('hybrid', en)).toMatch(/vector/)
    // a mode from a newer server is named as it is
    expect(searchModeLabel('semantic' as never, en)).toBe('semantic')
  })

  it("notes the fallback to word matches with the server's reason", () => {
    expect(fallbackNote({}, en)).toBeNull()
    expect(fallbackNote({ fallback: null }, en)).toBeNull()
    expect(fallbackNote({ fallback: 'the embedding provider did not answer (timeout).' }, en)).toBe(
      'Vector search unavailable: the embedding provider did not answer (timeout). Showing word matches only.',
    )
    expect(fallbackNote({ fallback: 'no API key' }, zh)).toBe('向量检索不可用：no API key。仅显示字词匹配的结果。')
    expect(fallbackNote({ fallback: '' }, en)).toBe('Vector search unavailable. Showing word matches only.')
  })
})
