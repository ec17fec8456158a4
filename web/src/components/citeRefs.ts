// A remark plugin that turns the cited `[n]` of a reply into footnote markers.
//
// It works on the Markdown tree rather than the text so that code (fenced and
// inline), links such as `[1](https://…)` and reference links keep their brackets:
// only plain text is split (`splitCitations`). Each marker becomes a `<sup
// data-cite="n">`, which MarkdownRenderer draws as the footnote button.

import { splitCitations } from '../citations'

/** The little of mdast this needs (a unist node). */
interface MdNode {
  type: string
  value?: string
  children?: MdNode[]
  data?: Record<string, unknown>
}

/** Nodes whose text is not prose: never split. */
const OPAQUE = new Set([
  'code',
  'inlineCode',
  'link',
  'linkReference',
  'definition',
  'html',
  'image',
  'imageReference',
  'footnoteReference',
  'footnoteDefinition',
])

export interface CiteOptions {
  /** the numbers the answer cites */
  cited: ReadonlySet<number>
}

export function remarkCitations(options: CiteOptions) {
  return (tree: MdNode) => {
    if (options.cited.size) walk(tree, options.cited)
  }
}

function walk(node: MdNode, cited: ReadonlySet<number>): void {
  if (!node.children) return
  let changed = false
  const out: MdNode[] = []
  for (const child of node.children) {
    if (child.type === 'text' && child.value) {
      const parts = splitCitations(child.value, cited)
      if (parts.length === 1 && typeof parts[0] === 'string') {
        out.push(child)
        continue
      }
      changed = true
      for (const p of parts) out.push(typeof p === 'string' ? { type: 'text', value: p } : citeNode(p))
      continue
    }
    if (!OPAQUE.has(child.type)) walk(child, cited)
    out.push(child)
  }
  if (changed) node.children = out
}

/** A node mdast-util-to-hast renders as `<sup class="cite-ref" data-cite="n">n</sup>`. */
function citeNode(n: number): MdNode {
  return {
    type: 'citeRef',
    data: {
      hName: 'sup',
      hProperties: { className: ['cite-ref'], dataCite: String(n) },
      hChildren: [{ type: 'text', value: String(n) }],
    },
  }
}
