// /knowledge/:id: one base — adding documents (a drop zone for files and folders,
// a file and a folder picker; `KnowledgeUpload.tsx`), its documents with their
// ingestion status and stage (followed on the base's event stream, read again on
// its `resync`, and — should the stream be down — every 15 s while any is
// queued or processing), deleting one, and a search box that tells how its results
// were found (by words, or by words and meaning) and why vectors were not used.

import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { Link, useNavigate, useParams } from 'react-router'
import { ApiError, api } from '../api'
import { ErrorLine } from '../components/Section'
import { IngestStage } from '../components/KnowledgeIngest'
import { UploadPanel } from '../components/KnowledgeUpload'
import { fmtBytes } from '../format'
import { useI18n, type MessageKey } from '../i18n'
import {
  applyKnowledgeEvent,
  errorNote,
  fallbackNote,
  needsPolling,
  searchModeHint,
  searchModeLabel,
} from '../knowledge'
import type { KnowledgeBase, KnowledgeDocument, KnowledgeEvent, KnowledgeSearchResults } from '../types'
import { VisibilityBadge } from './Knowledge'
import { useUploads } from './useUploads'

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e))
/**
 * How often the documents are read again while one is being ingested: only a
 * safety net, for a stream that is down (its events carry every change).
 */
const POLL_MS = 15_000
/** The base's stream's event names (`KnowledgeEvent`'s `type`). */
const STREAM_EVENTS: KnowledgeEvent['type'][] = ['document', 'document_deleted', 'deleted', 'resync']

export function KnowledgeBasePage() {
  const { id = '' } = useParams()
  // Another base is another page: its upload rows and results start empty.
  return <BaseView key={id} id={id} />
}

