// End-to-end: plan mode. With "Plan first" on, a message is sent with `plan: true`;
// the agent's step text is a plan (`plan_proposed`) and the run waits
// (`waiting_input`) until it is approved, rejected or revised from the plan card.
// The mock model replies `@mock.reply <text>` with exactly that text — the plan —
// and, once the `propose_plan` call is answered, says
// `tool propose_plan said: <the answer>`: a revise's answer makes that the second
// plan, an approval's ("… approved the plan …") is the final reply.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `plan_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 120_000 }
const PLAN = '1. Read the code. 2. Fix the bug.'
const COMMENT = 'Add a test for the bug first.'

let weft
let browser
let page

const lastReply = () => page.locator('[data-testid=reply]').last()
const cards = () => lastReply().getByTestId('plan-card')

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

/** Waits until the last reply's plan cards stand exactly so, in order. */
async function waitForPlans(statuses) {
  await page.waitForFunction(
    (want) => {
      const replies = document.querySelectorAll('[data-testid=reply]')
      const reply = replies[replies.length - 1]
      if (!reply) return false
      const got = [...reply.querySelectorAll('[data-testid=plan-card]')].map((c) => c.getAttribute('data-status'))
      return JSON.stringify(got) === JSON.stringify(want)
    },
    statuses,
    { timeout: 60_000 },
  )
}

/** Waits until "Plan first" (as the page has it now: a navigation renders it anew) is on or off. */
async function waitForPlanFirst(on) {
  await page.waitForFunction(
    (want) => document.querySelector('[data-testid=plan-toggle]')?.getAttribute('aria-pressed') === want,
    String(on),
    { timeout: 10_000 },
  )
}

/** The next decision's POST, once the card sent it: its status and body. */
function decisionPosted() {
  return page
    .waitForResponse((r) => /\/v1\/plans\/[^/]+$/.test(r.url()) && r.request().method() === 'POST')
    .then((r) => ({ status: r.status(), body: JSON.parse(r.request().postData()) }))
}

/** A new conversation whose first message goes with "Plan first"; resolves once its plan waits. */
async function startPlanning(text) {
  await page.goto(`${weft.baseUrl}/chat`)
  await waitForPlanFirst(false)
  await page.getByTestId('plan-toggle').click()
  await waitForPlanFirst(true)
  const box = page.getByTestId('composer')
  await box.fill(text)
  const sent = page.waitForRequest((r) => /\/v1\/sessions\/[^/]+\/messages$/.test(r.url()) && r.method() === 'POST')
  await box.press('Enter')
  const body = JSON.parse((await sent).postData())
  await page.waitForURL(/\/chat\/[^/]+$/)
  await waitForPlans(['proposed'])
  await waitForPhase('waiting_input')
  return body
}

