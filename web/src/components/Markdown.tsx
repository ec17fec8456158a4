// Markdown, loaded on first use: the parser and highlighter are most of the
// bundle and the login page does not need them. Until they arrive the text shows
// as plain pre-wrapped text, so nothing jumps or disappears.

import { lazy, Suspense } from 'react'
import type { Citation } from '../types'

const Renderer = lazy(() => import('./MarkdownRenderer'))

/** `citations`: the sources the reply cites; their `[n]` in `text` become footnotes. */
export function Markdown({ text, citations }: { text: string; citations?: readonly Citation[] | null }) {
  return (
    <Suspense fallback={<div className="md-plain">{text}</div>}>
      <Renderer text={text} citations={citations} />
    </Suspense>
  )
}
