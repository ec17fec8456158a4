// The /knowledge page's rules, as pure functions: which files a drop or a picker
// gives (folders walked, hidden entries skipped, as `weft knowledge add` does),
// the upload list — one row per file, from waiting through its upload to the
// document's own status, which the page follows on the base's event stream
// (`GET /v1/knowledge/{id}/events`; docs/knowledge.md) — what a document being ingested
// shows (its stage, and the last try's error while it waits to be tried again),
// and how a search's results were found.

import type { Translate } from './i18n'
import type {
  DocumentStatus,
  IngestProgress,
  KnowledgeDocument,
  KnowledgeEvent,
  KnowledgeSearchResults,
  SearchMode,
} from './types'

/** A file to upload and where it was found ("docs/setup/linux.md" in a dropped folder). */
export interface PickedFile {
  file: File
  path: string
}

/** Dot-files and anything inside a dot-folder (`.git/…`, `.DS_Store`) are never uploaded. */
export function isHidden(path: string): boolean {
  return path.split('/').some((seg) => seg.startsWith('.'))
}

/** A picker's files (`webkitRelativePath` is set by a folder picker), hidden ones left out. */
export function pickedFromList(files: Iterable<File>): PickedFile[] {
  const out: PickedFile[] = []
  for (const file of files) {
    const path = file.webkitRelativePath || file.name
    if (!isHidden(path)) out.push({ file, path })
  }
  return out
}

// The parts of the File and Directory Entries API a walk needs, so tests can give
// plain objects (Chromium's are `FileSystemFileEntry` / `FileSystemDirectoryEntry`).
export interface EntryLike {
  name: string
  isFile: boolean
  isDirectory: boolean
}
export interface FileEntryLike extends EntryLike {
  file(ok: (f: File) => void, fail?: (e: unknown) => void): void
}
export interface DirectoryEntryLike extends EntryLike {
  createReader(): { readEntries(ok: (entries: EntryLike[]) => void, fail?: (e: unknown) => void): void }
}

/**
 * Every file under `entries`, depth first, skipping hidden names (a hidden folder
 * is not entered). A directory reader hands out its entries in batches (100 at a
 * time in Chromium) until an empty one, so it is read until then.
 */
export async function walkEntries(entries: readonly EntryLike[], prefix = ''): Promise<PickedFile[]> {
  const out: PickedFile[] = []
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue
    const path = prefix + entry.name
    if (entry.isFile) {
      const file = await new Promise<File>((ok, fail) => (entry as FileEntryLike).file(ok, fail))
      out.push({ file, path })
    } else if (entry.isDirectory) {
      const reader = (entry as DirectoryEntryLike).createReader()
      const children: EntryLike[] = []
      for (;;) {
        const batch = await new Promise<EntryLike[]>((ok, fail) => reader.readEntries(ok, fail))
        if (!batch.length) break
        children.push(...batch)
      }
      out.push(...(await walkEntries(children, `${path}/`)))
    }
  }
  return out
}

/**
 * The files of a drop, folders included. The entries must be taken while the drop
 * event runs (the browser empties `items` after it), so this reads them at once
 * and walks them after; a browser without entries gives `files`, which holds no
 * folder contents.
 */
export function filesFromDrop(dt: DataTransfer): Promise<PickedFile[]> {
  const entries: EntryLike[] = []
  for (const item of Array.from(dt.items ?? [])) {
    if (item.kind !== 'file') continue
    const entry = item.webkitGetAsEntry?.()
    if (entry) entries.push(entry)
  }
  if (entries.length) return walkEntries(entries)
  return Promise.resolve(pickedFromList(Array.from(dt.files ?? [])))
}

/** Where one file of an upload stands. */
export type UploadState =
  | { phase: 'waiting' }
  | { phase: 'uploading'; pct: number }
  /**
   * stored (`at`): the document is `queued` or `processing` on a worker; `note` is
   * the last try's error while it waits to be tried again, `progress` its stage
   */
  | {
      phase: 'indexing'
      docId: string
      status: DocumentStatus
      note?: string
      progress?: IngestProgress
      at: number
      /** the document's own `updated_at`, to tell news from old news (`news`) */
      updated_at: number
    }
  | { phase: 'ready'; docId: string; chunks: number; duplicate: boolean }
  /** refused by the server, or the document failed (the server's message) */
  | { phase: 'failed'; error: string; docId?: string }

export interface UploadRow {
  key: string
  path: string
  bytes: number
  state: UploadState
}

