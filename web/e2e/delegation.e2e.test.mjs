// End-to-end: delegation (docs/protocol.md, "Delegation"). The default agent
// "lead" may hand tasks to "researcher" (`delegate {agent, task}`): each task is a
// run of its own in a child session (`agent_start`, naming the child's run), the
// parent waits (`waiting_agents`) and each child's end (`agent_end`) lets it go on.
// The reply shows each task as a folded delegation card; opened, the card attaches
// to the child's run and shows what the child says as it says it. After a reload the
// finished reply reads its run's delegations (`GET /v1/runs/{id}/delegations`, once,
// and only for a reply with `delegate` calls) and shows the same cards again.
//
// An admin chooses, in the agent editor, which agents an agent may delegate to.
//
// The mock model calls `delegate` for each `@mock.tool delegate {…}` of the message
// and, given the results, says `tool delegate said: …`. The child's user message is
// its task, so a task carries the child's own directives — written `\u0040mock.`
// in the JSON so that the parent's directive runs on past them.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `dele_${crypto.randomBytes(3).toString('hex')}`
const ADMIN = `${USER}_admin`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 120_000 }

const AGENTS = `
[[agents]]
id = "lead"
name = "Lead"
instructions = "You lead."
default = true
delegates = ["researcher"]

[[agents]]
id = "researcher"
name = "Researcher"
instructions = "You research."
`

// The first child takes a while to begin, so its card is opened while it works;
// the second answers at once.
const TASK_A = '@mock.delay 3000 10 @mock.reply A is one.'
const TASK_B = '@mock.reply B is two.'
const delegate = (task) =>
  `@mock.tool delegate ${JSON.stringify({ agent: 'researcher', task }).replaceAll('@mock.', '\\u0040mock.')}`
const MESSAGE = `Split it. ${delegate(TASK_A)} ${delegate(TASK_B)}`

let weft
let browser
let page
let configDir

const lastReply = () => page.locator('[data-testid=reply]').last()
/** The paths of the requests for a run's delegations, from now on; `stop()` ends the count. */
function delegationRequests() {
  const seen = []
  const onRequest = (r) => {
    const { pathname } = new URL(r.url())
    if (/^\/v1\/runs\/[^/]+\/delegations$/.test(pathname)) seen.push(pathname)
  }
  page.on('request', onRequest)
  return { seen, stop: () => page.off('request', onRequest) }
}
const cards = () => lastReply().getByTestId('delegation')
/** The reply's own text and tool cards, not those of a child shown inside an open card. */
const ownText = () => lastReply().locator(':scope > .step > [data-testid=reply-text]')
const ownTools = () => lastReply().locator(':scope > .step > [data-testid=tool-call]')

