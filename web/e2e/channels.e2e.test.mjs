// End-to-end: the /channels page in the browser, against a real `weft up` whose
// SSRF guard lets webhooks reach 127.0.0.1 (`[tools.web_fetch] allow_hosts`, in a
// config file) and a webhook receiver on 127.0.0.1 that records every request. A
// user opens the page from the navigation; a URL the guard refuses (10.0.0.1) is
// refused under the URL field with what was typed kept; a webhook channel to the
// receiver is made and its signing secret shown once, with a copy button; "Send
// test" shows the delivery turn "delivered", and the receiver got exactly one POST
// whose Weft-Signature is the HMAC-SHA256 of `t.body` under that secret. The test
// lands in the bell, already read, and leads back to /channels. A schedule made
// with the form delivers to the channel: the list shows it, a "Run now" reaches
// the receiver, and the fire's history shows the delivery. The channel is
// renamed, then set in its edit form to take the waits of the user's own
// conversations: the list shows it, and a question the agent asks in a new chat
// reaches the receiver as a signed `run.waiting`, is in the bell, and is answered
// in the page. Then the channel is deleted. Every check against the server reads
// the API as the signed-in user.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { EventEmitter, once } from 'node:events'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, signIn, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `chn_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 180_000 }
/** The guard refuses every internal address but this one. */
const CONFIG = `[tools.web_fetch]\nallow_hosts = ["127.0.0.1"]\n`

let weft
let browser
let page
let receiver
let configDir

/**
 * A webhook receiver on 127.0.0.1: answers 204 to everything and keeps each
 * request (method, URL, headers, the body's exact bytes as text).
 */
async function startReceiver() {
  const requests = []
  const events = new EventEmitter()
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(204).end()
      events.emit('request')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    /** Resolves once `n` requests came (or rejects after `ms`). */
    waitFor(n, ms = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length < n) return
          done()
          resolve(requests)
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`the receiver got ${requests.length} requests in ${ms} ms, not ${n}`))
        }, ms)
        const done = () => {
          clearTimeout(timer)
          events.off('request', check)
        }
        events.on('request', check)
        check()
      })
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

/** The API as this browser's user: what the server holds, not what the page shows. */
const serverGet = (p) =>
  page.evaluate(async (url) => {
    const res = await fetch(url)
    if (!res.ok) throw new Error(`GET ${url} → ${res.status}`)
    return res.json()
  }, p)
const serverChannels = async () => (await serverGet('/v1/channels')).channels

const form = () => page.getByTestId('channel-form')
const row = (id) => page.locator(`[data-testid=channel][data-id="${id}"]`)
const fieldError = (name) => form().getByTestId(`field-${name}`).getByTestId('field-error')
const lastReply = () => page.locator('[data-testid=reply]').last()

/** Saves the channel form and waits for the answer to `POST /v1/channels`. */
async function saveChannel() {
  const answer = page.waitForResponse((r) => r.url().endsWith('/v1/channels') && r.request().method() === 'POST')
  await form().getByTestId('channel-save').click()
  return answer
}

/** `t=<secs>,v1=<hex>` checked against HMAC-SHA256 of `${t}.${body}` under `secret`. */
function assertSigned(req, secret) {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(req.headers['weft-signature'] ?? '')
  assert.ok(m, `Weft-Signature is t=<secs>,v1=<hex>: ${req.headers['weft-signature']}`)
  const want = crypto.createHmac('sha256', secret).update(`${m[1]}.${req.body}`).digest('hex')
  assert.equal(m[2], want, 'the signature is HMAC-SHA256 of "t.body" under the secret')
  assert.ok(Math.abs(Number(m[1]) - Date.now() / 1000) < 300, `t is now, in seconds: ${m[1]}`)
}

