// The delegation card: folded, the agent, the task's first line and where the
// child stands; open, the whole task, the child run (only then) and the link to
// its conversation; and the rules behind it (src/delegations.ts).

import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { MemoryRouter } from 'react-router'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  callsDelegate,
  childSessionPath,
  delegationsByCall,
  delegationState,
  standsInForCall,
  taskHasMore,
  taskLine,
} from '../delegations'
import { I18nProvider } from '../i18n'
import type { DelegationView } from '../stream/reducer'
import type { Delegation } from '../types'
import { DelegationCardView, type DelegationCardViewProps } from './DelegationCard'

const TASK = 'Find out what A is.\nCite where it says so.'

const delegation = (over: Partial<DelegationView> = {}): DelegationView => ({
  delegationId: 'd1',
  callId: 'call_mock_1_0',
  step: 1,
  agent: 'researcher',
  task: TASK,
  sessionId: 's_child',
  runId: 'r_child',
  status: 'running',
  ...over,
})

/** What the open card draws inside: stands for the child run (`ChildRun`). */
const CHILD = createElement('p', { 'data-testid': 'child-run' }, 'A is one.')

function render(d: DelegationView, over: Partial<DelegationCardViewProps> = {}): string {
  const props: DelegationCardViewProps = {
    delegation: d,
    name: 'Researcher',
    live: true,
    child: CHILD,
    open: false,
    onToggle: () => {},
    ...over,
  }
  return renderToStaticMarkup(
    createElement(MemoryRouter, null, createElement(I18nProvider, null, createElement(DelegationCardView, props))),
  )
}

/** The elements with this test id, as their opening tags and text (elements of the same tag may nest). */
function byTestId(html: string, id: string): { tag: string; text: string }[] {
  const out: { tag: string; text: string }[] = []
  const re = new RegExp(`<(\\w+)([^>]*data-testid="${id}"[^>]*)>`, 'g')
  for (const m of html.matchAll(re)) {
    const start = m.index + m[0].length
    const tags = new RegExp(`<(/?)${m[1]}[\\s>]`, 'g')
    tags.lastIndex = start
    let depth = 1
    let end = -1
    for (let t = tags.exec(html); t; t = tags.exec(html)) {
      depth += t[1] ? -1 : 1
      if (depth === 0) {
        end = t.index
        break
      }
    }
    const text = end < 0 ? '' : html.slice(start, end).replace(/<[^>]*>/g, '')
    out.push({ tag: m[0], text })
  }
  return out
}

const card = (html: string) => byTestId(html, 'delegation')[0].tag
const state = (html: string) => byTestId(html, 'delegation-state')[0].text

describe('the delegation card', () => {
  // The provider reads the browser's language.
  beforeEach(() => vi.stubGlobal('navigator', { languages: ['en-US'], language: 'en-US' }))
  afterEach(() => vi.unstubAllGlobals())

  it('is folded to the agent, the task\'s first line and "working…", with no child attached', () => {
    const html = render(delegation())
    expect(card(html)).toContain('data-status="running"')
    expect(card(html)).toContain('data-agent="researcher"')
    expect(card(html)).toContain('data-child-run-id="r_child"')
    expect(card(html), 'collapsed by default').not.toMatch(/\sopen=""/)
    expect(state(html)).toBe('working…')
    expect(byTestId(html, 'delegation-state')[0].tag).toContain('class="pill running"')
    expect(html).toContain('class="spinner"')
    expect(byTestId(html, 'delegation-agent')[0].text).toBe('Researcher')
    expect(byTestId(html, 'delegation-task-line')[0].text).toBe('Find out what A is.')
    expect(byTestId(html, 'child-run'), 'the child run is attached only once opened').toEqual([])
  })

  it('open, shows the whole task, the child run and a link to its conversation', () => {
    const html = render(delegation(), { open: true })
    expect(card(html)).toMatch(/\sopen=""/)
    expect(byTestId(html, 'delegation-task')[0].text).toBe(TASK)
    expect(byTestId(html, 'child-run').map((e) => e.text)).toEqual(['A is one.'])
    expect(html).toContain('What Researcher says')
    const link = byTestId(html, 'delegation-open')[0]
    expect(link.tag).toContain('href="/chat/s_child"')
    expect(link.text).toBe('Open its conversation')
  })

  it('a one-line task is not shown twice when open', () => {
    const html = render(delegation({ task: '  Find B.  ' }), { open: true })
    expect(byTestId(html, 'delegation-task-line')[0].text).toBe('Find B.')
    expect(byTestId(html, 'delegation-task')).toEqual([])
  })

  it('says how the child ended, without a spinner', () => {
    const cases: [DelegationView['status'], string, string][] = [
      ['succeeded', 'answered', 'ok'],
      ['failed', 'failed', 'failed'],
      ['cancelled', 'cancelled', 'cancelled'],
    ]
    for (const [status, text, cls] of cases) {
      for (const live of [true, false]) {
        const html = render(delegation({ status }), { live })
        expect(card(html)).toContain(`data-status="${status}"`)
        expect(state(html)).toBe(text)
        expect(byTestId(html, 'delegation-state')[0].tag).toContain(`class="pill ${cls}"`)
        expect(html).not.toContain('class="spinner"')
      }
    }
  })

  it('a child never told to have ended, in a reply that ended, is no longer "working…"', () => {
    const html = render(delegation(), { live: false })
    expect(card(html)).toContain('data-status="unfinished"')
    expect(state(html)).toBe('no answer')
    expect(html).not.toContain('class="spinner"')
  })

  it('speaks 简体中文 in a Chinese browser', () => {
    vi.stubGlobal('navigator', { languages: ['zh-CN'], language: 'zh-CN' })
    expect(state(render(delegation()))).toBe('处理中…')
    expect(state(render(delegation({ status: 'succeeded' })))).toBe('已回答')
    expect(byTestId(render(delegation(), { open: true }), 'delegation-open')[0].text).toBe('打开它的对话')
  })
})

