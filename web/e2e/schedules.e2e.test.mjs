// End-to-end: the /schedules page in the browser, against a real `weft up`. A user
// opens it from the navigation, makes a schedule with the cron helper (a preset,
// then the preview's words and its next five times, in the timezone the form
// starts with — theirs, the server's default until they set one —, then the
// browser's one click away, then another), sees a bad pattern refused next to the
// field with everything typed kept — by the preview and by a save —, makes a
// one-off a few seconds ahead that fires on its own, and follows its history row
// to the conversation with the agent's reply. "Run now" fires the cron schedule at
// once; then it is paused and resumed, renamed, edited into an interval, and
// deleted after the confirmation. Then they set their own timezone on /settings
// (a name that is not a zone refused under the field), see new schedules start in
// it and one made without touching it stored in it, and clear it again: the
// schedule keeps its zone. The server's default (America/New_York) and the
// browser's (Europe/Berlin) are both set apart from UTC so each is told from the
// others. Every check against the server reads the API as the signed-in user.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `sch_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 180_000 }
/** `schedules.default_timezone`: what a person without a timezone of their own gets. */
const SERVER_TZ = 'America/New_York'
/** This browser's own zone. */
const BROWSER_TZ = 'Europe/Berlin'

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

/** The API as this browser's user: what the server holds, not what the page shows. */
const serverGet = (path) =>
  page.evaluate(async (p) => {
    const res = await fetch(p)
    if (!res.ok) throw new Error(`GET ${p} → ${res.status}`)
    return res.json()
  }, path)
const serverSchedules = async () => (await serverGet('/v1/schedules')).schedules

const form = () => page.getByTestId('schedule-form')
const row = (id) => page.locator(`[data-testid=schedule][data-id="${id}"]`)
const fieldError = (name) => form().getByTestId(`field-${name}`).getByTestId('field-error')

/** Waits until the input `testid` holds `value` (a form fills some fields once the server answers). */
async function waitForValue(testid, value) {
  await page.waitForFunction(
    ([id, want]) => document.querySelector(`[data-testid="${id}"]`)?.value === want,
    [testid, value],
    { timeout: 10_000 },
  )
}

/** Waits until the form's preview shows `n` fire times; their texts. */
async function previewTimes(n) {
  await page.waitForFunction(
    (want) => document.querySelectorAll('[data-testid=schedule-preview-time]').length === want,
    n,
    { timeout: 10_000 },
  )
  return form().getByTestId('schedule-preview-time').allTextContents()
}

/** Waits for the preview's words to match `re`. */
async function previewSays(re) {
  await page.waitForFunction(
    (src) => new RegExp(src).test(document.querySelector('[data-testid=schedule-preview-describe]')?.textContent ?? ''),
    re.source,
    { timeout: 10_000 },
  )
}

