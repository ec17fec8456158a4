// Markdown, loaded on first use: the parser and highlighter are most of the
// bundle and the login page does not need them. Until they arrive the text shows
// as plain pre-wrapped text, so nothing jumps or disappears.

import { lazy, Suspense } from 'react'

const Renderer = lazy(() => import('./MarkdownRenderer'))

export function Markdown({ text }: { text: string }) {
  return (
    <Suspense fallback={<div className="md-plain">{text}</div>}>
      <Renderer text={text} />
    </Suspense>
  )
}