describe('delegation rules', () => {
  it('folds a task to its first line that says something', () => {
    expect(taskLine('\n  Find A.  \nThen B.')).toBe('Find A.')
    expect(taskLine('')).toBe('')
    expect(taskHasMore('Find A.\nThen B.')).toBe(true)
    expect(taskHasMore('\n Find A. \n')).toBe(false)
  })

  it('reads where a delegation stands, in a live reply and in one that ended', () => {
    expect(delegationState({ status: 'running' }, true)).toBe('running')
    expect(delegationState({ status: 'running' }, false)).toBe('unfinished')
    expect(delegationState({ status: 'failed' }, true)).toBe('failed')
    expect(delegationState({ status: 'succeeded' }, false)).toBe('succeeded')
  })

  it('opens the child\'s conversation on the chat page', () => {
    expect(childSessionPath({ sessionId: 's_1' })).toBe('/chat/s_1')
    expect(childSessionPath({ sessionId: 'a/b' })).toBe('/chat/a%2Fb')
  })

  it('stands in for its delegate call, and for no other', () => {
    const told = [{ callId: 'call_mock_1_0' }]
    expect(standsInForCall(told, 'call_mock_1_0')).toBe(true)
    expect(standsInForCall(told, 'call_mock_1_1')).toBe(false)
    expect(standsInForCall([], 'call_mock_1_0')).toBe(false)
  })

  it('reads a run\'s delegations after a reload only for a reply with a delegate call', () => {
    const call = (name: string) => ({ id: `call_${name}`, name, args: {} })
    expect(callsDelegate([{ tool_calls: [call('web_fetch')] }, { tool_calls: [call('delegate')] }])).toBe(true)
    expect(callsDelegate([{ tool_calls: [call('web_fetch')] }, {}])).toBe(false)
    expect(callsDelegate([])).toBe(false)
  })

  it('finds each stored delegation by the call it stands in for, the newest for a call told twice', () => {
    const stored = (id: string, call_id: string, status: Delegation['status']): Delegation => ({
      id,
      run_id: 'r_parent',
      session_id: 's_parent',
      step: 1,
      call_id,
      agent: 'researcher',
      task: `Task ${id}.`,
      child_session_id: `s_${id}`,
      child_run_id: `r_${id}`,
      status,
      created_at: '2026-01-01T00:00:00Z',
    })
    const byCall = delegationsByCall([
      stored('d1', 'call_a', 'cancelled'),
      stored('d2', 'call_b', 'succeeded'),
      stored('d3', 'call_a', 'succeeded'),
    ])
    expect([...byCall.keys()]).toEqual(['call_a', 'call_b'])
    expect(byCall.get('call_a')).toEqual(
      delegation({ delegationId: 'd3', callId: 'call_a', task: 'Task d3.', sessionId: 's_d3', runId: 'r_d3', status: 'succeeded' }),
    )
    expect(byCall.get('call_b')?.runId).toBe('r_d2')
    expect(delegationsByCall([]).size).toBe(0)
  })
})
