// Markdown for replies: GitHub-flavoured (tables, task lists, strikethrough),
// fenced code highlighted, a copy button on every code block. Raw HTML in the
// text is not rendered (react-markdown's default), so replies cannot inject markup.
// Images from another origin render as links (see markdownImages.ts): loading one
// could send the conversation to whoever the reply points at.
// With `citations`, the `[n]` the answer cites become footnotes (citeRefs.ts draws
// them as `<sup data-cite>`, drawn here by `CiteRef`).

import { memo, useMemo, useRef, useState, type ComponentPropsWithoutRef } from 'react'
import ReactMarkdown, { type Components } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import rehypeHighlight from 'rehype-highlight'
import { useT } from '../i18n'
import type { Citation } from '../types'
import { remarkCitations } from './citeRefs'
import { imageAllowed } from './markdownImages'
import { CiteRef } from './Sources'

function CodeBlock(props: ComponentPropsWithoutRef<'pre'>) {
  const t = useT()
  const ref = useRef<HTMLPreElement>(null)
  const [copied, setCopied] = useState(false)
  async function copy() {
    const text = ref.current?.innerText ?? ''
    try {
      await navigator.clipboard.writeText(text)
      setCopied(true)
      setTimeout(() => setCopied(false), 1500)
    } catch {
      // clipboard unavailable (insecure origin): nothing to do
    }
  }
  return (
    <div className="code-block">
      <button type="button" className="btn ghost small copy" onClick={copy}>
        {copied ? t('chat.copied') : t('chat.copy')}
      </button>
      <pre ref={ref} {...props} />
    </div>
  )
}

function Image({ src, alt, title }: ComponentPropsWithoutRef<'img'>) {
  if (typeof src === 'string' && imageAllowed(src)) return <img src={src} alt={alt} title={title} />
  if (!src) return <>{alt}</>
  return (
    <a className="md-image-link" href={String(src)} title={title ?? String(src)} target="_blank" rel="noopener noreferrer">
      {alt || String(src)}
    </a>
  )
}

const components: Components = {
  pre: ({ node: _node, ...props }) => <CodeBlock {...props} />,
  a: ({ node: _node, ...props }) => <a {...props} target="_blank" rel="noopener noreferrer" />,
  img: ({ node: _node, ...props }) => <Image {...props} />,
  sup: ({ node: _node, ...props }) => {
    const n = (props as Record<string, unknown>)['data-cite']
    return n ? <CiteRef n={Number(n)} /> : <sup {...props} />
  },
  table: ({ node: _node, ...props }) => (
    <div className="table-wrap">
      <table {...props} />
    </div>
  ),
}

const remarkPlugins = [remarkGfm]
const rehypePlugins = [[rehypeHighlight, { detect: false }]] as never

const MarkdownRenderer = memo(function MarkdownRenderer({
  text,
  citations,
}: {
  text: string
  /** the sources the reply cites: their `[n]` become footnotes */
  citations?: readonly Citation[] | null
}) {
  const plugins = useMemo(() => {
    if (!citations?.length) return remarkPlugins
    return [...remarkPlugins, [remarkCitations, { cited: new Set(citations.map((c) => c.n)) }]] as never
  }, [citations])
  return (
    <ReactMarkdown remarkPlugins={plugins} rehypePlugins={rehypePlugins} components={components}>
      {text}
    </ReactMarkdown>
  )
})

export default MarkdownRenderer
