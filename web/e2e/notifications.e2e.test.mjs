// End-to-end: the notification bell, against a real `weft up`. A user turns on
// browser notifications in the bell's panel; a one-off schedule a few seconds
// ahead runs on its own, and the bell's next poll (the page's clock moved on 30 s)
// counts it and the browser shows it. The panel, opened from the keyboard, lists
// it; following it opens the run's conversation with the reply and the count goes.
// Two more runs come while the page looks away: coming back to the window counts
// them, and "Mark all read" clears them. On a phone-wide screen the bell is in the
// top bar and its panel fits the screen; a page loaded with one already unread
// counts it without a browser notification, and shows the next. Every check against the server reads
// the API as the signed-in user.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `bell_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 180_000 }

let weft
let browser
let page

async function signIn() {
  await browser.context.clearCookies()
  await page.goto(`${weft.baseUrl}/login`)
  await page.locator('input[name=username]').fill(USER)
  await page.locator('input[name=password]').fill(PASSWORD)
  await page.locator('button[type=submit]').click()
  await page.waitForURL(/\/chat$/)
}

/** The API as this browser's user. */
const serverCall = (method, path, body) =>
  page.evaluate(
    async ([m, p, b]) => {
      const res = await fetch(p, {
        method: m,
        headers: m === 'GET' ? {} : { 'Content-Type': 'application/json', 'X-Weft-Csrf': '1' },
        body: b === undefined ? undefined : JSON.stringify(b),
      })
      if (!res.ok) throw new Error(`${m} ${p} → ${res.status}: ${await res.text()}`)
      return res.status === 204 ? null : res.json()
    },
    [method, path, body],
  )
const serverNotifications = () => serverCall('GET', '/v1/me/notifications')

/** A one-off schedule, due in 3 s, that replies `reply`. */
const scheduleSoon = (name, reply) =>
  serverCall('POST', '/v1/schedules', {
    name,
    prompt: `@mock.reply ${reply}`,
    trigger: { at: new Date(Date.now() + 3_000).toISOString().replace(/\.\d+Z$/, 'Z') },
    timezone: 'UTC',
  })

/** Waits until the server holds `n` unread notifications (the scheduled runs have ended). */
async function waitForUnread(n) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const r = await serverNotifications()
    if (r.unread === n) return r
    if (Date.now() > deadline) throw new Error(`${r.unread} unread after 60 s, not ${n}`)
    await delay(250)
  }
}

const bell = () => page.getByTestId('notif-bell')
const count = () => page.getByTestId('notif-count')
const panel = () => page.getByTestId('notif-panel')
const entry = (id) => panel().locator(`[data-testid=notif-item][data-id="${id}"]`)
/** What the browser was asked to show (see the init script). */
const shown = () => page.evaluate(() => window.__shown)

async function waitForCount(text) {
  await page.waitForFunction(
    (want) => (document.querySelector('[data-testid=notif-count]')?.textContent ?? '') === want,
    text,
    { timeout: 15_000 },
  )
}

/** Waits for the newest reply of the chat shown to be done and read exactly `text`. */
async function waitForReply(text) {
  await page.waitForFunction(
    (want) => {
      const all = document.querySelectorAll('[data-testid=reply]')
      const last = all[all.length - 1]
      if (!last || last.getAttribute('data-phase') !== 'done') return false
      return [...last.querySelectorAll('[data-testid=reply-text]')].map((e) => e.textContent.trim()).join('\n\n') === want
    },
    text,
    { timeout: 60_000 },
  )
}