/** Saves the form and returns the schedule the server made (the one it did not have before). */
async function saveNew() {
  const before = new Set((await serverSchedules()).map((s) => s.id))
  await form().getByTestId('schedule-save').click()
  await form().waitFor({ state: 'detached' })
  const made = (await serverSchedules()).filter((s) => !before.has(s.id))
  assert.equal(made.length, 1, 'one schedule was made')
  await row(made[0].id).waitFor()
  return made[0]
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

/** `YYYY-MM-DDTHH:MM:SS` in UTC, `ms` from now (what a datetime-local field holds). */
const utcWall = (ms) => new Date(Date.now() + ms).toISOString().slice(0, 19)

describe('the schedules page', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-schedules.log', env: { WEFT_SCHEDULES__DEFAULT_TIMEZONE: SERVER_TZ } })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    browser = await launchBrowser({ timezoneId: BROWSER_TZ })
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    page.on('dialog', (d) => d.accept())
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('a user makes, previews, fires, pauses, renames, edits and deletes schedules', T, async () => {
    await signIn()
    await page.getByTestId('nav-schedules').click()
    await page.waitForURL(/\/schedules$/)
    await page.getByTestId('schedules-none').waitFor()

    // The cron helper: a preset fills the pattern; the preview says it in words with the next five times.
    await page.getByTestId('schedule-new').click()
    assert.equal(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone), BROWSER_TZ)
    // The timezone starts as the person's: the server's default, as they have set none.
    await waitForValue('schedule-timezone', SERVER_TZ)
    // This browser's is one click away; then theirs is.
    const useBrowser = form().getByTestId('schedule-timezone-use-browser')
    assert.equal(await useBrowser.textContent(), `Use this browser’s (${BROWSER_TZ})`)
    await useBrowser.click()
    assert.equal(await form().getByTestId('schedule-timezone').inputValue(), BROWSER_TZ)
    await useBrowser.waitFor({ state: 'detached' })
    assert.equal(await form().getByTestId('schedule-timezone-use-yours').textContent(), `Use yours (${SERVER_TZ})`)
    await form().getByTestId('schedule-name').fill('Morning brief')
    await form().getByTestId('schedule-prompt').fill('@mock.reply Good morning from the schedule.')
    await form().getByTestId('cron-preset-daily-9').click()
    assert.equal(await form().getByTestId('schedule-cron').inputValue(), '0 9 * * *')
    assert.equal(await form().getByTestId('cron-preset-daily-9').getAttribute('aria-pressed'), 'true')
    await previewSays(/Europe\/Berlin/)
    const daily = await previewTimes(5)
    for (const t of daily) assert.match(t, /09:00/, `every day at 9:00: ${t}`)
    assert.equal(new Set(daily).size, 5, 'five different days')

    // Another timezone: the preview follows it.
    await form().getByTestId('schedule-timezone').fill('Asia/Shanghai')
    await previewSays(/Asia\/Shanghai/)
    assert.match(await form().getByTestId('schedule-preview').textContent(), /Asia\/Shanghai/)
    // A zone that does not exist: the server's reason under the timezone field.
    await form().getByTestId('schedule-timezone').fill('Mars/Olympus')
    await fieldError('timezone').waitFor()
    assert.match(await fieldError('timezone').textContent(), /not an IANA timezone/)
    await form().getByTestId('schedule-timezone').fill('Asia/Shanghai')
    await fieldError('timezone').waitFor({ state: 'detached' })

    // A bad pattern: the preview's 422 is shown next to the pattern, and what was typed stays.
    await form().getByTestId('schedule-cron').fill('0 9 * *')
    await fieldError('trigger').waitFor()
    assert.match(await fieldError('trigger').textContent(), /4 fields/)
    assert.equal(await form().getByTestId('schedule-preview').count(), 0, 'no preview of a bad pattern')
    // Saving it anyway: refused the same way, nothing made, nothing typed lost.
    const refused = page.waitForResponse((r) => r.url().endsWith('/v1/schedules') && r.request().method() === 'POST')
    await form().getByTestId('schedule-save').click()
    assert.equal((await refused).status(), 422)
    await fieldError('trigger').waitFor()
    assert.match(await fieldError('trigger').textContent(), /4 fields/)
    assert.equal(await form().getByTestId('schedule-cron').inputValue(), '0 9 * *')
    assert.equal(await form().getByTestId('schedule-name').inputValue(), 'Morning brief')
    assert.equal(await form().getByTestId('schedule-prompt').inputValue(), '@mock.reply Good morning from the schedule.')
    assert.equal((await serverSchedules()).length, 0, 'nothing was made')

    await form().getByTestId('cron-preset-weekdays-9').click()
    await fieldError('trigger').waitFor({ state: 'detached' })
    const weekdays = await previewTimes(5)
    for (const t of weekdays) assert.doesNotMatch(t, /Sat|Sun/, `weekdays only: ${t}`)
    await shot(page, 'schedules-form')
    const brief = await saveNew()
    assert.deepEqual(brief.trigger, { cron: '0 9 * * 1-5' })
    assert.equal(brief.timezone, 'Asia/Shanghai')
    assert.equal(brief.target, 'new_session')
    assert.equal(brief.name, 'Morning brief')
    assert.equal((await row(brief.id).getByTestId('schedule-describe').textContent()).trim(), brief.describe)
    assert.match(await row(brief.id).getByTestId('schedule-next').textContent(), /09:00 \(Asia\/Shanghai\)/)
    assert.equal(await row(brief.id).getByTestId('schedule-state').textContent(), 'on')

    // A one-off a few seconds ahead, in UTC: it fires on its own.
    await page.getByTestId('schedule-new').click()
    await form().getByTestId('schedule-prompt').fill('@mock.reply The one-off ran.')
    await form().getByTestId('schedule-kind-at').check()
    await form().getByTestId('schedule-timezone').fill('UTC')
    const at = utcWall(6_000)
    await form().getByTestId('schedule-at').fill(at)
    assert.equal((await previewTimes(1)).length, 1)
    await previewSays(/Once/)
    const once = await saveNew()
    assert.equal(Date.parse(once.trigger.at), Date.parse(`${at}Z`), 'the wall time was read in UTC')
    assert.equal(once.name, '@mock.reply The one-off ran.', 'named after the prompt')
    await row(once.id).getByTestId('schedule-history-toggle').click()
    await row(once.id).getByTestId('fires-none').waitFor()
    // The list is read again just after the fire is due; the history follows the newest fire.
    const fired = row(once.id).locator('[data-testid=fire][data-outcome=started]')
    await fired.waitFor({ timeout: 30_000 })
    assert.match(await fired.getByTestId('fire-lateness').textContent(), /on time|late/)
    assert.match(await row(once.id).getByTestId('schedule-next').textContent(), /No more fires/)
    assert.equal(await row(once.id).getByTestId('schedule-last').getByTestId('fire-outcome').getAttribute('data-outcome'), 'started')
    await shot(page, 'schedules-fired')
    await fired.getByTestId('fire-session').click()
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForReply('The one-off ran.')

    // Run now: a fire outside the trigger, with its conversation.
    await page.getByTestId('nav-schedules').click()
    await row(brief.id).getByTestId('schedule-run').click()
    const ran = row(brief.id).getByTestId('schedule-ran')
    await ran.waitFor()
    assert.equal(await ran.getByTestId('fire-outcome').getAttribute('data-outcome'), 'started')
    await row(brief.id).getByTestId('schedule-history-toggle').click()
    const manual = row(brief.id).getByTestId('fire').first()
    await manual.waitFor()
    assert.match(await manual.textContent(), /run now/)
    assert.equal((await serverGet(`/v1/schedules/${brief.id}/fires`)).fires.length, 1)
    await row(brief.id).getByTestId('schedule-last-session').click()
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForReply('Good morning from the schedule.')
    await page.getByTestId('nav-schedules').click()

    // Pause and resume.
    await row(brief.id).getByTestId('schedule-toggle').click()
    await page.waitForFunction((id) => document.querySelector(`[data-testid=schedule][data-id="${id}"]`)?.dataset.enabled === 'false', brief.id)
    assert.equal(await row(brief.id).getByTestId('schedule-state').textContent(), 'paused')
    assert.match(await row(brief.id).getByTestId('schedule-next').textContent(), /Paused/)
    let held = (await serverSchedules()).find((s) => s.id === brief.id)
    assert.equal(held.enabled, false)
    assert.equal(held.next_fire_at ?? null, null)
    await row(brief.id).getByTestId('schedule-toggle').click()
    await page.waitForFunction((id) => document.querySelector(`[data-testid=schedule][data-id="${id}"]`)?.dataset.enabled === 'true', brief.id)
    held = (await serverSchedules()).find((s) => s.id === brief.id)
    assert.equal(held.enabled, true)
    assert.ok(held.next_fire_at, 'a resumed schedule has its next fire')
    assert.match(await row(brief.id).getByTestId('schedule-next').textContent(), /Next:/)

    // Rename.
    await row(brief.id).getByTestId('schedule-rename').click()
    await row(brief.id).getByTestId('schedule-rename-input').fill('Weekday brief')
    await row(brief.id).getByTestId('schedule-rename-save').click()
    await page.waitForFunction(
      (id) => document.querySelector(`[data-testid=schedule][data-id="${id}"] [data-testid=schedule-name-text]`)?.textContent === 'Weekday brief',
      brief.id,
    )
    assert.equal((await serverSchedules()).find((s) => s.id === brief.id).name, 'Weekday brief')

    // Edit: the form opens with the schedule as it is; every 30 minutes now, runs queued behind a live one.
    await row(brief.id).getByTestId('schedule-edit').click()
    assert.equal(await form().getByTestId('schedule-cron').inputValue(), '0 9 * * 1-5')
    assert.equal(await form().getByTestId('schedule-timezone').inputValue(), 'Asia/Shanghai')
    await form().getByTestId('schedule-kind-every').check()
    await form().getByTestId('schedule-every').fill('30')
    await previewSays(/30 minutes/)
    await form().getByTestId('schedule-overlap').selectOption('queue')
    await form().getByTestId('schedule-save').click()
    await form().waitFor({ state: 'detached' })
    held = (await serverSchedules()).find((s) => s.id === brief.id)
    assert.deepEqual(held.trigger, { every_secs: 1800 })
    assert.equal(held.overlap, 'queue')
    assert.equal(held.name, 'Weekday brief', 'what the form did not change stays')
    assert.match(await row(brief.id).getByTestId('schedule-describe').textContent(), /30 minutes/)

    // At phone width nothing is wider than the screen.
    await page.setViewportSize({ width: 380, height: 800 })
    await assertFitsWidth(page, '/schedules at 380px')
    await page.getByTestId('schedule-new').click()
    await assertFitsWidth(page, 'the schedule form at 380px')
    await form().getByTestId('schedule-cancel').click()
    await page.setViewportSize({ width: 1280, height: 860 })

    // Delete (after the confirmation): gone from the page and the server; the other stays.
    await row(brief.id).getByTestId('schedule-delete').click()
    await row(brief.id).waitFor({ state: 'detached' })
    assert.deepEqual(
      (await serverSchedules()).map((s) => s.id),
      [once.id],
    )
  })

  test('your timezone, set on /settings, is where new schedules start; clearing it leaves them be', T, async () => {
    await page.getByTestId('nav-settings').click()
    await page.waitForURL(/\/settings$/)
    const section = page.getByTestId('timezone')
    const current = section.getByTestId('timezone-current')
    await current.waitFor()
    assert.equal(await current.textContent(), `Now: server default (${SERVER_TZ})`)
    assert.equal(await section.getByTestId('timezone-input').inputValue(), '')
    assert.equal(await section.getByTestId('timezone-clear').count(), 0, 'nothing of yours to clear')

    // This browser's zone fills the field in one click (nothing is saved until Save).
    const useBrowser = section.getByTestId('timezone-use-browser')
    assert.equal(await useBrowser.textContent(), `Use this browser’s (${BROWSER_TZ})`)
    await useBrowser.click()
    assert.equal(await section.getByTestId('timezone-input').inputValue(), BROWSER_TZ)
    assert.deepEqual(await serverGet('/v1/me/timezone'), { timezone: null, effective: SERVER_TZ })

    // A name that is not a zone: the server's reason under the field, what was typed kept, nothing changed.
    await section.getByTestId('timezone-input').fill('Mars/Olympus')
    const refused = page.waitForResponse((r) => r.url().endsWith('/v1/me/timezone') && r.request().method() === 'PUT')
    await section.getByTestId('timezone-save').click()
    assert.equal((await refused).status(), 422)
    const error = section.getByTestId('timezone-error')
    await error.waitFor()
    assert.match(await error.textContent(), /^"Mars\/Olympus" is not an IANA timezone/)
    assert.equal(await section.getByTestId('timezone-input').inputValue(), 'Mars/Olympus')
    assert.equal(await current.textContent(), `Now: server default (${SERVER_TZ})`)
    assert.deepEqual(await serverGet('/v1/me/timezone'), { timezone: null, effective: SERVER_TZ })
    await shot(page, 'schedules-timezone-refused')

    // A real one: saved, shown, and there after a reload.
    await section.getByTestId('timezone-input').fill('Asia/Shanghai')
    await error.waitFor({ state: 'detached' })
    await section.getByTestId('timezone-save').click()
    await section.getByTestId('timezone-saved').waitFor()
    assert.equal(await current.textContent(), 'Now: Asia/Shanghai')
    assert.deepEqual(await serverGet('/v1/me/timezone'), { timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' })
    await page.reload()
    await current.waitFor()
    assert.equal(await current.textContent(), 'Now: Asia/Shanghai')
    assert.equal(await section.getByTestId('timezone-input').inputValue(), 'Asia/Shanghai')

    // A new schedule starts in it, this browser's one click away; made without touching it, it is stored in it.
    await page.getByTestId('nav-schedules').click()
    await page.waitForURL(/\/schedules$/)
    await page.getByTestId('schedule-new').click()
    await waitForValue('schedule-timezone', 'Asia/Shanghai')
    assert.equal(await form().getByTestId('schedule-timezone-use-browser').textContent(), `Use this browser’s (${BROWSER_TZ})`)
    assert.equal(await form().getByTestId('schedule-timezone-use-yours').count(), 0, 'the field holds yours already')
    await form().getByTestId('schedule-prompt').fill('@mock.reply Evening summary.')
    await form().getByTestId('cron-preset-daily-9').click()
    await previewSays(/Asia\/Shanghai/)
    await shot(page, 'schedules-timezone-yours')
    const evening = await saveNew()
    assert.deepEqual(evening.trigger, { cron: '0 9 * * *' })
    assert.equal(evening.timezone, 'Asia/Shanghai')
    assert.match(await row(evening.id).getByTestId('schedule-next').textContent(), /09:00 \(Asia\/Shanghai\)/)

    // Cleared: back to the server's default for new schedules; the one made keeps its zone.
    await page.getByTestId('nav-settings').click()
    await current.waitFor()
    await section.getByTestId('timezone-clear').click()
    await page.waitForFunction(
      (want) => document.querySelector('[data-testid=timezone-current]')?.textContent === want,
      `Now: server default (${SERVER_TZ})`,
      { timeout: 10_000 },
    )
    assert.equal(await section.getByTestId('timezone-input').inputValue(), '')
    assert.deepEqual(await serverGet('/v1/me/timezone'), { timezone: null, effective: SERVER_TZ })
    assert.equal((await serverSchedules()).find((s) => s.id === evening.id).timezone, 'Asia/Shanghai')
    await page.getByTestId('nav-schedules').click()
    await page.getByTestId('schedule-new').click()
    await waitForValue('schedule-timezone', SERVER_TZ)
    await form().getByTestId('schedule-cancel').click()
  })
})