async function userToken() {
  const login = await fetch(`${weft.baseUrl}/v1/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: USER, password: PASSWORD }),
  }).then((r) => r.json())
  return { Authorization: `Bearer ${login.token}`, 'Content-Type': 'application/json' }
}

describe('plan mode in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-plans.log' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    await page.goto(`${weft.baseUrl}/login`)
    await page.locator('input[name=username]').fill(USER)
    await page.locator('input[name=password]').fill(PASSWORD)
    await page.locator('button[type=submit]').click()
    await page.waitForURL(/\/chat$/)
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('a plan is revised into a second one, which survives a reload, is approved and carried out', T, async () => {
    const body = await startPlanning(`@mock.reply ${PLAN}`)
    assert.equal(body.plan, true, 'the message went in plan mode')
    // "Plan first" holds for one message only.
    await waitForPlanFirst(false)

    const first = cards().first()
    // The plan is rendered as Markdown: "1. …" is a numbered list.
    assert.equal((await first.locator('[data-testid=plan-markdown] ol > li').textContent()).trim(), 'Read the code. 2. Fix the bug.')
    assert.equal(await lastReplyText(), '', 'the plan is shown once, in its card, not as the reply text too')
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'no tool card for the plan')
    assert.match(await first.getByTestId('plan-expiry').textContent(), /^Expires at .+ \(in /)
    for (const id of ['plan-approve', 'plan-reject', 'plan-revise']) {
      assert.equal(await first.getByTestId(id).isEnabled(), true, `${id} is offered`)
    }

    // While the plan waits a reply is running, and a plan is never queued behind it.
    const box = page.getByTestId('composer')
    await box.fill('something else')
    await page.getByTestId('plan-toggle').click()
    await page.getByTestId('plan-hint').waitFor({ timeout: 10_000 })
    assert.equal(await page.getByTestId('send').isDisabled(), true, 'a plan cannot be queued')
    await page.getByTestId('plan-toggle').click()
    await page.getByTestId('plan-hint').waitFor({ state: 'detached', timeout: 10_000 })
    await box.fill('')
    await shot(page, 'plan-1-proposed')

    // Revise: the comment is required.
    await first.getByTestId('plan-revise').click()
    const comment = first.getByTestId('plan-comment')
    await comment.waitFor({ timeout: 10_000 })
    assert.equal(await first.getByTestId('plan-revise-send').isDisabled(), true, 'nothing said yet')
    assert.equal(await first.getByTestId('plan-approve').count(), 0, 'the box stands in for the buttons')
    await comment.fill(COMMENT)
    const revised = decisionPosted()
    await first.getByTestId('plan-revise-send').click()
    assert.deepEqual(await revised, { status: 200, body: { decision: 'revise', comment: COMMENT } })

    // The first plan stays, marked revised; the agent's new plan follows.
    await waitForPlans(['revised', 'proposed'])
    await waitForPhase('waiting_input')
    assert.equal((await first.getByTestId('plan-outcome').textContent()).trim(), `Changes asked by ${USER}: ${COMMENT}`)
    assert.equal(await first.getByTestId('plan-approve').count(), 0, 'a revised plan takes no decision')
    const second = cards().nth(1)
    const asked = `tool propose_plan said: The user (${USER}) asked for changes to the plan: ${COMMENT}`
    assert.ok(
      (await second.getByTestId('plan-markdown').textContent()).includes(asked),
      'the second plan is the agent’s answer to the comment',
    )
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'the answered propose_plan call is no tool card')
    await shot(page, 'plan-2-revised')

    // After a reload both plans are back, the second still open.
    await page.reload()
    await waitForPlans(['revised', 'proposed'])
    await waitForPhase('waiting_input')
    assert.equal(
      (await cards().first().getByTestId('plan-outcome').textContent()).trim(),
      `Changes asked by ${USER}: ${COMMENT}`,
    )
    const open = cards().nth(1)
    await open.getByTestId('plan-approve').waitFor({ timeout: 10_000 })
    const runId = await lastReply().getAttribute('data-run-id')

    const approved = decisionPosted()
    await open.getByTestId('plan-approve').click()
    assert.deepEqual(await approved, { status: 200, body: { decision: 'approve' } })
    await waitForPhase('done')
    await waitForPlans(['revised', 'approved'])
    assert.equal((await cards().nth(1).getByTestId('plan-outcome').textContent()).trim(), `Approved by ${USER}`)
    assert.match(await lastReplyText(), /approved the plan/)
    assert.equal(await lastReply().getByTestId('plan-approve').count(), 0, 'nothing left to decide')
    await shot(page, 'plan-3-approved')

    // The server says the same.
    const auth = await userToken()
    const { plans } = await fetch(`${weft.baseUrl}/v1/runs/${runId}/plans`, { headers: auth }).then((r) => r.json())
    assert.deepEqual(
      plans.map((p) => [p.status, p.decided_by, p.comment ?? null]),
      [
        ['revised', USER, COMMENT],
        ['approved', USER, null],
      ],
    )

    // A finished reply read from history shows its plans the same way.
    await page.reload()
    await waitForPhase('done')
    await waitForPlans(['revised', 'approved'])
    assert.equal(await lastReply().getByTestId('plan-approve').count(), 0)
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'no propose_plan tool cards in history either')
    assert.match(await lastReplyText(), /^tool propose_plan said: The user \(.+\) approved the plan/)

    // In the same conversation (the composer stays), "Plan first" is for one message.
    const here = page.url()
    await page.getByTestId('plan-toggle').click()
    await waitForPlanFirst(true)
    const next = page.getByTestId('composer')
    await next.fill('@mock.reply 1. Another plan.')
    await next.press('Enter')
    await waitForPlans(['proposed'])
    await waitForPlanFirst(false)
    assert.equal(page.url(), here)
    assert.equal(await page.locator('[data-testid=reply]').count(), 2)
    await cards().first().getByTestId('plan-reject').click()
    await waitForPhase('done')
    await waitForPlans(['rejected'])
  })

  test('a rejected plan ends the reply with it, also after a reload; at phone width nothing scrolls sideways', T, async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await startPlanning('@mock.reply 1. Rewrite the **whole** module from scratch with a much longer plan line.')
      const card = cards().first()
      await card.scrollIntoViewIfNeeded()
      await assertFitsWidth(page, 'a plan at phone width')
      assert.equal(await card.locator('[data-testid=plan-markdown] strong').textContent(), 'whole')
      const rejected = decisionPosted()
      await card.getByTestId('plan-reject').click()
      assert.deepEqual(await rejected, { status: 200, body: { decision: 'reject' } })
      await waitForPhase('done')
      await waitForPlans(['rejected'])
      assert.equal((await card.getByTestId('plan-outcome').textContent()).trim(), `Rejected by ${USER}`)
      await assertFitsWidth(page, 'a rejected plan at phone width')

      // Its reply is the plan alone (no propose_plan call): still read as a plan.
      await page.reload()
      await waitForPlans(['rejected'])
      assert.equal((await cards().first().getByTestId('plan-outcome').textContent()).trim(), `Rejected by ${USER}`)
      assert.equal(await lastReplyText(), '', 'the plan is not shown twice')
      await shot(page, 'plan-4-rejected-phone')
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 })
    }
  })

  test('without the event stream the card comes from the open list; a late decision shows the 409 inline', T, async () => {
    await startPlanning(`@mock.reply ${PLAN}`)
    const url = page.url()
    const sessionId = url.split('/').pop()
    // The stream of this run is unreachable now, as if its event log were gone.
    await page.route('**/v1/runs/*/events*', (route) => route.abort())
    await page.goto(url)
    await cards().first().getByTestId('plan-approve').waitFor({ timeout: 60_000 })
    const card = cards().first()

    // Someone else (here: the user's own API token) decides meanwhile.
    const auth = await userToken()
    const { plans } = await fetch(`${weft.baseUrl}/v1/sessions/${sessionId}/plans`, { headers: auth }).then((r) =>
      r.json(),
    )
    assert.equal(plans.length, 1)
    const decided = await fetch(`${weft.baseUrl}/v1/plans/${plans[0].id}`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ decision: 'reject', comment: 'not now' }),
    })
    assert.equal(decided.status, 200)

    const posted = decisionPosted()
    await card.getByTestId('plan-approve').click()
    assert.equal((await posted).status, 409)
    const error = card.getByTestId('plan-error')
    await error.waitFor({ timeout: 10_000 })
    assert.equal((await error.textContent()).trim(), `already rejected by ${USER}`)
    assert.equal(await card.getByTestId('plan-approve').count(), 0, 'no second try at a decided plan')
    await shot(page, 'plan-5-conflict')

    // The stream comes back: the decision that stands arrives, and the run ended.
    await page.unroute('**/v1/runs/*/events*')
    await page.reload()
    await waitForPhase('done')
    await waitForPlans(['rejected'])
    assert.equal((await cards().first().getByTestId('plan-outcome').textContent()).trim(), `Rejected by ${USER}: not now`)
  })
})