function BaseView({ id }: { id: string }) {
  const { t } = useI18n()
  const nav = useNavigate()
  const [base, setBase] = useState<KnowledgeBase | null>(null)
  const [missing, setMissing] = useState(false)
  const [docs, setDocs] = useState<KnowledgeDocument[]>([])
  const [error, setError] = useState<string | null>(null)

  const uploads = useUploads(id, t('knowledge.deletedMeanwhile'), () => void refresh())
  const { follow, told } = uploads

  const refresh = useCallback(async () => {
    const asOf = performance.now()
    try {
      const list = await api.listDocuments(id)
      setDocs(list)
      follow(list, asOf)
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) setMissing(true)
      else setError(errText(e))
    }
  }, [id, follow])

  useEffect(() => {
    setBase(null)
    setMissing(false)
    api
      .getKnowledge(id)
      .then(setBase)
      .catch((e) => (e instanceof ApiError && e.status === 404 ? setMissing(true) : setError(errText(e))))
    void refresh()
  }, [id, refresh])

  // The base's changes as they happen. Each (re)connect reads the list once the
  // stream is open: the server subscribed before answering, so every change is in
  // that read or on the stream.
  useEffect(() => {
    const es = new EventSource(`/v1/knowledge/${encodeURIComponent(id)}/events`)
    es.onopen = () => void refresh()
    const onEvent = (m: MessageEvent) => {
      let ev: KnowledgeEvent
      try {
        ev = JSON.parse(m.data) as KnowledgeEvent
      } catch {
        return
      }
      if (ev.type === 'resync') void refresh()
      else if (ev.type === 'deleted') {
        es.close()
        setMissing(true)
      } else {
        setDocs((cur) => applyKnowledgeEvent(cur, ev))
        told(ev)
      }
    }
    for (const name of STREAM_EVENTS) es.addEventListener(name, onEvent)
    return () => es.close()
  }, [id, refresh, told])

  // Should the stream be down, read the list now and then while anything is being read.
  const polling = needsPolling(uploads.rows, docs)
  useEffect(() => {
    if (!polling) return
    const timer = window.setTimeout(() => void refresh(), POLL_MS)
    return () => window.clearTimeout(timer)
    // Each answer replaces `docs`, which sets the next timer.
  }, [polling, docs, refresh])

  async function removeBase() {
    if (!base || !window.confirm(t('knowledge.confirmDelete', { name: base.name }))) return
    try {
      await api.deleteKnowledge(base.id)
      nav('/knowledge')
    } catch (err) {
      setError(errText(err))
    }
  }

  async function removeDoc(d: KnowledgeDocument) {
    if (!window.confirm(t('knowledge.confirmDeleteDoc', { name: d.name }))) return
    try {
      await api.deleteDocument(id, d.id)
      setDocs((cur) => cur.filter((x) => x.id !== d.id))
    } catch (err) {
      setError(errText(err))
    }
  }

  if (missing) {
    return (
      <div className="page knowledge">
        <p className="notice error" role="alert" data-testid="kb-missing">
          {t('knowledge.notFound')}
        </p>
        <Link to="/knowledge">{t('knowledge.back')}</Link>
      </div>
    )
  }

  return (
    <div className="page knowledge" data-testid="kb-page">
      <Link to="/knowledge" className="small" data-testid="kb-back">
        ‹ {t('knowledge.back')}
      </Link>
      {base ? (
        <div className="kb-head">
          <div>
            <h1 data-testid="kb-title">
              {base.name} <VisibilityBadge v={base.visibility} />
            </h1>
            {base.description && <p>{base.description}</p>}
            <p className="muted small">{t('knowledge.owner', { name: base.owner_name })}</p>
          </div>
          {base.can_edit && (
            <button className="btn ghost small danger-text" onClick={removeBase} data-testid="kb-delete">
              {t('common.delete')}
            </button>
          )}
        </div>
      ) : (
        <p className="muted">{t('chat.loading')}</p>
      )}
      <ErrorLine error={error} />
      {base?.can_edit && <UploadPanel rows={uploads.rows} onFiles={uploads.add} onClear={uploads.clear} />}
      {base && !base.can_edit && <p className="muted">{t('knowledge.readOnly')}</p>}
      <SearchBox id={id} />
      <section className="card" data-testid="kb-docs">
        <h2>{t('knowledge.docs')}</h2>
        {docs.length === 0 ? (
          <p className="muted">{t('knowledge.noDocs')}</p>
        ) : (
          <ul className="kb-docs">
            {docs.map((d) => (
              <li key={d.id} className="kb-doc" data-testid="kb-doc" data-name={d.name} data-status={d.status}>
                <span className="kb-doc-name">{d.name}</span>
                <StatusBadge status={d.status} />
                <span className="muted small">
                  {fmtBytes(d.bytes)}
                  {d.status === 'ready' && ` · ${d.chunks === 1 ? t('knowledge.oneChunk') : t('knowledge.chunks', { n: d.chunks })}`}
                </span>
                {base?.can_edit && (
                  <button className="btn ghost small danger-text" onClick={() => removeDoc(d)} data-testid="kb-doc-delete">
                    {t('common.delete')}
                  </button>
                )}
                <IngestStage state={d} testId="kb-doc-progress" />
                <DocError doc={d} />
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  )
}

/** Why a document failed, or — still queued or processing — the last try's error while it waits to be tried again. */
function DocError({ doc }: { doc: KnowledgeDocument }) {
  const { t } = useI18n()
  const note = errorNote(doc, t)
  if (!note) return null
  return (
    <span
      className={`kb-doc-error small ${note.kind === 'failed' ? 'danger-text' : 'kb-retry'}`}
      data-testid="kb-doc-error"
      data-kind={note.kind}
    >
      {note.text}
    </span>
  )
}

export function StatusBadge({ status }: { status: KnowledgeDocument['status'] }) {
  const { t } = useI18n()
  return (
    <span className={`pill kb-status ${status}`} data-testid="kb-doc-status">
      {(status === 'queued' || status === 'processing') && <span className="spinner" aria-hidden="true" />}
      {t(`knowledge.status.${status}` as MessageKey)}
    </span>
  )
}

/** Search results are cut to this many characters; the whole chunk is in the title. */
const EXCERPT = 320

function SearchBox({ id }: { id: string }) {
  const { t } = useI18n()
  const [query, setQuery] = useState('')
  const [results, setResults] = useState<KnowledgeSearchResults | null>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  // Only the newest search's answer is shown.
  const latest = useRef(0)

  const hits = results?.results
  const fallback = results && fallbackNote(results, t)

  async function search(e: FormEvent) {
    e.preventDefault()
    const q = query.trim()
    if (!q) return
    const n = ++latest.current
    setBusy(true)
    setError(null)
    try {
      const r = await api.searchKnowledge(id, q)
      if (n === latest.current) setResults(r)
    } catch (err) {
      if (n === latest.current) setError(errText(err))
    } finally {
      if (n === latest.current) setBusy(false)
    }
  }

  return (
    <section className="card" data-testid="kb-search">
      <h2>{t('knowledge.search')}</h2>
      <form className="inline-form" onSubmit={search} role="search">
        <input
          type="search"
          value={query}
          placeholder={t('knowledge.searchPlaceholder')}
          aria-label={t('knowledge.search')}
          data-testid="kb-search-input"
          onChange={(e) => setQuery(e.target.value)}
        />
        <button className="btn primary" type="submit" disabled={busy || !query.trim()} data-testid="kb-search-submit">
          {t('knowledge.search')}
        </button>
      </form>
      <ErrorLine error={error} />
      {results && (
        <p className="kb-search-how">
          <span
            className={`badge kb-mode ${results.mode}`}
            title={searchModeHint(results.mode, t)}
            data-testid="kb-search-mode"
            data-mode={results.mode}
          >
            {searchModeLabel(results.mode, t)}
          </span>
        </p>
      )}
      {fallback && (
        <p className="notice warn small kb-search-fallback" role="status" data-testid="kb-search-fallback">
          {fallback}
        </p>
      )}
      {hits && hits.length === 0 && (
        <p className="muted" data-testid="kb-no-results">
          {t('knowledge.noResults')}
        </p>
      )}
      {hits && hits.length > 0 && (
        <ol className="kb-hits" data-testid="kb-hits">
          {hits.map((h) => (
            <li key={h.chunk_id} data-testid="kb-hit">
              <div className="kb-hit-head">
                <strong data-testid="kb-hit-doc">{h.document_name}</strong>
                {h.position && <span className="muted small"> — {h.position}</span>}
              </div>
              <p className="kb-hit-text" title={h.text} data-testid="kb-hit-text">
                {[...h.text].length > EXCERPT ? `${[...h.text].slice(0, EXCERPT).join('')}…` : h.text}
              </p>
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