export type UploadAction =
  | { type: 'add'; rows: { key: string; path: string; bytes: number }[] }
  | { type: 'progress'; key: string; pct: number }
  /** `at`: when the upload was answered (any clock that `documents` uses too) */
  | { type: 'uploaded'; key: string; doc: KnowledgeDocument; created: boolean; at: number }
  | { type: 'refused'; key: string; error: string }
  /**
   * The documents list as polled, asked for at `asOf`: rows still indexing follow
   * their document. A document missing from a list asked for before it was stored
   * is not yet in it; missing from a later one, it was deleted.
   */
  | { type: 'documents'; documents: readonly KnowledgeDocument[]; asOf: number }
  /** one document as the base's event stream told it (`applyKnowledgeEvent`'s rule for old news) */
  | { type: 'document'; document: KnowledgeDocument }
  /** a document the stream told was deleted */
  | { type: 'deleted'; id: string }
  /** forget the rows that are done (ready or failed) */
  | { type: 'clear' }

function fromDocument(doc: KnowledgeDocument, duplicate: boolean, fallback: string, at: number): UploadState {
  switch (doc.status) {
    case 'ready':
      return { phase: 'ready', docId: doc.id, chunks: doc.chunks, duplicate }
    case 'failed':
      return { phase: 'failed', docId: doc.id, error: doc.error || fallback }
    default:
      return {
        phase: 'indexing',
        docId: doc.id,
        status: doc.status,
        note: doc.error ?? undefined,
        progress: doc.progress ?? undefined,
        at,
        updated_at: doc.updated_at,
      }
  }
}

/**
 * The upload list's transitions. `fallback` is the text for a failed document the
 * server gave no reason for, and for one deleted while it was being indexed.
 */
export function uploadsReducer(rows: UploadRow[], a: UploadAction, fallback = 'failed'): UploadRow[] {
  const set = (key: string, state: UploadState) => rows.map((r) => (r.key === key ? { ...r, state } : r))
  switch (a.type) {
    case 'add':
      return [...rows, ...a.rows.map((r) => ({ ...r, state: { phase: 'waiting' } as UploadState }))]
    case 'progress':
      return set(a.key, { phase: 'uploading', pct: Math.max(0, Math.min(100, Math.round(a.pct))) })
    case 'uploaded':
      return set(a.key, fromDocument(a.doc, !a.created, fallback, a.at))
    case 'refused':
      return set(a.key, { phase: 'failed', error: a.error })
    case 'documents': {
      const byId = new Map(a.documents.map((d) => [d.id, d]))
      let changed = false
      const next = rows.map((r) => {
        if (r.state.phase !== 'indexing') return r
        const doc = byId.get(r.state.docId)
        if (!doc && a.asOf < r.state.at) return r
        const state: UploadState = doc
          ? fromDocument(doc, false, fallback, r.state.at)
          : { phase: 'failed', error: fallback }
        if (sameState(state, r.state)) return r
        changed = true
        return { ...r, state }
      })
      return changed ? next : rows
    }
    case 'document':
    case 'deleted': {
      const id = a.type === 'document' ? a.document.id : a.id
      let changed = false
      const next = rows.map((r) => {
        if (r.state.phase !== 'indexing' || r.state.docId !== id) return r
        if (a.type === 'document' && !news(a.document, r.state)) return r
        const state: UploadState =
          a.type === 'document' ? fromDocument(a.document, false, fallback, r.state.at) : { phase: 'failed', error: fallback }
        changed = true
        return { ...r, state }
      })
      return changed ? next : rows
    }
    case 'clear':
      return rows.filter((r) => r.state.phase !== 'ready' && r.state.phase !== 'failed')
  }
}

/** Done with, one way or the other. */
const final = (s: DocumentStatus) => s === 'ready' || s === 'failed'

/**
 * Whether a document the stream told is news next to the copy held: an event may
 * have been on its way while the list was read (the server says so), so one older
 * than the copy — or as old, and not yet done while the copy is — is old news.
 */
export function news(doc: KnowledgeDocument, held: { status: DocumentStatus; updated_at?: number }): boolean {
  const at = held.updated_at ?? -Infinity
  if (doc.updated_at !== at) return doc.updated_at > at
  return final(doc.status) || !final(held.status)
}

/**
 * The documents list (newest first, as the server lists them) after one event of
 * the base's stream. `resync` and `deleted` change nothing here: the page reads
 * the list again, or leaves.
 */
