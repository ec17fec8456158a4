// The sources of a reply that cites a knowledge base: its `[n]` drawn as footnote
// buttons (MarkdownRenderer draws each `<sup data-cite>` with `CiteRef`), the
// "Sources" list under the reply, and the panel either opens (SourcePanel).
//
// The footnotes are deep inside memoised Markdown, so they reach the reply's
// citations and its "open" through a context rather than props.

import { createContext, useContext, useMemo, useState, type ReactNode } from 'react'
import { useT } from '../i18n'
import type { Citation } from '../types'
import { SourcePanel } from './SourcePanel'

interface SourcesCtx {
  byN: ReadonlyMap<number, Citation>
  open: (c: Citation) => void
}

const SourcesContext = createContext<SourcesCtx | null>(null)

/** `document — place`, or the document alone when it has no place. */
export function sourceLabel(c: Citation): string {
  return c.position ? `${c.document_name} — ${c.position}` : c.document_name
}

/**
 * Wraps a reply's text: its footnotes open the cited passage; the "Sources" list
 * follows the text (none without citations).
 */
export function Cited({ citations, children }: { citations?: readonly Citation[] | null; children: ReactNode }) {
  const [open, setOpen] = useState<Citation | null>(null)
  const ctx = useMemo<SourcesCtx>(
    () => ({ byN: new Map((citations ?? []).map((c) => [c.n, c])), open: setOpen }),
    [citations],
  )
  // Always the provider, so the reply's text is not remounted when the citations
  // arrive at the end of a live run.
  return (
    <SourcesContext.Provider value={ctx}>
      {children}
      {!!citations?.length && <SourceList citations={citations} onOpen={setOpen} />}
      {open && <SourcePanel key={open.n} citation={open} onClose={() => setOpen(null)} />}
    </SourcesContext.Provider>
  )
}

/** One footnote: the cited number, raised; opens the passage. */
export function CiteRef({ n }: { n: number }) {
  const t = useT()
  const ctx = useContext(SourcesContext)
  const c = ctx?.byN.get(n)
  if (!ctx || !c) return <>{`[${n}]`}</>
  return (
    <sup className="cite-ref">
      <button
        type="button"
        className="cite-link"
        onClick={() => ctx.open(c)}
        aria-label={t('sources.cite', { n, source: sourceLabel(c) })}
        title={sourceLabel(c)}
        aria-haspopup="dialog"
        data-testid="cite-ref"
        data-n={n}
      >
        {n}
      </button>
    </sup>
  )
}

function SourceList({ citations, onOpen }: { citations: readonly Citation[]; onOpen: (c: Citation) => void }) {
  const t = useT()
  return (
    <section className="sources" aria-label={t('sources.title')} data-testid="sources">
      <h3 className="sources-title">{t('sources.title')}</h3>
      <ol>
        {citations.map((c) => (
          <li key={c.n}>
            <button
              type="button"
              className="source-link"
              onClick={() => onOpen(c)}
              aria-haspopup="dialog"
              data-testid="source"
              data-n={c.n}
            >
              <span className="source-n">[{c.n}]</span> <span className="source-doc">{c.document_name}</span>
              {c.position && <span className="muted"> — {c.position}</span>}
            </button>
          </li>
        ))}
      </ol>
    </section>
  )
}
