// The passage a footnote cites, in its document: a modal side panel (the whole
// screen on a phone) that reads the document's text around the cited chunk
// (`GET …/documents/{doc}/chunks?around=`), scrolls to that chunk and highlights it,
// and reads on either way on request (`?after=`).
//
// The text shows as Markdown (ingestion keeps documents Markdown-like: headings,
// lists, tables); the cited chunk is a highlighted block.
//
// A native <dialog> opened with showModal(): focus moves into it, the page behind
// is inert, Esc closes it; focus goes back to the footnote afterwards. A document
// deleted since (or a base no longer open to you: both answer 404) leaves the
// snippet the citation carries.

import { useEffect, useId, useLayoutEffect, useRef, useState } from 'react'
import { ApiError, api } from '../api'
import { earlierWindow, mergeChunks, placeLabel } from '../citations'
import { useT } from '../i18n'
import type { Citation, DocumentChunk } from '../types'
import { Icon } from './Icon'
import { Markdown } from './Markdown'

/** Chunks read at a time. */
const PAGE = 20

type Load = { state: 'loading' } | { state: 'ready' } | { state: 'gone' } | { state: 'failed'; message: string }

const message = (e: unknown) => (e instanceof Error ? e.message : String(e))

export function SourcePanel({ citation, onClose }: { citation: Citation; onClose: () => void }) {
  const t = useT()
  const titleId = useId()
  const dialog = useRef<HTMLDialogElement>(null)
  const body = useRef<HTMLDivElement>(null)
  const cited = useRef<HTMLElement>(null)
  const [chunks, setChunks] = useState<DocumentChunk[]>([])
  const [total, setTotal] = useState(0)
  const [load, setLoad] = useState<Load>({ state: 'loading' })
  const [more, setMore] = useState<'earlier' | 'later' | null>(null)
  const [moreError, setMoreError] = useState<string | null>(null)
  /** set before chunks are put in front: the distance from the bottom to keep */
  const keepFromBottom = useRef<number | null>(null)
  const scrolled = useRef(false)

  useEffect(() => {
    const d = dialog.current
    if (!d) return
    const back = document.activeElement instanceof HTMLElement ? document.activeElement : null
    if (!d.open) d.showModal()
    return () => {
      if (d.open) d.close()
      back?.focus()
    }
  }, [])

  const { knowledge_id: kb, document_id: doc, chunk_id: chunk } = citation
  useEffect(() => {
    let live = true
    api
      .documentChunks(kb, doc, { around: chunk, limit: PAGE })
      .then((r) => {
        if (!live) return
        setChunks(r.chunks)
        setTotal(r.total)
        setLoad({ state: 'ready' })
      })
      .catch((e: unknown) => {
        if (!live) return
        setLoad(e instanceof ApiError && e.status === 404 ? { state: 'gone' } : { state: 'failed', message: message(e) })
      })
    return () => {
      live = false
    }
  }, [kb, doc, chunk])

  useLayoutEffect(() => {
    const el = body.current
    if (!el) return
    if (keepFromBottom.current !== null) {
      el.scrollTop = el.scrollHeight - keepFromBottom.current
      keepFromBottom.current = null
    } else if (!scrolled.current && cited.current) {
      // Centred in the text pane; scrollIntoView would scroll the dialog too.
      scrolled.current = true
      const box = el.getBoundingClientRect()
      const at = cited.current.getBoundingClientRect()
      el.scrollTop += at.top - box.top - Math.max(0, (box.height - at.height) / 2)
    }
  }, [chunks])

  const first = chunks[0]
  const last = chunks[chunks.length - 1]
  const hasEarlier = !!first && first.ord > 0
  const hasLater = !!last && last.ord < total - 1

  async function readMore(dir: 'earlier' | 'later') {
    const q = dir === 'earlier' ? first && earlierWindow(first.ord, PAGE) : last && { after: last.ord, limit: PAGE }
    if (!q) return
    setMore(dir)
    setMoreError(null)
    try {
      const r = await api.documentChunks(kb, doc, q)
      const el = body.current
      if (dir === 'earlier' && el) keepFromBottom.current = el.scrollHeight - el.scrollTop
      setChunks((cur) => mergeChunks(cur, r.chunks))
      setTotal(r.total)
    } catch (e) {
      setMoreError(e instanceof ApiError && e.status === 404 ? t('sources.gone') : message(e))
    } finally {
      setMore(null)
    }
  }

  return (
    <dialog
      ref={dialog}
      className="source-panel"
      aria-labelledby={titleId}
      data-testid="source-panel"
      onCancel={(e) => {
        e.preventDefault()
        onClose()
      }}
      // Closed some other way; not the close a remount's cleanup queued (StrictMode).
      onClose={() => dialog.current?.open || onClose()}
      // A click on the backdrop lands on the dialog itself (the panel fills it).
      onClick={(e) => e.target === dialog.current && onClose()}
    >
      <div className="source-panel-inner">
        <header className="source-head">
          <div className="source-head-text">
            <h2 id={titleId} data-testid="source-panel-title">
              {citation.document_name}
            </h2>
            <p className="muted small" data-testid="source-panel-position">
              [{citation.n}]{citation.position && ` ${citation.position}`}
            </p>
          </div>
          <button
            type="button"
            className="btn ghost icon"
            onClick={onClose}
            aria-label={t('common.close')}
            title={t('common.close')}
            data-testid="source-close"
          >
            <Icon name="close" size={18} />
          </button>
        </header>
        <div className="source-body" ref={body} data-testid="source-text">
          {load.state === 'loading' && (
            <p className="muted" role="status">
              <span className="spinner" aria-hidden="true" /> {t('chat.loading')}
            </p>
          )}
          {(load.state === 'gone' || load.state === 'failed') && (
            <>
              <p className={`notice ${load.state === 'gone' ? 'warn' : 'error'}`} role="status" data-testid="source-gone">
                {load.state === 'gone' ? t('sources.gone') : t('common.error', { message: load.message })}
              </p>
              <p className="muted small">{t('sources.snippet')}</p>
              <div className="chunk cited snippet">{citation.snippet}</div>
            </>
          )}
          {load.state === 'ready' && (
            <>
              {hasEarlier && (
                <button
                  type="button"
                  className="btn ghost small more"
                  onClick={() => readMore('earlier')}
                  disabled={!!more}
                  data-testid="source-earlier"
                >
                  {more === 'earlier' ? t('chat.loading') : t('sources.earlier')}
                </button>
              )}
              {chunks.map((c, i) => {
                const place = placeLabel(c, chunks[i - 1])
                const isCited = c.id === citation.chunk_id
                return (
                  <div key={c.ord} className="chunk-wrap" data-ord={c.ord}>
                    {place && <p className="chunk-place muted small">{place}</p>}
                    {isCited ? (
                      <section
                        className="chunk md cited"
                        ref={cited}
                        aria-label={t('sources.citedPassage')}
                        data-testid="cited-chunk"
                      >
                        <Markdown text={c.text} />
                      </section>
                    ) : (
                      <div className="chunk md">
                        <Markdown text={c.text} />
                      </div>
                    )}
                  </div>
                )
              })}
              {hasLater && (
                <button
                  type="button"
                  className="btn ghost small more"
                  onClick={() => readMore('later')}
                  disabled={!!more}
                  data-testid="source-later"
                >
                  {more === 'later' ? t('chat.loading') : t('sources.later')}
                </button>
              )}
              {!chunks.length && <p className="muted">{t('sources.empty')}</p>}
            </>
          )}
          {moreError && (
            <p className="notice error" role="alert">
              {t('common.error', { message: moreError })}
            </p>
          )}
        </div>
      </div>
    </dialog>
  )
}
