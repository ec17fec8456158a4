// End-to-end: agents and turns in the browser, against a real `weft up`. An admin
// creates an agent in /settings and turns its memory off (a reload and a later edit
// keep it off); a user sets their own instructions, picks the agent in a chat and
// sends `@mock.context`, to which the mock model answers with a JSON picture of what
// it was sent (`{"system": [the system prompt], "users": …, "tools": …}`). Then undo
// / redo, regenerate and its alternatives, editing the last message, and compacting
// a conversation.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `agt_${crypto.randomBytes(3).toString('hex')}`
const ADMIN = `${USER}_admin`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const AGENT_MARK = `PIRATE-${crypto.randomBytes(3).toString('hex')}`
const USER_MARK = `CAPTAIN-${crypto.randomBytes(3).toString('hex')}`
const T = { timeout: 120_000 }

let weft
let browser
let page

const replies = () => page.locator('[data-testid=reply]')
const lastReply = () => replies().last()

async function lastReplyText() {
  const parts = await lastReply().locator('[data-testid=reply-text]').allTextContents()
  return parts.map((s) => s.trim()).join('\n\n')
}

async function lastUserText() {
  return (await page.getByTestId('user-message').last().locator('.bubble').textContent()).trim()
}

/** Waits until the newest reply is finished and reads exactly `text`. */
async function waitForReply(text) {
  await page.waitForFunction(
    (want) => {
      const all = document.querySelectorAll('[data-testid=reply]')
      const last = all[all.length - 1]
      if (!last || last.getAttribute('data-phase') !== 'done') return false
      const got = [...last.querySelectorAll('[data-testid=reply-text]')].map((e) => e.textContent.trim()).join('\n\n')
      return got === want
    },
    text,
    { timeout: 60_000 },
  )
}

async function waitForPhase(phase) {
  await page.waitForFunction(
    (want) => {
      const all = document.querySelectorAll('[data-testid=reply]')
      return all[all.length - 1]?.getAttribute('data-phase') === want
    },
    phase,
    { timeout: 60_000 },
  )
}

async function waitForCount(testid, n) {
  await page.waitForFunction(
    ([id, want]) => document.querySelectorAll(`[data-testid=${id}]`).length === want,
    [testid, n],
    { timeout: 30_000 },
  )
}

async function signIn(username) {
  await browser.context.clearCookies()
  await page.goto(`${weft.baseUrl}/login`)
  await page.locator('input[name=username]').fill(username)
  await page.locator('input[name=password]').fill(PASSWORD)
  await page.locator('button[type=submit]').click()
  await page.waitForURL(/\/chat$/)
}

async function send(text) {
  const box = page.getByTestId('composer')
  await box.fill(text)
  await box.press('Enter')
}

/** A new conversation with one finished turn per `@mock.reply` word. */
async function chatWith(...words) {
  await page.goto(`${weft.baseUrl}/chat`)
  await page.getByTestId('composer').waitFor()
  for (const [i, w] of words.entries()) {
    await send(`@mock.reply ${w}`)
    if (i === 0) await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForReply(w)
    await waitForCount('user-message', i + 1)
  }
}

async function altPosition() {
  return (await page.getByTestId('alt-position').textContent()).trim()
}

