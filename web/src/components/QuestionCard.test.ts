// The question card: what it offers while the run waits, what it says while an
// answer is sent, refused or accepted, and once the run told the outcome; and
// the rules behind it (src/questions.ts).

import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ApiError } from '../api'
import { I18nProvider, translator } from '../i18n'
import { choicesAnswer, outcomeOf, outcomeText, refusalOf, takesText, textAnswer } from '../questions'
import type { QuestionView } from '../stream/reducer'
import type { Question } from '../types'
import { QuestionCardView, type QuestionCardViewProps } from './QuestionCard'

const NOW = Date.parse('2026-03-01T12:00:00Z')

const question = (over: Partial<QuestionView> = {}): QuestionView => ({
  questionId: 'q1',
  callId: 'c1',
  step: 1,
  question: 'Which colour?',
  options: ['red', 'blue'],
  multiple: false,
  allowText: false,
  expiresAt: NOW + 30 * 60_000,
  ...over,
})

const noop = () => {}

function render(q: QuestionView, over: Partial<QuestionCardViewProps> = {}): string {
  const props: QuestionCardViewProps = {
    q,
    live: true,
    now: NOW,
    sending: null,
    error: null,
    closed: false,
    sent: null,
    ticked: [],
    text: '',
    onOption: noop,
    onTick: noop,
    onSendChoices: noop,
    onText: noop,
    onSendText: noop,
    ...over,
  }
  return renderToStaticMarkup(createElement(I18nProvider, null, createElement(QuestionCardView, props)))
}

/** The elements with this test id, as their opening tags and text. */
function byTestId(html: string, id: string): { tag: string; text: string }[] {
  const out: { tag: string; text: string }[] = []
  const re = new RegExp(`<(\\w+)([^>]*data-testid="${id}"[^>]*)>`, 'g')
  for (const m of html.matchAll(re)) {
    const rest = html.slice(m.index + m[0].length)
    const close = rest.indexOf(`</${m[1]}>`)
    const text = close < 0 ? '' : rest.slice(0, close).replace(/<[^>]*>/g, '')
    out.push({ tag: m[0], text })
  }
  return out
}

const disabled = (tag: string) => /\sdisabled=""/.test(tag)

describe('the question card', () => {
  // The provider reads the browser's language.
  beforeEach(() => vi.stubGlobal('navigator', { languages: ['en-US'], language: 'en-US' }))
  afterEach(() => vi.unstubAllGlobals())

  it('offers one button per option for a single choice, and says when the question expires', () => {
    const html = render(question())
    expect(byTestId(html, 'question-text').map((e) => e.text)).toEqual(['Which colour?'])
    const options = byTestId(html, 'question-option')
    expect(options.map((e) => e.text)).toEqual(['red', 'blue'])
    expect(options.some((e) => disabled(e.tag))).toBe(false)
    expect(byTestId(html, 'question-check')).toEqual([])
    expect(byTestId(html, 'question-input'), 'no typed answer taken').toEqual([])
    expect(byTestId(html, 'question-expiry')[0].text).toMatch(/^Expires at .+ \(in 30 min\); unanswered, the assistant/)
    expect(html).toContain('waiting for your answer')
    expect(byTestId(html, 'question-outcome')).toEqual([])
  })

  it('offers checkboxes and a Send for several choices, which waits for a box to be ticked', () => {
    const q = question({ options: ['red', 'green', 'blue'], multiple: true })
    const html = render(q)
    expect(byTestId(html, 'question-option')).toEqual([])
    expect(byTestId(html, 'question-check')).toHaveLength(3)
    expect(html).toContain('Choose one or more')
    expect(disabled(byTestId(html, 'question-send-choices')[0].tag)).toBe(true)

    const ticked = render(q, { ticked: ['blue'] })
    expect(disabled(byTestId(ticked, 'question-send-choices')[0].tag)).toBe(false)
    expect(byTestId(ticked, 'question-check').map((e) => /checked=""/.test(e.tag))).toEqual([false, false, true])
  })

  it('offers a text box when a typed answer is taken, or when there are no options at all', () => {
    for (const q of [question({ allowText: true }), question({ options: [], allowText: false })]) {
      const empty = render(q)
      expect(byTestId(empty, 'question-input')).toHaveLength(1)
      expect(disabled(byTestId(empty, 'question-send')[0].tag), 'nothing typed yet').toBe(true)
      const typed = render(q, { text: '  teal ' })
      expect(byTestId(typed, 'question-input')[0].tag).toContain('value="  teal "')
      expect(disabled(byTestId(typed, 'question-send')[0].tag)).toBe(false)
    }
    expect(byTestId(render(question({ allowText: true })), 'question-option')).toHaveLength(2)
  })

  it('is disabled while an answer is being sent, the chosen button marked busy', () => {
    const html = render(question({ allowText: true }), { sending: { option: 'blue' }, text: 'x' })
    const options = byTestId(html, 'question-option')
    expect(options.every((e) => disabled(e.tag))).toBe(true)
    expect(options.map((e) => /aria-busy="true"/.test(e.tag))).toEqual([false, true])
    expect(disabled(byTestId(html, 'question-input')[0].tag)).toBe(true)
    expect(disabled(byTestId(html, 'question-send')[0].tag)).toBe(true)
    expect(html).toMatch(/data-testid="question"[^>]*aria-busy="true"/)

    const several = render(question({ multiple: true }), { sending: 'choices', ticked: ['red'] })
    expect(several).toMatch(/<fieldset[^>]*disabled=""/)
  })

  it('shows a refused answer\'s message; a 422 leaves the question open, a 409 closes it', () => {
    const invalid = render(question(), { error: 'the answer must be one of the options: red, blue' })
    expect(byTestId(invalid, 'question-error').map((e) => e.text)).toEqual([
      'the answer must be one of the options: red, blue',
    ])
    expect(byTestId(invalid, 'question-option')).toHaveLength(2)

    const late = render(question({ allowText: true }), { error: 'already answered by bob: red', closed: true })
    expect(byTestId(late, 'question-error').map((e) => e.text)).toEqual(['already answered by bob: red'])
    expect(byTestId(late, 'question-option')).toEqual([])
    expect(byTestId(late, 'question-input')).toEqual([])
    expect(byTestId(late, 'question-expiry')).toEqual([])
  })

  it('once our answer is accepted, says so and that the run resumes, until the run tells', () => {
    const html = render(question(), { sent: { status: 'answered', answer: ['blue'], by: 'alice' } })
    expect(byTestId(html, 'question-outcome')[0].text).toMatch(/^Answered by alice: blue\s+resuming…$/)
    expect(byTestId(html, 'question-option')).toEqual([])
    expect(html).toContain('data-status="pending"')
  })

  it('shows the answer the run told, and who gave it; or that nobody answered in time', () => {
    const answered = render(question({ answered: { status: 'answered', answer: ['red', 'blue'], by: 'bob' } }))
    expect(byTestId(answered, 'question-outcome').map((e) => e.text)).toEqual(['Answered by bob: red, blue'])
    expect(answered).toContain('data-status="answered"')
    expect(byTestId(answered, 'question-option')).toEqual([])
    expect(byTestId(answered, 'question-text').map((e) => e.text)).toEqual(['Which colour?'])

    const expired = render(question({ answered: { status: 'expired', answer: [], by: null } }))
    expect(byTestId(expired, 'question-outcome').map((e) => e.text)).toEqual(['Nobody answered in time'])
    expect(expired).toContain('data-status="expired"')
  })

  it('offers nothing once the run ended unanswered', () => {
    const html = render(question({ allowText: true }), { live: false })
    expect(byTestId(html, 'question-option')).toEqual([])
    expect(byTestId(html, 'question-input')).toEqual([])
    expect(byTestId(html, 'question-outcome').map((e) => e.text)).toEqual(['Not answered: the run ended.'])
  })

  it('speaks 简体中文 in a Chinese browser', () => {
    vi.stubGlobal('navigator', { languages: ['zh-CN'], language: 'zh-CN' })
    const html = render(question({ allowText: true }))
    expect(html).toContain('等待你的回答')
    expect(byTestId(html, 'question-send').map((e) => e.text)).toEqual(['发送'])
    const answered = render(question({ answered: { status: 'answered', answer: ['蓝'], by: 'alice' } }))
    expect(byTestId(answered, 'question-outcome').map((e) => e.text)).toEqual(['alice 已回答：蓝'])
  })

  it('says when the expiry passed while the server has not closed the question yet', () => {
    const html = render(question({ expiresAt: NOW - 1000 }))
    expect(byTestId(html, 'question-expiry')[0].text).toMatch(/^Expired at /)
  })
})