async function lastReplyText() {
  const parts = await ownText().allTextContents()
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

/** Waits until the last reply's delegation cards stand exactly so, in order. */
async function waitForCards(statuses) {
  await page.waitForFunction(
    (want) => {
      const replies = document.querySelectorAll('[data-testid=reply]')
      const reply = replies[replies.length - 1]
      if (!reply) return false
      const got = [...reply.querySelectorAll('[data-testid=delegation]')].map((c) => c.getAttribute('data-status'))
      return JSON.stringify(got) === JSON.stringify(want)
    },
    statuses,
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

/** The agent editor's "May delegate to" choices: the ids offered, and those ticked. */
async function delegateChoices(form) {
  const boxes = await form
    .getByTestId('agent-delegate')
    .evaluateAll((all) => all.map((b) => [b.getAttribute('data-id'), b.checked]))
  return { offered: boxes.map(([id]) => id), ticked: boxes.filter(([, on]) => on).map(([id]) => id) }
}

describe('delegation in the web UI', () => {
  before(async () => {
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-config-'))
    const config = path.join(configDir, 'weft.toml')
    fs.writeFileSync(config, AGENTS)
    weft = await startWeft(bin, {
      log: 'weft-delegation.log',
      env: { WEFT_CONFIG: config, WEFT_WORKER__CONCURRENCY: '4' },
    })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: ADMIN, password: PASSWORD, role: 'admin' })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
    if (configDir) fs.rmSync(configDir, { recursive: true, force: true })
  })

  test('two tasks fold into cards; one opened streams its child; both answer, and the cards survive a reload', T, async () => {
    await signIn(USER)
    await page.goto(`${weft.baseUrl}/chat`)
    const box = page.getByTestId('composer')
    await box.fill(MESSAGE)
    await box.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    const parentUrl = page.url()

    // Two cards, for the researcher, collapsed: the second has answered, and the
    // run waits for the first.
    await waitForCards(['running', 'succeeded'])
    await waitForPhase('waiting_agents')
    assert.deepEqual(await cards().evaluateAll((cs) => cs.map((c) => c.getAttribute('data-agent'))), [
      'researcher',
      'researcher',
    ])
    assert.deepEqual(await cards().evaluateAll((cs) => cs.map((c) => c.open)), [false, false], 'collapsed by default')
    const first = cards().first()
    assert.equal((await first.getByTestId('delegation-agent').textContent()).trim(), 'Researcher')
    assert.equal((await first.getByTestId('delegation-task-line').textContent()).trim(), TASK_A)
    assert.equal((await first.getByTestId('delegation-state').textContent()).trim(), 'working…')
    assert.equal((await cards().nth(1).getByTestId('delegation-state').textContent()).trim(), 'answered')
    assert.equal(await cards().getByTestId('delegation-child').count(), 0, 'no child attached while folded')
    await shot(page, 'delegation-1-working')

    // Opened while the child works: it attaches to the child's run and shows its text as it streams.
    const childRun = await first.getAttribute('data-child-run-id')
    const attached = page.waitForRequest((r) => r.url().includes(`/v1/runs/${childRun}/events`))
    await first.locator('summary').click()
    await attached
    const child = first.getByTestId('delegation-child')
    // Attached before it said anything: running, then its text, then done.
    await first.locator('[data-testid=delegation-child][data-phase=running]').waitFor({ timeout: 10_000 })
    assert.equal(await child.getByTestId('reply-text').count(), 0, 'nothing said yet')
    await child.locator('[data-testid=reply-text]', { hasText: 'A is one.' }).waitFor({ timeout: 60_000 })
    assert.equal((await child.locator('[data-testid=reply-text]').textContent()).trim(), 'A is one.')

    // Both children answer; the parent goes on with their answers as the calls' results.
    await waitForPhase('done')
    await waitForCards(['succeeded', 'succeeded'])
    assert.equal((await first.getByTestId('delegation-state').textContent()).trim(), 'answered')
    const parentRun = await lastReply().getAttribute('data-run-id')
    const childRuns = await cards().evaluateAll((cs) => cs.map((c) => c.getAttribute('data-child-run-id')))
    await first.locator('[data-testid=delegation-child][data-phase=done]').waitFor({ timeout: 10_000 })
    const reply = await lastReplyText()
    assert.match(reply, /^tool delegate said: /)
    assert.ok(reply.includes('A is one.') && reply.includes('B is two.'), reply)
    assert.equal(await ownTools().count(), 0, 'the cards stand in for the delegate calls')
    await first.scrollIntoViewIfNeeded()
    await assertFitsWidth(page, 'an open delegation card')
    await shot(page, 'delegation-2-answered')

    // The second card, opened after its child finished, replays what it said.
    const second = cards().nth(1)
    await second.locator('summary').click()
    await second.locator('[data-testid=delegation-child][data-phase=done] [data-testid=reply-text]').waitFor({ timeout: 10_000 })
    assert.equal((await second.getByTestId('delegation-child').getByTestId('reply-text').textContent()).trim(), 'B is two.')

    // A card opens the child's conversation: its task, and its answer. Its reply
    // called no `delegate`, so nothing asks for its run's delegations.
    const childSession = (await first.getByTestId('delegation-open').getAttribute('href')).split('/').pop()
    const inChild = delegationRequests()
    await first.getByTestId('delegation-open').click()
    await page.waitForURL(new RegExp(`/chat/${childSession}$`))
    await waitForPhase('done')
    assert.ok((await page.getByTestId('user-message').last().textContent()).includes(TASK_A), 'the task is its message')
    assert.equal(await lastReplyText(), 'A is one.')
    inChild.stop()
    assert.deepEqual(inChild.seen, [], 'no delegations read for a reply without delegate calls')

    // Back in the parent after a reload, the reply reads the same and the two tasks
    // are cards again — answered, for the researcher, folded — read with one request
    // for the run's delegations. They stand in for the delegate calls: no tool row
    // beside them, nor one for a call's result.
    await page.goBack()
    await page.waitForURL(parentUrl)
    await waitForCards(['succeeded', 'succeeded'])
    const reloaded = delegationRequests()
    await page.reload()
    await waitForPhase('done')
    await waitForCards(['succeeded', 'succeeded'])
    assert.equal(await lastReplyText(), reply)
    assert.deepEqual(await cards().evaluateAll((cs) => cs.map((c) => c.getAttribute('data-child-run-id'))), childRuns)
    assert.deepEqual(await cards().evaluateAll((cs) => cs.map((c) => c.open)), [false, false], 'collapsed by default')
    assert.deepEqual(
      (await cards().getByTestId('delegation-state').allTextContents()).map((s) => s.trim()),
      ['answered', 'answered'],
    )
    assert.deepEqual(
      (await cards().getByTestId('delegation-agent').allTextContents()).map((s) => s.trim()),
      ['Researcher', 'Researcher'],
    )
    assert.equal((await cards().first().getByTestId('delegation-task-line').textContent()).trim(), TASK_A)
    assert.equal(await lastReply().getByTestId('tool-call').count(), 0, 'the cards stand in for the delegate calls')
    assert.equal(await cards().getByTestId('delegation-child').count(), 0, 'no child attached while folded')
    await shot(page, 'delegation-3-reloaded')

    // Opened, each card attaches to its child's run, which replays what the child said.
    for (const [i, said] of [
      [0, 'A is one.'],
      [1, 'B is two.'],
    ]) {
      const card = cards().nth(i)
      const attachedAgain = page.waitForRequest((r) => r.url().includes(`/v1/runs/${childRuns[i]}/events`))
      await card.locator('summary').click()
      await attachedAgain
      const text = card.locator('[data-testid=delegation-child][data-phase=done] [data-testid=reply-text]')
      await text.waitFor({ timeout: 10_000 })
      assert.equal((await text.textContent()).trim(), said)
    }
    assert.equal(await ownTools().count(), 0, 'still no delegate tool rows with the cards open')
    await shot(page, 'delegation-4-reloaded-open')
    reloaded.stop()
    assert.deepEqual(reloaded.seen, [`/v1/runs/${parentRun}/delegations`], 'one request for the reply that delegated')
  })

  test('an admin chooses in the agent editor which agents an agent may delegate to', T, async () => {
    await signIn(ADMIN)
    await page.goto(`${weft.baseUrl}/settings`)
    const section = page.getByTestId('agents')
    const lead = section.getByTestId('agent-lead')
    await lead.waitFor()
    assert.equal((await lead.getByTestId('agent-delegates-summary').textContent()).trim(), 'delegates to: researcher')
    assert.equal(await section.getByTestId('agent-researcher').getByTestId('agent-delegates-summary').count(), 0)

    // The lead's editor offers every other agent (the built-in ones too), its configured delegate ticked.
    const others = (await adminRequest(weft, 'GET', '/v1/agents')).agents.map((a) => a.id)
    await lead.getByTestId('agent-edit').click()
    const form = section.getByTestId('agent-form')
    assert.deepEqual(await delegateChoices(form), {
      offered: others.filter((id) => id !== 'lead'),
      ticked: ['researcher'],
    })
    await form.getByTestId('agent-delegates').scrollIntoViewIfNeeded()
    await shot(page, 'delegation-5-editor')
    await form.locator('button', { hasText: 'Cancel' }).click()

    // The researcher is allowed to hand tasks back to the lead: sent in the PUT, shown, and served.
    await section.getByTestId('agent-researcher').getByTestId('agent-edit').click()
    assert.deepEqual(await delegateChoices(form), { offered: others.filter((id) => id !== 'researcher'), ticked: [] })
    await form.locator('[data-testid=agent-delegate][data-id=lead]').check()
    const put = page.waitForRequest((r) => r.url().endsWith('/v1/admin/agents/researcher') && r.method() === 'PUT')
    await form.getByTestId('agent-save').click()
    assert.deepEqual(JSON.parse((await put).postData()).delegates, ['lead'])
    const summary = section.getByTestId('agent-researcher').getByTestId('agent-delegates-summary')
    await summary.waitFor({ timeout: 10_000 })
    assert.equal((await summary.textContent()).trim(), 'delegates to: lead')
    const { agents } = await adminRequest(weft, 'GET', '/v1/agents')
    assert.deepEqual(agents.find((a) => a.id === 'researcher').delegates, ['lead'])
  })
})