describe('the channels page', () => {
  before(async () => {
    receiver = await startReceiver()
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-config-'))
    const config = path.join(configDir, 'weft.toml')
    fs.writeFileSync(config, CONFIG)
    weft = await startWeft(bin, { log: 'weft-channels.log', env: { WEFT_CONFIG: config } })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    browser = await launchBrowser()
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: weft.baseUrl })
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    page.on('dialog', (d) => d.accept())
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
    await receiver?.close()
    if (configDir) fs.rmSync(configDir, { recursive: true, force: true })
  })

  test('a user makes a webhook channel, sees its secret once, tests it, has a schedule deliver to it, renames it, has it take their own chats’ questions, and deletes it', T, async () => {
    await signIn(page, weft.baseUrl, USER, PASSWORD)
    await page.getByTestId('nav-channels').click()
    await page.waitForURL(/\/channels$/)
    await page.getByTestId('channels-none').waitFor()

    // A URL the SSRF guard refuses: the server's reason under the URL field, nothing made, nothing typed lost.
    await page.getByTestId('channel-new').click()
    assert.equal(await form().getByTestId('channel-kind-webhook').isChecked(), true, 'a webhook to begin with')
    await form().getByTestId('channel-name').fill('ops-hook')
    await form().getByTestId('channel-url').fill('http://10.0.0.1/x')
    assert.equal((await saveChannel()).status(), 422)
    await fieldError('url').waitFor()
    assert.match(await fieldError('url').textContent(), /10\.0\.0\.1/)
    assert.equal(await form().getByTestId('field-name').getByTestId('field-error').count(), 0, 'the name is not blamed')
    assert.equal(await form().getByTestId('channel-name').inputValue(), 'ops-hook')
    assert.equal(await form().getByTestId('channel-url').inputValue(), 'http://10.0.0.1/x')
    assert.deepEqual(await serverChannels(), [], 'nothing was made')
    await shot(page, 'channels-refused')

    // Typing in the field clears its reason; the receiver's URL is accepted (allow_hosts).
    const hookUrl = `${receiver.url}/hook?team=ops`
    await form().getByTestId('channel-url').fill(hookUrl)
    await fieldError('url').waitFor({ state: 'detached' })
    assert.equal((await saveChannel()).status(), 201)
    await form().waitFor({ state: 'detached' })
    const [made] = await serverChannels()
    assert.equal(made.name, 'ops-hook')
    assert.deepEqual(made.target, { kind: 'webhook', url: hookUrl }, 'a read never carries the secret')

    // The secret, shown once in the channel's row, copied with one click.
    const shown = row(made.id).getByTestId('channel-secret')
    await shown.waitFor()
    assert.match(await shown.textContent(), /won’t see it again/)
    const secret = (await shown.getByTestId('channel-secret-value').textContent()).trim()
    assert.match(secret, /^whsec_[0-9a-f]{32}$/)
    assert.equal(made.secret_hint, `whsec_…${secret.slice(-4)}`)
    assert.match(await row(made.id).getByTestId('channel-secret-hint').textContent(), new RegExp(`…${secret.slice(-4)}`))
    await shown.getByTestId('channel-secret-copy').click()
    await shown.getByTestId('channel-secret-copy').filter({ hasText: 'Copied' }).waitFor()
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the copy button copies the secret')
    assert.equal(await row(made.id).getByTestId('channel-kind').getAttribute('data-kind'), 'webhook')
    assert.equal((await row(made.id).getByTestId('channel-target').textContent()).split(' · ')[0].trim(), hookUrl)
    assert.match(await row(made.id).getByTestId('channel-schedules').textContent(), /No schedule uses it/)
    await shot(page, 'channels-secret')
    await shown.getByTestId('channel-secret-close').click()
    await shown.waitFor({ state: 'detached' })
    // Not again: a reload shows the channel, never its secret.
    await page.reload()
    await row(made.id).waitFor()
    assert.equal(await page.getByTestId('channel-secret').count(), 0)
    assert.ok(!(await page.content()).includes(secret), 'the secret is nowhere on the page')

    // A second channel of the same name: the 409 under the name field.
    await page.getByTestId('channel-new').click()
    await form().getByTestId('channel-name').fill('ops-hook')
    await form().getByTestId('channel-url').fill(`${receiver.url}/other`)
    assert.equal((await saveChannel()).status(), 409)
    await fieldError('name').waitFor()
    assert.match(await fieldError('name').textContent(), /channel of that name/)
    await form().getByTestId('channel-cancel').click()
    assert.equal((await serverChannels()).length, 1)

    // Send test: the delivery shows pending, then delivered.
    assert.equal(receiver.requests.length, 0)
    await row(made.id).getByTestId('channel-test-send').click()
    const status = row(made.id).getByTestId('channel-test')
    await status.waitFor()
    await row(made.id).locator('[data-testid=channel-test][data-status=delivered]').waitFor({ timeout: 30_000 })
    assert.equal(await status.getByTestId('delivery-status').textContent(), 'delivered')
    assert.equal(await row(made.id).getByTestId('channel-last').getByTestId('delivery-status').getAttribute('data-status'), 'delivered')
    await shot(page, 'channels-tested')

    // The receiver got exactly one POST, signed with the secret shown.
    const [delivered] = (await serverGet(`/v1/channels/${made.id}/deliveries`)).deliveries
    assert.equal(delivered.status, 'delivered')
    assert.equal(delivered.notification_kind, 'channel_test')
    await receiver.waitFor(1)
    assert.equal(receiver.requests.length, 1, 'one POST, not one per try')
    const [req] = receiver.requests
    assert.equal(req.method, 'POST')
    assert.equal(req.url, '/hook?team=ops')
    assert.match(req.headers['content-type'], /^application\/json/)
    assert.equal(req.headers['weft-delivery'], delivered.id)
    assert.equal(req.headers['weft-event'], 'channel.test')
    assertSigned(req, secret)
    const body = JSON.parse(req.body)
    assert.equal(body.id, delivered.id)
    assert.equal(body.event, 'channel.test')
    assert.match(body.text, /ops-hook/)

    // Its history: one delivery, delivered on the first try.
    await row(made.id).getByTestId('channel-history-toggle').click()
    const history = row(made.id).getByTestId('channel-history')
    await history.locator('[data-testid=delivery][data-status=delivered]').waitFor()
    assert.equal(await history.getByTestId('delivery').count(), 1)
    assert.equal(await history.getByTestId('delivery-attempts').textContent(), '1 attempt')
    assert.equal(await history.getByTestId('delivery-kind').textContent(), 'channel test')
    await shot(page, 'channels-history')

    // The test is in the bell, already read, tagged as a channel test; it leads to /channels.
    await page.getByTestId('notif-bell').click()
    const entry = page.locator('[data-testid=notif-item][data-kind=channel_test]')
    await entry.waitFor()
    assert.equal(await entry.getAttribute('data-unread'), 'false')
    assert.equal(await entry.getByTestId('notif-kind').textContent(), 'channel test')
    assert.equal(await entry.getByTestId('notif-title').textContent(), 'Test: ops-hook')
    assert.equal(await page.getByTestId('notif-count').count(), 0, 'a test counts as nothing unread')
    await shot(page, 'channels-bell')
    await page.getByTestId('nav-schedules').click()
    await page.waitForURL(/\/schedules$/)
    await page.getByTestId('notif-bell').click()
    await entry.click()
    await page.waitForURL(/\/channels$/)
    await row(made.id).waitFor()

    // A schedule delivers to the channel, chosen in its form.
    await page.getByTestId('nav-schedules').click()
    await page.getByTestId('schedules-none').waitFor()
    await page.getByTestId('schedule-new').click()
    const sform = page.getByTestId('schedule-form')
    await sform.getByTestId('schedule-name').fill('Hooked brief')
    await sform.getByTestId('schedule-prompt').fill('@mock.reply Sent to the hook.')
    const option = sform.locator(`[data-testid=schedule-deliver-option][data-id="${made.id}"]`)
    assert.match(await sform.getByTestId('field-deliver').textContent(), /ops-hook/)
    await option.check()
    await shot(page, 'channels-schedule-form')
    await sform.getByTestId('schedule-save').click()
    await sform.waitFor({ state: 'detached' })
    const [schedule] = (await serverGet('/v1/schedules')).schedules
    assert.deepEqual(schedule.deliver, [made.id])
    const srow = page.locator(`[data-testid=schedule][data-id="${schedule.id}"]`)
    const chip = srow.getByTestId('schedule-deliver-channel')
    await chip.waitFor()
    assert.equal(await chip.getAttribute('data-id'), made.id)
    assert.match(await chip.textContent(), /ops-hook$/)
    // The edit form opens with it ticked.
    await srow.getByTestId('schedule-edit').click()
    assert.equal(await page.getByTestId('schedule-form').locator(`[data-testid=schedule-deliver-option][data-id="${made.id}"]`).isChecked(), true)
    await page.getByTestId('schedule-form').getByTestId('schedule-cancel').click()

    // Run now: the run's notification reaches the receiver, and the fire's history shows its delivery.
    await srow.getByTestId('schedule-run').click()
    await srow.getByTestId('schedule-ran').waitFor()
    const [, finished] = await receiver.waitFor(2, 60_000)
    assert.equal(finished.headers['weft-event'], 'schedule.finished')
    assertSigned(finished, secret)
    assert.equal(JSON.parse(finished.body).schedule_id, schedule.id)
    await srow.getByTestId('schedule-history-toggle').click()
    const fireDelivery = srow.getByTestId('fire-deliveries').locator('[data-testid=delivery][data-status=delivered]')
    await fireDelivery.waitFor({ timeout: 30_000 })
    assert.match(await fireDelivery.getByTestId('delivery-channel').textContent(), /ops-hook/)
    assert.equal(await fireDelivery.getByTestId('delivery-attempts').textContent(), '1 attempt')
    await shot(page, 'channels-fire-deliveries')

    // Back on /channels: used by one schedule; rename it.
    await page.getByTestId('nav-channels').click()
    await row(made.id).waitFor()
    assert.match(await row(made.id).getByTestId('channel-schedules').textContent(), /Used by 1 schedule/)
    await row(made.id).getByTestId('channel-rename').click()
    await row(made.id).getByTestId('channel-rename-input').fill('team-hook')
    await row(made.id).getByTestId('channel-rename-save').click()
    await page.waitForFunction(
      (id) => document.querySelector(`[data-testid=channel][data-id="${id}"] [data-testid=channel-name-text]`)?.textContent === 'team-hook',
      made.id,
    )
    assert.equal((await serverChannels())[0].name, 'team-hook')

    // Its edit form turns on the waits of the user's own conversations; only that is sent.
    assert.equal(await row(made.id).getByTestId('channel-waits-badge').count(), 0, 'no badge while off')
    await row(made.id).getByTestId('channel-edit').click()
    assert.match(
      await form().getByTestId('field-waits').textContent(),
      /Also send me questions, approvals and plans from all my conversations \(answer from your phone\)/,
    )
    assert.equal(await form().getByTestId('channel-waits').isChecked(), false, 'off until turned on')
    await form().getByTestId('channel-waits').check()
    const patched = page.waitForResponse((r) => r.url().endsWith(`/v1/channels/${made.id}`) && r.request().method() === 'PATCH')
    await shot(page, 'channels-waits-form')
    await form().getByTestId('channel-save').click()
    const patch = await patched
    assert.equal(patch.status(), 200)
    assert.deepEqual(JSON.parse(patch.request().postData()), { waits: true }, 'neither the name nor the URL sent again')
    await form().waitFor({ state: 'detached' })
    const withWaits = await serverGet(`/v1/channels/${made.id}`)
    assert.equal(withWaits.waits, true)
    assert.deepEqual(withWaits.target, { kind: 'webhook', url: hookUrl }, 'the target is as it was')
    assert.equal(withWaits.secret_hint, made.secret_hint, 'and so is its secret')
    const badge = row(made.id).getByTestId('channel-waits-badge')
    await badge.waitFor()
    assert.equal(await badge.textContent(), 'questions & approvals')
    // After a reload too; the edit form opens with it ticked.
    await page.reload()
    await badge.waitFor()
    await row(made.id).getByTestId('channel-edit').click()
    assert.equal(await form().getByTestId('channel-waits').isChecked(), true)
    await form().getByTestId('channel-cancel').click()
    await shot(page, 'channels-waits')

    // A new chat of the user's own: the agent asks, and the channel gets the question, signed, as run.waiting.
    const sent = receiver.requests.length
    await page.getByTestId('new-chat').click()
    await page.waitForURL(/\/chat$/)
    const composer = page.getByTestId('composer')
    await composer.fill(`colour? @mock.tool ask_user ${JSON.stringify({ question: 'Which colour?', options: ['red', 'blue'] })}`)
    await composer.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    const sessionId = decodeURIComponent(page.url().split('/').pop())
    const question = () => lastReply().getByTestId('question')
    await question().and(page.locator('[data-status=pending]')).waitFor({ timeout: 60_000 })
    await receiver.waitFor(sent + 1, 60_000)
    const waiting = receiver.requests[sent]
    assert.equal(waiting.method, 'POST')
    assert.equal(waiting.url, '/hook?team=ops')
    assert.equal(waiting.headers['weft-event'], 'run.waiting')
    assertSigned(waiting, secret)
    const waitBody = JSON.parse(waiting.body)
    assert.equal(waitBody.event, 'run.waiting')
    assert.equal(waiting.headers['weft-delivery'], waitBody.id)
    assert.match(waitBody.text, /Which colour\?/)
    assert.equal(waitBody.session_id, sessionId)
    assert.equal((await serverGet(`/v1/runs/${waitBody.run_id}`)).session_id, sessionId, 'the run waiting is this chat’s')
    assert.equal(waitBody.schedule_id, undefined, 'no schedule: the user’s own run')

    // The bell has it too, unread and tagged as a conversation waiting; it leads back to the chat.
    await page.getByTestId('nav-channels').click()
    await page.waitForURL(/\/channels$/)
    await page.getByTestId('notif-bell').click()
    const waitEntry = page.locator('[data-testid=notif-item][data-kind=run_waiting]')
    await waitEntry.waitFor()
    assert.equal(await waitEntry.getAttribute('data-unread'), 'true')
    assert.equal(await waitEntry.getByTestId('notif-kind').textContent(), 'conversation waiting')
    assert.match(await waitEntry.getByTestId('notif-body').textContent(), /Which colour\?/)
    await shot(page, 'channels-waits-bell')
    await waitEntry.click()
    await page.waitForURL((u) => u.pathname === `/chat/${encodeURIComponent(sessionId)}`)

    // Answered in the page: the run goes on and finishes with the answer.
    const card = question()
    await card.and(page.locator('[data-status=pending]')).waitFor({ timeout: 60_000 })
    assert.equal((await card.getByTestId('question-text').textContent()).trim(), 'Which colour?')
    const answered = page.waitForResponse((r) => /\/v1\/questions\/[^/]+$/.test(r.url()) && r.request().method() === 'POST')
    await card.getByTestId('question-option').filter({ hasText: 'blue' }).click()
    assert.equal((await answered).status(), 200)
    await page.waitForFunction(
      () => {
        const replies = document.querySelectorAll('[data-testid=reply]')
        return replies[replies.length - 1]?.getAttribute('data-phase') === 'done'
      },
      null,
      { timeout: 60_000 },
    )
    await card.and(page.locator('[data-status=answered]')).waitFor()
    assert.equal((await card.getByTestId('question-outcome').textContent()).trim(), `Answered by ${USER}: blue`)
    const said = (await lastReply().locator('[data-testid=reply-text]').allTextContents()).join(' ')
    assert.match(said, new RegExp(`The user \\(${USER}\\) answered: blue`))
    assert.deepEqual(
      receiver.requests.slice(sent).map((r) => r.headers['weft-event']),
      ['run.waiting'],
      'one POST for the one question; an own run that ends sends nothing',
    )

    // The channel's history lists it as a conversation waiting.
    await page.getByTestId('nav-channels').click()
    await row(made.id).getByTestId('channel-history-toggle').click()
    const waitDelivery = row(made.id).getByTestId('channel-history').getByTestId('delivery').filter({ hasText: 'conversation waiting' })
    await waitDelivery.waitFor()
    assert.equal(await waitDelivery.getAttribute('data-id'), waitBody.id)
    await row(made.id).getByTestId('channel-history-toggle').click()

    // At phone width nothing is wider than the screen.
    await page.setViewportSize({ width: 380, height: 800 })
    await assertFitsWidth(page, '/channels at 380px')
    await page.getByTestId('channel-new').click()
    await assertFitsWidth(page, 'the channel form at 380px')
    await form().getByTestId('channel-cancel').click()
    await page.setViewportSize({ width: 1280, height: 860 })

    // Delete (after the confirmation): gone from the page and the server, and from the schedule.
    await row(made.id).getByTestId('channel-delete').click()
    await row(made.id).waitFor({ state: 'detached' })
    await page.getByTestId('channels-none').waitFor()
    assert.deepEqual(await serverChannels(), [])
    assert.deepEqual((await serverGet(`/v1/schedules/${schedule.id}`)).deliver ?? [], [])
  })
})