describe('agents and turns in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-agents.log' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: ADMIN, password: PASSWORD, role: 'admin' })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    page.on('dialog', (d) => d.accept())
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('an admin creates, edits and deletes agents; the built-in one cannot be deleted', T, async () => {
    await signIn(ADMIN)
    await page.goto(`${weft.baseUrl}/settings`)
    const section = page.getByTestId('agents')
    await section.getByTestId('agent-agent').waitFor()
    assert.equal(await section.getByTestId('agent-agent').getByTestId('agent-delete').count(), 0)

    await section.getByTestId('agent-new').click()
    const form = section.getByTestId('agent-form')
    await form.getByTestId('agent-id').fill('pirate')
    await form.getByTestId('agent-name').fill('Pirate e2e')
    await form.getByTestId('agent-description').fill('Talks like a pirate')
    await form.getByTestId('agent-instructions').fill(`Always talk like a pirate. ${AGENT_MARK}`)
    // No tools: the default agent offers current_time, this one must not.
    await form.getByTestId('agent-all-tools').uncheck()
    await form.getByTestId('agent-tools').fill('')
    await form.getByTestId('agent-save').click()
    const row = section.getByTestId('agent-pirate')
    await row.waitFor()
    assert.match(await row.textContent(), /Pirate e2e/)
    assert.match(await row.textContent(), /no tools/)
    assert.equal(await form.count(), 0, 'the form closes once saved')

    // A new agent remembers people; turned off, it stays off after a reload.
    const remembers = async () => (await adminRequest(weft, 'GET', '/v1/agents')).agents.find((a) => a.id === 'pirate').memory
    assert.equal(await remembers(), true)
    assert.equal(await row.getByTestId('agent-memory-off').count(), 0)
    await row.getByTestId('agent-edit').click()
    assert.equal(await form.getByTestId('agent-memory').isChecked(), true)
    await form.getByTestId('agent-memory').uncheck()
    await form.getByTestId('agent-save').click()
    await row.getByTestId('agent-memory-off').waitFor()
    assert.match(await row.getByTestId('agent-memory-off').textContent(), /remembers no one/)
    assert.equal(await remembers(), false)
    await page.reload()
    await row.getByTestId('agent-memory-off').waitFor()

    // Editing keeps the id and changes what was edited, and nothing else: memory stays off.
    await row.getByTestId('agent-edit').click()
    assert.equal(await form.getByTestId('agent-id').getAttribute('readonly'), '')
    assert.match(await form.getByTestId('agent-instructions').inputValue(), new RegExp(AGENT_MARK))
    assert.equal(await form.getByTestId('agent-memory').isChecked(), false, 'the editor shows memory off')
    await form.getByTestId('agent-memory-field').scrollIntoViewIfNeeded()
    await shot(page, 'agents-1-editor')
    await form.getByTestId('agent-description').fill('Talks like a pirate, arr')
    await form.getByTestId('agent-save').click()
    await row.filter({ hasText: 'Talks like a pirate, arr' }).waitFor()
    assert.equal(await remembers(), false, 'saving another change keeps memory off')
    assert.equal(await row.getByTestId('agent-memory-off').count(), 1)

    // A bad id is refused before it is sent.
    await section.getByTestId('agent-new').click()
    await form.getByTestId('agent-id').fill('Not Valid')
    await form.getByTestId('agent-name').fill('x')
    await form.getByTestId('agent-save').click()
    await form.getByRole('alert').waitFor()
    await form.getByTestId('agent-id').fill('scratch')
    await form.getByTestId('agent-save').click()
    await section.getByTestId('agent-scratch').waitFor()
    await section.getByTestId('agent-scratch').getByTestId('agent-delete').click()
    await waitForCount('agent-scratch', 0)
    await section.scrollIntoViewIfNeeded()
    await shot(page, 'agents-1-admin')
  })

  test('a user sets their instructions, picks the agent, and the model gets both', T, async () => {
    await signIn(USER)
    await page.goto(`${weft.baseUrl}/settings`)
    const box = page.getByTestId('instructions-text')
    await page.waitForFunction(() => !document.querySelector('[data-testid=instructions-text]')?.disabled)
    await box.fill(`Call me captain. ${USER_MARK}`)
    assert.equal((await page.getByTestId('instructions-state').textContent()).trim(), 'Unsaved changes')
    assert.match(await page.getByTestId('instructions-count').textContent(), /^\d+ \/ 32,000 characters$/)
    await page.getByTestId('instructions-save').click()
    await page.getByTestId('instructions-state').filter({ hasText: 'Saved' }).waitFor()
    // Non-admins see the agents, without the controls.
    await page.getByTestId('agent-pirate').waitFor()
    assert.equal(await page.getByTestId('agent-new').count(), 0)
    await page.reload()
    await page.waitForFunction(
      (mark) => document.querySelector('[data-testid=instructions-text]')?.value.includes(mark),
      USER_MARK,
    )

    // A chat begun with the default agent, then switched to the pirate.
    await chatWith('ahoy')
    const picker = page.getByTestId('agent-picker')
    assert.equal(await picker.inputValue(), 'agent')
    assert.match(await picker.locator('option:checked').textContent(), /\(default\)/)
    const patched = page.waitForResponse((r) => r.request().method() === 'PATCH' && /\/v1\/sessions\/[^/]+$/.test(r.url()))
    await picker.selectOption('pirate')
    const res = await patched
    assert.equal(res.status(), 200)
    assert.deepEqual(JSON.parse(res.request().postData()), { agent: 'pirate' })

    await send('@mock.context')
    await waitForCount('reply', 2)
    await waitForPhase('done')
    const seen = await lastReplyText()
    assert.match(seen, new RegExp(AGENT_MARK), 'the agent’s instructions reach the model')
    assert.match(seen, new RegExp(USER_MARK), 'the user’s own instructions reach the model')
    assert.ok(seen.indexOf(AGENT_MARK) < seen.indexOf(USER_MARK), 'the user’s come after the agent’s')
    assert.doesNotMatch(seen, /current_time/, 'only the agent’s tools are offered')
    const foot = await lastReply().getByTestId('reply-foot').textContent()
    assert.match(foot, /^Pirate e2e · /)
    assert.match(foot, /ctx (<1|\d+)% of 32k/)

    // The preview shows the same system prompt, but to a user not the agent's
    // own instructions (admins only).
    await page.getByTestId('system-prompt-toggle').click()
    const prompt = await page.getByTestId('system-prompt-text').textContent()
    assert.doesNotMatch(prompt, new RegExp(AGENT_MARK))
    assert.match(prompt, /shown to admins only/)
    assert.match(prompt, new RegExp(USER_MARK))
    await shot(page, 'agents-2-context')
    await page.getByTestId('system-prompt-toggle').click()

    // The session remembers its agent.
    await page.reload()
    await page.waitForFunction(() => document.querySelector('[data-testid=agent-picker]')?.value === 'pirate')
  })

  test('undo removes the last turn, redo brings it back, a refused redo says why', T, async () => {
    await chatWith('one', 'two')
    // While a reply runs, the turn actions wait.
    await send('@mock.tokens 60 @mock.delay 0 40')
    await waitForCount('reply', 3)
    await waitForPhase('running')
    assert.equal(await page.getByTestId('undo').isDisabled(), true)
    assert.equal(await page.getByTestId('regenerate').count(), 0)
    await waitForPhase('done')
    await page.getByTestId('undo').click()
    await waitForCount('user-message', 2)
    await waitForReply('two')

    await page.getByTestId('undo').click()
    await waitForCount('user-message', 1)
    await waitForReply('one')
    assert.equal(await lastUserText(), '@mock.reply one')

    await page.getByTestId('redo').click()
    await waitForCount('user-message', 2)
    await waitForReply('two')
    assert.equal(await lastUserText(), '@mock.reply two')

    // Survives a reload: the server keeps it so.
    await page.reload()
    await waitForCount('user-message', 2)
    await waitForReply('two')

    // Redo again brings back the turn undone first; then there is nothing left.
    await page.getByTestId('redo').click()
    await waitForCount('user-message', 3)
    await waitForPhase('done')
    assert.match(await lastReplyText(), /^w1 w2 .* w60$/)
    await page.getByTestId('redo').click()
    const refused = page.getByTestId('turn-error')
    await refused.waitFor()
    assert.match(await refused.textContent(), /^Not done: nothing to redo/)
    await shot(page, 'agents-3-redo-refused')
    // The next action that works clears it.
    await page.getByTestId('undo').click()
    await waitForCount('user-message', 2)
    assert.equal(await refused.count(), 0)
  })

  test('the agent\'s todo list shows above the composer, live, through a reload and an undo', T, async () => {
    await chatWith('start')
    const progress = page.getByTestId('todos-progress')
    const statuses = () => page.getByTestId('todo').evaluateAll((els) => els.map((e) => e.dataset.status))
    assert.equal(await page.getByTestId('todos').count(), 0, 'no list, no panel')
    await send('@mock.tool todo_update {"items": [{"text": "read the brief"}, {"text": "write it up"}]}')
    await waitForCount('user-message', 2)
    await page.waitForFunction(() => document.querySelector('[data-testid=todos-progress]')?.textContent === '0 of 2 done')
    assert.deepEqual(await statuses(), ['pending', 'pending'])
    assert.match(await page.getByTestId('todos').textContent(), /read the brief.*write it up/)
    await waitForPhase('done')

    await send('@mock.tool todo_update {"items": [{"id": "1", "status": "done"}, {"id": "2", "status": "in_progress"}]}')
    await waitForCount('user-message', 3)
    await page.waitForFunction(() => document.querySelector('[data-testid=todos-progress]')?.textContent === '1 of 2 done')
    assert.deepEqual(await statuses(), ['done', 'in_progress'])
    await waitForPhase('done')
    await shot(page, 'agents-todos')

    // The list is the session's: a reload reads it back.
    await page.reload()
    await progress.waitFor()
    assert.equal(await progress.textContent(), '1 of 2 done')
    // Undoing the turn that ticked it brings back the list from before.
    await page.getByTestId('undo').click()
    await waitForCount('user-message', 2)
    await page.waitForFunction(() => document.querySelector('[data-testid=todos-progress]')?.textContent === '0 of 2 done')
    assert.deepEqual(await statuses(), ['pending', 'pending'])
  })

  test('regenerate adds a second reply; "‹ 2/2 ›" switches between them', T, async () => {
    await chatWith('again')
    const first = await lastReply().getAttribute('data-run-id')
    assert.equal(await page.getByTestId('alternatives').count(), 0, 'one reply: nothing to switch')
    await page.getByTestId('regenerate').click()
    await page.waitForFunction(
      (old) => {
        const all = document.querySelectorAll('[data-testid=reply]')
        const last = all[all.length - 1]
        return last && last.getAttribute('data-run-id') !== old && last.getAttribute('data-phase') === 'done'
      },
      first,
      { timeout: 60_000 },
    )
    const second = await lastReply().getAttribute('data-run-id')
    assert.equal(await replies().count(), 1, 'the new reply replaces the old one on screen')
    assert.equal(await lastReplyText(), 'again')
    await page.getByTestId('alt-position').filter({ hasText: '2/2' }).waitFor()
    assert.equal(await page.getByTestId('alt-next').isDisabled(), true)
    await shot(page, 'agents-4-alternatives')

    await page.getByTestId('alt-prev').click()
    await page.getByTestId('alt-position').filter({ hasText: '1/2' }).waitFor()
    assert.equal(await lastReply().getAttribute('data-run-id'), first)
    assert.equal(await replies().count(), 1)

    await page.getByTestId('alt-next').click()
    await page.getByTestId('alt-position').filter({ hasText: '2/2' }).waitFor()
    assert.equal(await lastReply().getAttribute('data-run-id'), second)
    assert.equal(await altPosition(), '2/2')
  })

  test('editing the last message answers it again, and the old question comes back with its reply', T, async () => {
    await chatWith('first')
    await page.getByTestId('user-message').last().getByTestId('edit').click()
    const box = page.getByTestId('edit-text')
    assert.equal(await box.inputValue(), '@mock.reply first')
    await box.fill('@mock.reply second')
    await page.getByTestId('edit-save').click()
    await waitForReply('second')
    assert.equal(await lastUserText(), '@mock.reply second')
    assert.equal(await page.getByTestId('user-message').count(), 1)
    await page.getByTestId('alt-position').filter({ hasText: '2/2' }).waitFor()

    await page.getByTestId('alt-prev').click()
    await waitForReply('first')
    await page.waitForFunction(
      () => document.querySelector('[data-testid=user-message] .bubble')?.textContent.trim() === '@mock.reply first',
    )
    await page.getByTestId('alt-position').filter({ hasText: '1/2' }).waitFor()
  })

  test('compact: the next reply summarises the older turns, shown as "Earlier in this conversation"', T, async () => {
    await chatWith('alpha', 'beta')
    assert.equal(await page.getByTestId('summary').count(), 0)
    await page.getByTestId('compact').click()
    await page.getByTestId('compact-asked').waitFor()
    await send('@mock.reply gamma')
    await waitForCount('user-message', 3)
    await waitForReply('gamma')
    const note = page.getByTestId('summary')
    await note.waitFor()
    assert.match(await note.locator('summary').textContent(), /^Earlier in this conversation · 4 messages summarised by /)
    await note.locator('summary').click()
    assert.ok((await note.getByTestId('summary-text').textContent()).trim().length > 0)
    assert.equal(await page.getByTestId('compact-asked').count(), 0)
    await shot(page, 'agents-5-summary')
  })

  test('an admin adds a model and changes a rate limit in the settings, without a restart', T, async () => {
    await signIn(ADMIN)
    await page.goto(`${weft.baseUrl}/settings`)
    const section = page.getByTestId('config')
    const limits = section.getByTestId('config-limits').locator('textarea')
    await limits.waitFor()
    const text = await limits.inputValue()
    const current = JSON.parse(text).runs_per_minute_per_user
    await limits.fill(text.replace(`"runs_per_minute_per_user": ${current}`, '"runs_per_minute_per_user": 7'))
    await section.getByTestId('config-limits').getByRole('button').click()
    const changes = section.getByTestId('config-changes')
    await changes.waitFor()
    assert.match(await changes.textContent(), new RegExp(`limits.runs_per_minute_per_user: ${current} → 7`))
    // Invalid JSON is refused in the page; a model the server refuses changes nothing.
    const models = section.getByTestId('config-models').locator('textarea')
    await models.fill('[{"id": "e2e-extra", "provider": "mock"}, {"id": "mock", "provider": "mock", "default": true}]')
    await section.getByTestId('config-models').getByRole('button').click()
    await page.waitForFunction(() => /models\.e2e-extra: added/.test(document.querySelector('[data-testid=config-changes]')?.textContent ?? ''))
    const served = await adminRequest(weft, 'GET', '/v1/models')
    assert.ok(served.models.some((m) => m.id === 'e2e-extra'), JSON.stringify(served))
    const limitsNow = await adminRequest(weft, 'GET', '/v1/admin/limits')
    assert.equal(limitsNow.runs_per_minute_per_user, 7)
    await shot(page, 'agents-6-config')
    // Back to what it was, so the other tests keep their runs.
    await limits.fill((await limits.inputValue()).replace('"runs_per_minute_per_user": 7', `"runs_per_minute_per_user": ${current}`))
    await section.getByTestId('config-limits').getByRole('button').click()
    await page.waitForFunction((c) => new RegExp(`→ ${c}`).test(document.querySelector('[data-testid=config-changes]')?.textContent ?? ''), current)
  })
})