export function applyKnowledgeEvent(docs: KnowledgeDocument[], ev: KnowledgeEvent): KnowledgeDocument[] {
  switch (ev.type) {
    case 'document': {
      const doc = ev.document
      const i = docs.findIndex((d) => d.id === doc.id)
      if (i < 0) return [doc, ...docs]
      if (!news(doc, docs[i])) return docs
      return docs.map((d, j) => (j === i ? doc : d))
    }
    case 'document_deleted':
      return docs.some((d) => d.id === ev.document_id) ? docs.filter((d) => d.id !== ev.document_id) : docs
    default:
      return docs
  }
}

function sameState(a: UploadState, b: UploadState): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** Still being ingested: waiting for a worker, or on one. */
const busy = (s: DocumentStatus) => s === 'queued' || s === 'processing'

/** Whether the documents list should be read again soon: something is still being read. */
export function needsPolling(rows: readonly UploadRow[], documents: readonly KnowledgeDocument[]): boolean {
  return rows.some((r) => r.state.phase === 'indexing') || documents.some((d) => busy(d.status))
}

/** How many rows are finished, of all — for the "3 of 5 done" line. */
export function uploadSummary(rows: readonly UploadRow[]): { done: number; failed: number; total: number } {
  let done = 0
  let failed = 0
  for (const r of rows) {
    if (r.state.phase === 'ready') done++
    else if (r.state.phase === 'failed') failed++
  }
  return { done, failed, total: rows.length }
}

/** The server's rule for a base's name: 1–64 letters, digits, spaces and `-_.`. */
export const BASE_NAME = /^[\p{L}\p{N} ._-]{1,64}$/u

export function validBaseName(name: string): boolean {
  return BASE_NAME.test(name.trim())
}

/** What the ingestion lines read of a document (an upload row still indexing gives the same). */
export interface IngestState {
  status: DocumentStatus
  progress?: IngestProgress | null
  error?: string | null
}

/**
 * A document's stage while it is ingested — "Reading…", "Embedding 120 / 480
 * chunks" — or null when there is none to tell: it is done (ready or failed), or
 * no worker has reported on it yet (the status badge says queued/processing).
 */
export function progressLabel(doc: IngestState, t: Translate): string | null {
  const p = busy(doc.status) ? doc.progress : null
  if (!p) return null
  switch (p.stage) {
    case 'reading':
      return t('knowledge.stage.reading')
    case 'embedding': {
      const total = Math.max(0, Math.floor(p.total))
      if (!total) return t('knowledge.stage.embeddingStart')
      return t('knowledge.stage.embedding', { done: Math.min(total, Math.max(0, Math.floor(p.done))), total })
    }
    default:
      // a stage this page does not know yet (a newer server): the status badge says enough
      return null
  }
}

/** How far the embedding is, 0–1, for a progress bar; null when there is no bar to show. */
export function progressFraction(doc: IngestState): number | null {
  const p = busy(doc.status) ? doc.progress : null
  if (!p || p.stage !== 'embedding' || !(p.total > 0)) return null
  return Math.min(1, Math.max(0, p.done / p.total))
}

/**
 * A document's error line: `failed` — why it failed, for good; `retry` — a document
 * still queued or processing carries the last try's error while it waits to be
 * tried again (the embedding provider is down, say): it has not failed.
 */
export function errorNote(doc: IngestState, t: Translate): { kind: 'failed' | 'retry'; text: string } | null {
  const error = doc.error?.trim()
  if (!error) return null
  if (busy(doc.status)) return { kind: 'retry', text: t('knowledge.retrying', { error }) }
  return { kind: 'failed', text: error }
}

/** How a search's results were found: by words (the full-text index), or by words and meaning (with vectors). */
export function searchModeLabel(mode: SearchMode, t: Translate): string {
  switch (mode) {
    case 'lexical':
      return t('knowledge.mode.lexical')
    case 'hybrid':
      return t('knowledge.mode.hybrid')
    default:
      // a mode this page does not know yet (a newer server): its name
      return String(mode)
  }
}

/** The longer description of a search mode, for the label's tooltip. */
export function searchModeHint(mode: SearchMode, t: Translate): string {
  return mode === 'hybrid' ? t('knowledge.modeHint.hybrid') : mode === 'lexical' ? t('knowledge.modeHint.lexical') : ''
}

/**
 * The note shown when vector search was configured but could not be used: the
 * results are word matches only, and the server says why. Null when it was not
 * needed (no embedding model, or it worked).
 */
export function fallbackNote(results: Pick<KnowledgeSearchResults, 'fallback'>, t: Translate): string | null {
  if (results.fallback === undefined || results.fallback === null) return null
  // The sentence ends with its own full stop: the server's may have one too.
  const reason = results.fallback.trim().replace(/[\s.。]+$/u, '')
  return reason ? t('knowledge.fallback', { reason }) : t('knowledge.fallbackNoReason')
}
