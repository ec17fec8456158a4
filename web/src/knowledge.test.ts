import { describe, expect, it } from 'vitest'
import {
  isHidden,
  needsPolling,
  pickedFromList,
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

  it('polls while a document of the base is still being read', () => {
    expect(needsPolling([], [doc('x', 'ready'), doc('y', 'processing')])).toBe(true)
    expect(needsPolling([], [doc('x', 'failed')])).toBe(false)
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