describe('question rules', () => {
  it('sends the ticked options in the order the question lists them', () => {
    const q = { options: ['red', 'green', 'blue'] }
    expect(choicesAnswer(q, ['blue', 'red'])).toEqual(['red', 'blue'])
    expect(choicesAnswer(q, [])).toBeNull()
    expect(choicesAnswer(q, ['purple'])).toBeNull()
  })

  it('sends a typed answer trimmed, and nothing for blanks', () => {
    expect(textAnswer('  teal\n')).toBe('teal')
    expect(textAnswer(' \n ')).toBeNull()
  })

  it('takes text when allowed or when nothing else can answer', () => {
    expect(takesText({ allowText: true, options: ['a'] })).toBe(true)
    expect(takesText({ allowText: false, options: [] })).toBe(true)
    expect(takesText({ allowText: false, options: ['a'] })).toBe(false)
  })

  it('reads an outcome in both languages', () => {
    for (const lang of ['en', 'zh'] as const) {
      const t = translator(lang)
      const text = outcomeText(t, { status: 'answered', answer: ['a', 'b'], by: 'alice' })
      expect(text).toContain('alice')
      expect(text).toContain('a, b')
      expect(outcomeText(t, { status: 'expired', answer: [], by: null })).toBe(t('question.expired'))
    }
    expect(outcomeText(translator('en'), { status: 'answered', answer: ['x'], by: null })).toBe('Answered: x')
    expect(outcomeText(translator('zh'), { status: 'answered', answer: ['蓝'], by: 'alice' })).toBe('alice 已回答：蓝')
  })

  it('takes the outcome of an accepted answer from the server\'s question', () => {
    const q = { status: 'answered', answer: ['blue'], answered_by: 'alice' } as Question
    expect(outcomeOf(q)).toEqual({ status: 'answered', answer: ['blue'], by: 'alice' })
    expect(outcomeOf({ ...q, answered_by: undefined })).toEqual({ status: 'answered', answer: ['blue'], by: null })
  })

  it('closes the question on a 409 or 404, not on a 422 or a lost connection', () => {
    expect(refusalOf(new ApiError(409, 'expired', 'this question expired'))).toEqual({
      message: 'this question expired',
      closed: true,
    })
    expect(refusalOf(new ApiError(404, 'not_found', 'not found')).closed).toBe(true)
    expect(refusalOf(new ApiError(422, 'validation_failed', 'one answer only'))).toEqual({
      message: 'one answer only',
      closed: false,
    })
    expect(refusalOf(new ApiError(0, 'network_error', 'Failed to fetch')).closed).toBe(false)
    expect(refusalOf(new Error('boom'))).toEqual({ message: 'boom', closed: false })
  })
})