describe('the notification bell', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-notifications.log' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    browser = await launchBrowser()
    await browser.context.grantPermissions(['notifications'], { origin: weft.baseUrl })
    // Headless Chromium shows nothing on screen: record what the page asks the browser to show.
    await browser.context.addInitScript(() => {
      const Real = window.Notification
      window.__shown = []
      if (!Real) return
      window.Notification = class extends Real {
        constructor(title, opts) {
          window.__shown.push({ title, body: opts?.body ?? null })
          super(title, opts)
        }
      }
    })
    // The page's timers and clock, moved on by the test: the 30-s poll without waiting 30 s.
    await browser.context.clock.install()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('the bell counts scheduled runs, lists them, opens their conversation and marks them read', T, async () => {
    await signIn()
    await bell().waitFor()
    assert.equal(await count().count(), 0, 'no count at 0')
    assert.equal(await bell().getAttribute('aria-label'), 'Notifications')

    // The panel: empty; browser notifications switched on; Escape closes it and focus returns to the bell.
    await bell().click()
    await panel().getByTestId('notif-none').waitFor()
    assert.equal(await bell().getAttribute('aria-expanded'), 'true')
    await panel().getByTestId('notif-browser').check()
    await page.waitForFunction(() => localStorage.getItem('weft.notify') === '1')
    assert.equal(await panel().getByTestId('notif-browser').isChecked(), true)
    await page.keyboard.press('Escape')
    await panel().waitFor({ state: 'detached' })
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'notif-bell')

    // A scheduled run ends; the bell's next poll counts it, and the browser shows it.
    const a = await scheduleSoon('Bell A', 'The bell rang.')
    const [first] = (await waitForUnread(1)).notifications
    assert.equal(first.schedule_id, a.id)
    assert.equal(await count().count(), 0, 'not counted before the next poll')
    await page.clock.fastForward(30_000)
    await waitForCount('1')
    assert.equal(await bell().getAttribute('aria-label'), 'Notifications, 1 unread')
    assert.deepEqual(await shown(), [{ title: 'Bell A', body: first.body }])
    assert.match(first.body, /^succeeded: The bell rang/)

    // Opened from the keyboard: the entry with its title, body, time and unread dot.
    await bell().focus()
    await page.keyboard.press('Enter')
    const item = entry(first.id)
    await item.waitFor()
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'notif-panel', 'focus moves into the panel')
    assert.equal(await item.getByTestId('notif-title').textContent(), 'Bell A')
    assert.equal(await item.getByTestId('notif-body').textContent(), first.body)
    assert.equal(await item.getAttribute('data-unread'), 'true')
    assert.match(await item.locator('time').textContent(), /now|minute/)
    await shot(page, 'notifications-panel')

    // Following it: the run's conversation with its reply, and the count goes.
    await item.click()
    await page.waitForURL(new RegExp(`/chat/${first.session_id}$`))
    await waitForReply('The bell rang.')
    await count().waitFor({ state: 'detached' })
    assert.equal(await panel().count(), 0, 'the panel closed')
    assert.equal((await serverNotifications()).unread, 0)

    // Two more end while the page looks away; coming back to the window counts them.
    await scheduleSoon('Bell B', 'Second.')
    await scheduleSoon('Bell C', 'Third.')
    const both = await waitForUnread(2)
    await page.evaluate(() => window.dispatchEvent(new Event('focus')))
    await waitForCount('2')
    assert.deepEqual(
      (await shown()).map((s) => s.title).sort(),
      ['Bell A', 'Bell B', 'Bell C'],
      'one browser notification each, none twice',
    )

    // "Mark all read": the dots and the count go, on the server too.
    await bell().click()
    for (const n of both.notifications) await entry(n.id).waitFor()
    assert.equal(await panel().locator('[data-testid=notif-item]').count(), 3)
    assert.equal(await panel().locator('[data-testid=notif-item][data-unread=true]').count(), 2)
    await panel().getByTestId('notif-mark-all').click()
    await count().waitFor({ state: 'detached' })
    await page.waitForFunction(() => !document.querySelector('[data-testid=notif-item][data-unread=true]'))
    assert.equal(await panel().getByTestId('notif-mark-all').isDisabled(), true)
    assert.equal((await serverNotifications()).unread, 0)
    await page.keyboard.press('Escape')

    // Phone width: the bell is in the top bar; its panel fits the screen.
    await page.setViewportSize({ width: 380, height: 800 })
    await bell().click()
    await panel().waitFor()
    const box = await panel().boundingBox()
    assert.ok(box.x >= 0 && box.x + box.width <= 380, `the panel fits: ${JSON.stringify(box)}`)
    await shot(page, 'notifications-narrow')
    await page.keyboard.press('Escape')
    await panel().waitFor({ state: 'detached' })
    await page.setViewportSize({ width: 1280, height: 860 })

    // One unread before the page loads: counted, but never shown by the browser; the next one is.
    await scheduleSoon('Bell D', 'Fourth.')
    await waitForUnread(1)
    await page.reload()
    await waitForCount('1')
    await scheduleSoon('Bell E', 'Fifth.')
    const e = (await waitForUnread(2)).notifications.find((n) => n.title === 'Bell E')
    await page.clock.fastForward(30_000)
    await waitForCount('2')
    assert.deepEqual(await shown(), [{ title: 'Bell E', body: e.body }], 'only what came after the page loaded')
  })
})
