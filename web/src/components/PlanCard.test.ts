// The plan card: what it offers while the run waits for a decision, the Revise
// box, what it says while a decision is sent, refused or accepted, and once the
// run told the decision; and the rules behind it (src/plans.ts).

import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { I18nProvider, translator } from '../i18n'
import { outcomeOf, outcomeText, planStatus, reviseComment, standsInForCall, textIsPlan } from '../plans'
import type { PlanView } from '../stream/reducer'
import type { Plan } from '../types'
import { PlanCardView, type PlanCardViewProps } from './PlanCard'

const NOW = Date.parse('2026-03-01T12:00:00Z')
const MARKDOWN = '1. Read the code.\n2. Fix the bug.'

const plan = (over: Partial<PlanView> = {}): PlanView => ({
  planId: 'p1',
  callId: 'plan_1',
  step: 1,
  markdown: MARKDOWN,
  expiresAt: NOW + 30 * 60_000,
  ...over,
})

const noop = () => {}

function render(p: PlanView, over: Partial<PlanCardViewProps> = {}): string {
  const props: PlanCardViewProps = {
    plan: p,
    live: true,
    now: NOW,
    sending: null,
    error: null,
    closed: false,
    sent: null,
    revising: false,
    comment: '',
    onApprove: noop,
    onReject: noop,
    onRevise: noop,
    onCancelRevise: noop,
    onComment: noop,
    onSendRevise: noop,
    ...over,
  }
  return renderToStaticMarkup(createElement(I18nProvider, null, createElement(PlanCardView, props)))
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
const BUTTONS = ['plan-approve', 'plan-revise', 'plan-reject']
const buttons = (html: string) => BUTTONS.flatMap((id) => byTestId(html, id))

describe('the plan card', () => {
  // The provider reads the browser's language.
  beforeEach(() => vi.stubGlobal('navigator', { languages: ['en-US'], language: 'en-US' }))
  afterEach(() => vi.unstubAllGlobals())

  it('shows the plan and offers Approve, Revise and Reject while it waits, and when it expires', () => {
    const html = render(plan())
    expect(html).toMatch(/data-testid="plan-card"[^>]*data-status="proposed"/)
    expect(byTestId(html, 'plan-markdown')[0].text).toContain('1. Read the code.')
    expect(buttons(html).map((b) => b.text)).toEqual(['Approve', 'Revise', 'Reject'])
    expect(buttons(html).some((b) => disabled(b.tag))).toBe(false)
    expect(byTestId(html, 'plan-comment'), 'the Revise box opens on demand').toEqual([])
    expect(byTestId(html, 'plan-state')[0].text).toBe('waiting for your decision')
    expect(byTestId(html, 'plan-expiry')[0].text).toMatch(/^Expires at .+ \(in 30 min\); undecided, the reply ends/)
    expect(byTestId(html, 'plan-outcome')).toEqual([])
  })

  it('Revise opens a box for what to change, whose send waits for a comment', () => {
    const empty = render(plan(), { revising: true })
    expect(buttons(empty), 'the three buttons give way to the box').toEqual([])
    expect(byTestId(empty, 'plan-comment')).toHaveLength(1)
    expect(disabled(byTestId(empty, 'plan-revise-send')[0].tag), 'nothing said yet').toBe(true)
    expect(disabled(byTestId(render(plan(), { revising: true, comment: ' \n ' }), 'plan-revise-send')[0].tag)).toBe(true)

    const typed = render(plan(), { revising: true, comment: 'Test it too.' })
    expect(byTestId(typed, 'plan-comment')[0].text).toBe('Test it too.')
    expect(disabled(byTestId(typed, 'plan-revise-send')[0].tag)).toBe(false)
    expect(byTestId(typed, 'plan-revise-send')[0].text).toBe('Ask for changes')
  })

  it('is disabled while a decision is sent, the chosen button marked busy', () => {
    const html = render(plan(), { sending: 'approve' })
    expect(buttons(html).every((b) => disabled(b.tag))).toBe(true)
    expect(byTestId(html, 'plan-approve')[0].tag).toContain('aria-busy="true"')
    expect(html).toMatch(/data-testid="plan-card"[^>]*aria-busy="true"/)

    const revising = render(plan(), { sending: 'revise', revising: true, comment: 'x' })
    expect(disabled(byTestId(revising, 'plan-comment')[0].tag)).toBe(true)
    expect(byTestId(revising, 'plan-revise-send')[0].tag).toMatch(/disabled=""[^>]*aria-busy="true"|aria-busy="true"[^>]*disabled=""/)
  })

  it('shows a refused decision\'s message; a 422 leaves the plan open, a 409 closes it', () => {
    const invalid = render(plan(), { revising: true, comment: 'x', error: 'a revise needs a comment' })
    expect(byTestId(invalid, 'plan-error').map((e) => e.text)).toEqual(['a revise needs a comment'])
    expect(byTestId(invalid, 'plan-comment')).toHaveLength(1)

    const late = render(plan(), { error: 'already approved by bob', closed: true })
    expect(byTestId(late, 'plan-error').map((e) => e.text)).toEqual(['already approved by bob'])
    expect(buttons(late)).toEqual([])
    expect(byTestId(late, 'plan-expiry')).toEqual([])
    expect(byTestId(late, 'plan-state')[0].text).toBe('closed')
    expect(byTestId(late, 'plan-markdown')[0].text, 'the plan stays readable').toContain('Fix the bug.')
  })

  it('once our decision is accepted, says so and that the run resumes, until the run tells', () => {
    const html = render(plan(), { sent: { status: 'revised', comment: 'Test it too.', by: 'alice' } })
    expect(byTestId(html, 'plan-outcome')[0].text).toMatch(/^Changes asked by alice: Test it too\.\s+resuming…$/)
    expect(buttons(html)).toEqual([])
    expect(html).toContain('data-status="proposed"')
  })

  it('shows the decision the run told and who made it, with no buttons', () => {
    const cases: [PlanView['decided'], string, string][] = [
      [{ status: 'approved', comment: null, by: 'alice' }, 'Approved by alice', 'approved'],
      [{ status: 'rejected', comment: 'too risky', by: 'bob' }, 'Rejected by bob: too risky', 'rejected'],
      [{ status: 'revised', comment: 'Test it too.', by: 'alice' }, 'Changes asked by alice: Test it too.', 'revised'],
      [{ status: 'expired', comment: null, by: null }, 'Nobody decided in time; the reply ended with this plan.', 'expired'],
    ]
    for (const [decided, text, pill] of cases) {
      for (const live of [true, false]) {
        const html = render(plan({ decided }), { live })
        expect(byTestId(html, 'plan-outcome').map((e) => e.text)).toEqual([text])
        expect(html).toContain(`data-status="${decided!.status}"`)
        expect(byTestId(html, 'plan-state')[0].text).toBe(pill)
        expect(buttons(html)).toEqual([])
        expect(byTestId(html, 'plan-expiry')).toEqual([])
        expect(byTestId(html, 'plan-markdown')).toHaveLength(1)
      }
    }
  })

  it('offers nothing once the run ended undecided', () => {
    const html = render(plan(), { live: false })
    expect(buttons(html)).toEqual([])
    expect(byTestId(html, 'plan-outcome').map((e) => e.text)).toEqual(['Not decided: the run ended.'])
  })

  it('says when the expiry passed while the server has not closed the plan yet', () => {
    expect(byTestId(render(plan({ expiresAt: NOW - 1000 })), 'plan-expiry')[0].text).toMatch(/^Expired at /)
    expect(byTestId(render(plan({ expiresAt: undefined })), 'plan-expiry')).toEqual([])
  })

  it('speaks 简体中文 in a Chinese browser', () => {
    vi.stubGlobal('navigator', { languages: ['zh-CN'], language: 'zh-CN' })
    const html = render(plan())
    expect(html).toContain('等待你的决定')
    expect(buttons(html).map((b) => b.text)).toEqual(['批准', '修改', '拒绝'])
    const revised = render(plan({ decided: { status: 'revised', comment: '加上测试', by: 'alice' } }))
    expect(byTestId(revised, 'plan-outcome').map((e) => e.text)).toEqual(['alice 要求修改：加上测试'])
  })
})

describe('plan rules', () => {
  it('sends a revise comment trimmed, and nothing for blanks', () => {
    expect(reviseComment('  Test it too.\n')).toBe('Test it too.')
    expect(reviseComment(' \n ')).toBeNull()
  })

  it('reads where a plan stands', () => {
    expect(planStatus({})).toBe('proposed')
    expect(planStatus({ decided: { status: 'revised', comment: 'x', by: 'a' } })).toBe('revised')
  })

  it('reads a decision in both languages, with the comment when there is one', () => {
    for (const lang of ['en', 'zh'] as const) {
      const t = translator(lang)
      for (const status of ['approved', 'rejected', 'revised'] as const) {
        const text = outcomeText(t, { status, comment: 'note', by: 'alice' })
        expect(text).toContain('alice')
        expect(text).toContain('note')
        expect(outcomeText(t, { status, comment: null, by: null })).not.toContain('null')
      }
      expect(outcomeText(t, { status: 'expired', comment: null, by: null })).toBe(t('plan.expired'))
    }
    expect(outcomeText(translator('en'), { status: 'approved', comment: null, by: null })).toBe('Approved')
    expect(outcomeText(translator('en'), { status: 'rejected', comment: 'no', by: null })).toBe('Rejected: no')
  })

  it('takes the outcome of an accepted decision from the server\'s plan', () => {
    const p = { status: 'revised', comment: 'Add tests.', decided_by: 'alice' } as Plan
    expect(outcomeOf(p)).toEqual({ status: 'revised', comment: 'Add tests.', by: 'alice' })
    expect(outcomeOf({ ...p, status: 'approved', comment: undefined, decided_by: undefined })).toEqual({
      status: 'approved',
      comment: null,
      by: null,
    })
  })

  it('stands in for the step\'s text when the text is the plan', () => {
    expect(textIsPlan('1. Read.\n2. Fix.\n', [{ markdown: '1. Read.\n2. Fix.' }])).toBe(true)
    expect(textIsPlan('Some other text', [{ markdown: '1. Read.' }])).toBe(false)
    expect(textIsPlan('1. Read.', [])).toBe(false)
  })

  it('stands in for its propose_plan call, and for no other', () => {
    const told = [{ callId: 'plan_1' }]
    expect(standsInForCall(told, { callId: 'plan_1', name: 'propose_plan' })).toBe(true)
    expect(standsInForCall(told, { callId: 'c2', name: 'web_fetch' })).toBe(false)
    // A plan read over HTTP has no call id: the step's propose_plan call is its own.
    expect(standsInForCall([{}], { callId: 'call_9', name: 'propose_plan' })).toBe(true)
    expect(standsInForCall([], { callId: 'plan_1', name: 'propose_plan' })).toBe(false)
  })
})
