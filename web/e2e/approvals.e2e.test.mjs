// End-to-end: tool calls that wait for a person (docs/protocol.md, "Approvals"),
// against a real `weft up` whose `current_time` tool has the policy `confirm`, and
// the admin's MCP servers section. The mock model calls the tool when asked with
// `@mock.tool current_time {}` and, given the result, answers
// `tool current_time said: <output>`.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `appr_${crypto.randomBytes(3).toString('hex')}`
const ADMIN = `${USER}_admin`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 90_000 }

let weft
let browser
let page

const lastReply = () => page.locator('[data-testid=reply]').last()
const lastCard = () => lastReply().getByTestId('tool-call')

async function lastReplyText() {
  const parts = await lastReply().locator('[data-testid=reply-text]').allTextContents()
  return parts.map((s) => s.trim()).join('\n\n')
}

async function waitForPhase(phase) {
  await page.waitForFunction(
    (want) => {
      const replies = document.querySelectorAll('[data-testid=reply]')
      return replies[replies.length - 1]?.getAttribute('data-phase') === want
    },
    phase,
    { timeout: 60_000 },
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

/** A new conversation whose first message asks for the tool; resolves once its card waits for a decision. */
async function askForTheTime(text) {
  await page.goto(`${weft.baseUrl}/chat`)
  const box = page.getByTestId('composer')
  await box.fill(text)
  await box.press('Enter')
  await page.waitForURL(/\/chat\/[^/]+$/)
  await waitForAwaiting()
}

async function waitForAwaiting() {
  await lastCard().and(page.locator('[data-status=awaiting_approval]')).waitFor({ timeout: 60_000 })
  await lastCard().getByTestId('approval-approve').waitFor()
  assert.equal(await lastReply().getAttribute('data-phase'), 'waiting_approval')
}

/** What the card says about the decision, once `approval_decided` arrived. */
async function decisionOf(card) {
  await card.getByTestId('approval-decision').waitFor({ timeout: 60_000 })
  return (await card.getByTestId('approval-decision').textContent()).trim()
}

describe('approvals and MCP status in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, {
      env: { WEFT_TOOLS__POLICIES__CURRENT_TIME: 'confirm' },
      log: 'weft-approvals.log',
    })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: ADMIN, password: PASSWORD, role: 'admin' })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    await signIn(USER)
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('a call waits for approval, says when it expires, and runs once approved', T, async () => {
    await askForTheTime('what time is it? @mock.tool current_time {}')
    const card = lastCard()
    assert.match(await card.locator('summary').textContent(), /needs approval.*current_time/)
    // The default approval_ttl_secs is 30 minutes.
    assert.match(await card.getByTestId('approval-expiry').textContent(), /^Expires at .+ \(in (29|30) min\)/)
    await shot(page, 'approval-1-waiting')

    const decided = page.waitForResponse((r) => /\/v1\/approvals\/[^/]+$/.test(r.url()))
    await card.getByTestId('approval-approve').click()
    const res = await decided
    assert.equal(res.status(), 200)
    assert.deepEqual(JSON.parse(res.request().postData()), { decision: 'approve' })

    await waitForPhase('done')
    assert.match(await lastReplyText(), /^tool current_time said: \S/)
    assert.equal(await decisionOf(card), `approved by ${USER}`)
    assert.equal(await card.getAttribute('data-status'), 'ok')
    assert.equal(await card.getByTestId('approval-approve').count(), 0, 'the buttons are gone')
    assert.equal(await page.getByTestId('tool-call').count(), 1, 'one card for the one call')
    await shot(page, 'approval-2-approved')
  })

  test('a denied call does not run, and the model is told so', T, async () => {
    await askForTheTime('@mock.reply Let me look at the clock. @mock.tool current_time {}')
    const card = lastCard()
    await card.getByTestId('approval-deny').click()
    await waitForPhase('done')
    assert.equal(await decisionOf(card), `denied by ${USER}`)
    assert.equal(await card.getAttribute('data-status'), 'failed')
    assert.match(await card.locator('summary .pill').textContent(), /denied/)
    // The text the waiting step streamed stays, followed by the answer to the refusal.
    const text = await lastReplyText()
    assert.match(text, /^Let me look at the clock\.\n\n/)
    assert.match(text, new RegExp(`tool current_time said: error: the user \\(${USER}\\) denied this call`))
    await shot(page, 'approval-3-denied')
  })

  test('after a reload the waiting call still has its buttons; "always" stops the asking', T, async () => {
    await askForTheTime('@mock.reply One moment. @mock.tool current_time {}')
    await page.reload()
    await waitForAwaiting()
    assert.equal(await lastReplyText(), 'One moment.')
    assert.equal(await page.getByTestId('tool-call').count(), 1)
    await lastCard().getByTestId('approval-always').click()
    await waitForPhase('done')
    assert.equal(await decisionOf(lastCard()), `approved by ${USER}`)
    assert.match(await lastReplyText(), /^One moment\.\n\ntool current_time said: \S/)

    // The session now allows the tool: the next call runs without a card waiting.
    const box = page.getByTestId('composer')
    await box.fill('@mock.tool current_time {}')
    await box.press('Enter')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 30_000,
    })
    await waitForPhase('done')
    assert.equal(await lastCard().getAttribute('data-status'), 'ok')
    assert.equal(await lastCard().getByTestId('approval-decision').count(), 0, 'nobody was asked')
    assert.match(await lastReplyText(), /^tool current_time said: \S/)
  })

  test('without the event stream the buttons come from the pending list; a late decision shows the 409 inline', T, async () => {
    await askForTheTime('@mock.tool current_time {}')
    const url = page.url()
    const sessionId = url.split('/').pop()
    // The stream of this run is unreachable now, as if its event log were gone.
    await page.route('**/v1/runs/*/events*', (route) => route.abort())
    await page.goto(url)
    await waitForAwaiting()
    const card = lastCard()

    // Someone else (here: the user's own API token) denies it meanwhile.
    const login = await fetch(`${weft.baseUrl}/v1/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: USER, password: PASSWORD }),
    }).then((r) => r.json())
    const auth = { Authorization: `Bearer ${login.token}`, 'Content-Type': 'application/json' }
    const { approvals } = await fetch(`${weft.baseUrl}/v1/sessions/${sessionId}/approvals`, { headers: auth }).then((r) =>
      r.json(),
    )
    assert.equal(approvals.length, 1)
    const denied = await fetch(`${weft.baseUrl}/v1/approvals/${approvals[0].id}`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ decision: 'deny' }),
    })
    assert.equal(denied.status, 200)

    await card.getByTestId('approval-approve').click()
    const error = card.getByTestId('approval-error')
    await error.waitFor()
    assert.equal((await error.textContent()).trim(), `already denied by ${USER}`)
    assert.equal(await card.getByTestId('approval-approve').count(), 0, 'no second try at a decided call')
    await shot(page, 'approval-4-conflict')

    // The stream comes back: the decision and the rest of the reply arrive.
    await page.unroute('**/v1/runs/*/events*')
    await waitForPhase('done')
    assert.equal(await decisionOf(card), `denied by ${USER}`)
    assert.match(await lastReplyText(), /denied this call/)
  })

  test('an admin sees the MCP servers section: none configured here', T, async () => {
    await signIn(ADMIN)
    await page.goto(`${weft.baseUrl}/settings`)
    const section = page.getByTestId('mcp')
    await section.getByTestId('mcp-none').waitFor()
    assert.equal((await section.locator('h2').textContent()).trim(), 'MCP servers')
    assert.equal((await section.getByTestId('mcp-none').textContent()).trim(), 'No MCP servers are configured.')
    assert.equal(await section.getByTestId('mcp-row').count(), 0)
    await section.getByTestId('mcp-workers').waitFor()
    await section.scrollIntoViewIfNeeded()
    await shot(page, 'mcp-admin')
    // A user who is not an admin has no such section.
    await signIn(USER)
    await page.goto(`${weft.baseUrl}/settings`)
    await page.getByTestId('tokens').waitFor()
    assert.equal(await page.getByTestId('mcp').count(), 0)
  })
})
