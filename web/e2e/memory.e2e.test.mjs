// End-to-end: the /memory page in the browser, against a real `weft up`. A user
// adds a memory (as Markdown), sees a secret refused with the server's message and
// their text kept, edits one, pins one (it moves first), searches, switches tabs
// (also with the keyboard, and from the URL after a reload), deletes one, exports
// the JSON file, turns their memory off and on, and forgets everything after typing
// the phrase. A pinned memory is recalled into a chat reply, whose "Used 1
// memories" leads back to the page, where the memory now shows when it was last
// used. A conversation teaches the background extraction (at once here, scripted
// with `@mock.reply`) a profile: it shows first among the facts with its badge, and
// the chat's system-prompt preview lists it among the memories at the prompt's end.
// At phone width nothing is wider than the screen. Every check against the server
// reads `GET /v1/me/memories` as the signed-in user.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `mem_${crypto.randomBytes(3).toString('hex')}`
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

/** The API as this browser's user: what the server holds, not what the page shows. */
const serverList = (q = '') =>
  page.evaluate(async (query) => {
    const res = await fetch(`/v1/me/memories${query ? `?q=${encodeURIComponent(query)}` : ''}`)
    if (!res.ok) throw new Error(`GET /v1/me/memories → ${res.status}`)
    return res.json()
  }, q)

const addByApi = (body) =>
  page.evaluate(async (b) => {
    const res = await fetch('/v1/me/memories', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Weft-Csrf': '1' },
      body: JSON.stringify(b),
    })
    if (res.status !== 201) throw new Error(`POST /v1/me/memories → ${res.status}`)
    return res.json()
  }, body)

const card = (id) => page.locator(`[data-testid=memory][data-id="${id}"]`)
const tab = (kind) => page.getByTestId(`memory-tab-${kind}`)
const count = async (kind) => Number((await tab(kind).getByTestId('memory-count').textContent()).trim())

/** Waits until the page shows exactly these memories, in this order. */
async function waitForShown(ids) {
  await page.waitForFunction(
    (want) => JSON.stringify([...document.querySelectorAll('[data-testid=memory]')].map((e) => e.dataset.id)) === want,
    JSON.stringify(ids),
    { timeout: 10_000 },
  )
}

/** Types into an editor and saves; the memory the server kept (the newest of the tab's kind). */
async function addMemory(text, kind) {
  const before = new Set((await serverList()).memories.map((m) => m.id))
  const form = page.getByTestId('memory-add')
  await form.getByTestId('memory-editor-text').fill(text)
  await form.getByTestId('memory-editor-save').click()
  await page.waitForFunction(() => document.querySelector('[data-testid=memory-add] textarea')?.value === '')
  const added = (await serverList()).memories.filter((m) => !before.has(m.id))
  assert.equal(added.length, 1, 'one memory was added')
  assert.equal(added[0].kind, kind)
  await card(added[0].id).waitFor()
  return added[0]
}

describe('the memory page', () => {
  before(async () => {
    // The extraction runs as soon as a turn ends, not 30 s later.
    weft = await startWeft(bin, { log: 'weft-memory.log', env: { WEFT_MEMORY__EXTRACT_AFTER_SECS: '0' } })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
    page.on('dialog', (d) => d.accept())
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('a user adds, refuses a secret, edits, pins, searches, switches tabs and deletes', T, async () => {
    await signIn()
    await page.getByTestId('nav-memory').click()
    await page.waitForURL(/\/memory$/)
    await page.getByTestId('memory-none').waitFor()
    assert.equal(await page.getByTestId('memory-switch').isChecked(), true, 'memory is on by default')
    for (const k of ['fact', 'episode', 'procedure']) assert.equal(await count(k), 0)
    assert.equal(await tab('fact').getAttribute('aria-selected'), 'true', 'facts is the first tab')

    // Added on the facts tab: a fact, shown as Markdown, by hand, not used yet.
    const tea = await addMemory('I drink **green tea** every morning', 'fact')
    assert.equal(await card(tea.id).locator('[data-testid=memory-text] strong').textContent(), 'green tea')
    assert.match(await card(tea.id).getByTestId('memory-source').textContent(), /added by hand/)
    assert.match(await card(tea.id).getByTestId('memory-last-used').textContent(), /not used yet/)
    assert.equal(await count('fact'), 1)

    // A secret is refused with the server's message next to the editor; the text stays.
    const add = page.getByTestId('memory-add')
    const secret = 'My password is hunter2-staging'
    await add.getByTestId('memory-editor-text').fill(secret)
    await add.getByTestId('memory-editor-save').click()
    const refusal = add.getByTestId('memory-editor-error')
    await refusal.waitFor()
    assert.match(await refusal.textContent(), /secret/)
    assert.equal(await add.getByTestId('memory-editor-text').inputValue(), secret)
    assert.equal((await serverList()).memories.length, 1, 'the secret was not kept')

    // Too long: the count turns red and the button waits; nothing is sent.
    await add.getByTestId('memory-editor-text').fill('x'.repeat(2001))
    assert.match(await add.getByTestId('memory-editor-count').getAttribute('class'), /danger-text/)
    assert.equal(await add.getByTestId('memory-editor-save').isDisabled(), true)
    assert.match(await add.getByTestId('memory-editor-error').textContent(), /2,000/)

    const walk = await addMemory('Walks the dog at 7 pm', 'fact')
    await waitForShown([walk.id, tea.id])

    // Edited in place: the new text shows and is saved; the card says it changed.
    await card(tea.id).getByTestId('memory-edit').click()
    const editor = card(tea.id).getByTestId('memory-edit-form')
    await editor.getByTestId('memory-editor-text').fill('I drink **oolong tea** every morning')
    await editor.getByTestId('memory-editor-save').click()
    await editor.waitFor({ state: 'detached' })
    assert.equal(await card(tea.id).locator('[data-testid=memory-text] strong').textContent(), 'oolong tea')
    assert.match(await card(tea.id).getByTestId('memory-meta').textContent(), /changed/)
    let held = (await serverList()).memories.find((m) => m.id === tea.id)
    assert.equal(held.text, 'I drink **oolong tea** every morning')

    // An edit the server refuses keeps the editor open with the text; Cancel leaves the memory as it was.
    await card(tea.id).getByTestId('memory-edit').click()
    await editor.getByTestId('memory-editor-text').fill('token: ghp_0123456789abcdefghijklmnopqrstuvwxyz')
    await editor.getByTestId('memory-editor-save').click()
    await editor.getByTestId('memory-editor-error').waitFor()
    assert.match(await editor.getByTestId('memory-editor-text').inputValue(), /ghp_/)
    await editor.getByTestId('memory-editor-cancel').click()
    await editor.waitFor({ state: 'detached' })
    assert.match(await card(tea.id).getByTestId('memory-text').textContent(), /oolong tea/)

    // Pinned: the badge shows, it moves first, and the server has it pinned.
    await waitForShown([tea.id, walk.id]) // the edit made it the most recently changed
    await card(walk.id).getByTestId('memory-pin').click()
    await card(walk.id).getByTestId('memory-pinned').waitFor()
    assert.equal(await card(walk.id).getByTestId('memory-pin').getAttribute('aria-pressed'), 'true')
    await waitForShown([walk.id, tea.id])
    held = (await serverList()).memories.find((m) => m.id === walk.id)
    assert.equal(held.pinned, true)

    // Another tab: its own kind, its own list; the URL names it.
    await tab('procedure').click()
    await page.waitForURL(/\?kind=procedure$/)
    await page.getByTestId('memory-none').waitFor()
    const review = await addMemory('When reviewing code, list the risks first', 'procedure')
    await waitForShown([review.id])
    assert.equal(await count('procedure'), 1)
    assert.equal(await count('fact'), 2)
    // The arrow keys move between tabs.
    await tab('procedure').focus()
    await page.keyboard.press('ArrowLeft')
    await page.waitForURL(/\?kind=episode$/)
    // The URL changes before React renders the tab it names: wait for the render, not the URL.
    await page.locator('[data-testid=memory-tab-episode][aria-selected=true]').waitFor()
    await page.getByTestId('memory-none').waitFor()
    // An edit may change the kind: the memory moves to that tab.
    await tab('procedure').click()
    await card(review.id).getByTestId('memory-edit').click()
    await card(review.id).getByTestId('memory-edit-kind').selectOption('episode')
    await card(review.id).getByTestId('memory-editor-save').click()
    await card(review.id).waitFor({ state: 'detached' })
    assert.equal(await count('procedure'), 0)
    assert.equal(await count('episode'), 1)
    assert.equal((await serverList()).memories.find((m) => m.id === review.id).kind, 'episode')
    // A reload comes back to the tab of the URL.
    await page.goto(`${weft.baseUrl}/memory?kind=episode`)
    await waitForShown([review.id])
    assert.equal(await tab('episode').getAttribute('aria-selected'), 'true')

    // Search: only what shares words with the query, with the counts of what matched.
    await tab('fact').click()
    await waitForShown([walk.id, tea.id])
    await page.getByTestId('memory-search').fill('dog')
    const matches = (await serverList('dog')).memories.map((m) => m.id)
    assert.deepEqual(matches, [walk.id], 'the server finds the dog')
    await waitForShown(matches)
    assert.equal(await count('fact'), 1)
    assert.equal(await count('episode'), 0)
    await page.getByTestId('memory-search').fill('zebra unicorn')
    await page.getByTestId('memory-none').waitFor()
    assert.match(await page.getByTestId('memory-none').textContent(), /zebra unicorn/)
    await page.getByTestId('memory-search').fill('')
    await waitForShown([walk.id, tea.id])
    assert.equal(await count('episode'), 1)
    await shot(page, 'memory')

    // Deleted (after the confirm, accepted): gone from the page and the server.
    await card(tea.id).getByTestId('memory-delete').click()
    await waitForShown([walk.id])
    assert.deepEqual(
      (await serverList()).memories.map((m) => m.id).sort(),
      [walk.id, review.id].sort(),
    )
  })

  test('the export is a JSON file of everything the server holds', T, async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('memory-export').click()])
    assert.match(download.suggestedFilename(), /^weft-memories-\d{4}-\d{2}-\d{2}\.json$/)
    const file = JSON.parse(fs.readFileSync(await download.path(), 'utf8'))
    const held = await serverList()
    assert.deepEqual(file.memories, held.memories)
    assert.equal(file.enabled, true)
  })

  test('the switch turns memory off and on, and stays so after a reload', T, async () => {
    const sw = page.getByTestId('memory-switch')
    const confirmed = (on) => page.locator(`[data-testid=memory-switch-state][data-enabled="${on}"]`).waitFor()
    await sw.uncheck()
    await confirmed(false)
    assert.equal((await serverList()).enabled, false)
    await page.reload()
    await confirmed(false)
    assert.equal(await sw.isChecked(), false)
    await sw.check()
    await confirmed(true)
    assert.equal((await serverList()).enabled, true)
  })

  test('a reply that used a memory links to the page, which shows when it was used', T, async () => {
    const pinned = (await serverList()).memories.find((m) => m.pinned)
    assert.ok(pinned, 'a pinned memory from the first test')
    await page.goto(`${weft.baseUrl}/chat`)
    const box = page.getByTestId('composer')
    await box.fill('@mock.reply hello')
    await box.press('Enter')
    const used = page.getByTestId('memories-used')
    await used.waitFor({ timeout: 60_000 })
    assert.match(await used.locator('summary').textContent(), /Used \d+ memories/)
    await used.locator('summary').click()
    assert.match(await used.textContent(), /Walks the dog/)
    await used.getByTestId('memories-manage').click()
    await page.waitForURL(/\/memory$/)
    await card(pinned.id).waitFor()
    const lastUsed = card(pinned.id).getByTestId('memory-last-used')
    assert.doesNotMatch(await lastUsed.textContent(), /not used yet/)
    assert.ok(await lastUsed.locator('time').count(), 'the moment it was used')
  })

  test('a conversation teaches a profile: first among the facts, badged, and in the prompt preview', T, async () => {
    // The extraction's input ends with this message, so the mock model answers it the JSON.
    const learn =
      "I'm on the payments team @mock.reply " +
      JSON.stringify({ add: [], update: [], forget: [], profile: '- works on the payments team\n- wants short answers' })
    await page.goto(`${weft.baseUrl}/chat`)
    const box = page.getByTestId('composer')
    await box.fill(learn)
    await box.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    const chat = page.url()
    let profile
    for (const t0 = Date.now(); !profile; await new Promise((r) => setTimeout(r, 250))) {
      profile = (await serverList()).memories.find((m) => m.profile)
      assert.ok(profile || Date.now() - t0 < 30_000, 'the extraction keeps a profile within 30 s')
    }
    assert.equal(profile.kind, 'fact')
    assert.equal(profile.pinned, true)
    assert.match(profile.text, /payments team/)

    // Pinned after the profile, a memory comes before it in the server's order; the page keeps the profile first.
    const sailing = await addByApi({ kind: 'fact', text: 'Sails on weekends', pinned: true })
    const served = (await serverList()).memories.filter((m) => m.kind === 'fact').map((m) => m.id)
    assert.equal(served[0], sailing.id, JSON.stringify(served))
    await page.goto(`${weft.baseUrl}/memory`)
    await waitForShown([profile.id, ...served.filter((id) => id !== profile.id)])
    const badge = card(profile.id).getByTestId('memory-profile')
    assert.equal((await badge.textContent()).trim(), 'Profile')
    assert.equal(await card(profile.id).getAttribute('data-pinned'), 'true')
    assert.equal(await page.getByTestId('memory-profile').count(), 1, 'one memory is the profile')
    await shot(page, 'memory-profile')

    // The person may edit it like any other: it stays the profile, and first.
    await card(profile.id).getByTestId('memory-edit').click()
    const editor = card(profile.id).getByTestId('memory-edit-form')
    await editor.getByTestId('memory-editor-text').fill('- leads the payments team\n- wants short answers')
    await editor.getByTestId('memory-editor-save').click()
    await editor.waitFor({ state: 'detached' })
    await card(profile.id).getByTestId('memory-profile').waitFor()
    assert.equal((await page.getByTestId('memory').first().getAttribute('data-id')), profile.id)
    const held = (await serverList()).memories.find((m) => m.id === profile.id)
    assert.equal(held.profile, true)
    assert.match(held.text, /leads the payments team/)

    // The chat's system-prompt preview lists the memories at the prompt's end: the pinned ones.
    await page.goto(chat)
    await page.getByTestId('system-prompt-toggle').click()
    const listed = page.getByTestId('system-prompt-memories')
    await listed.waitFor()
    const pinnedNow = (await serverList()).memories.filter((m) => m.pinned).length
    assert.equal(await listed.getByTestId('system-prompt-memory').count(), pinnedNow)
    assert.match(await listed.textContent(), /Memories in this prompt \(\d+\)/)
    assert.match(await listed.textContent(), /leads the payments team/)
    assert.match(await listed.textContent(), /Sails on weekends/)
    assert.match(await page.getByTestId('system-prompt-text').textContent(), /leads the payments team/)
    await shot(page, 'memory-prompt-preview')
    await page.getByTestId('system-prompt-toggle').click()
  })

  test('at phone width the page fits the screen, editing and forgetting included', T, async () => {
    await addByApi({
      kind: 'fact',
      text: 'A long one: https://example.com/a/very/long/path/that/does/not/break/anywhere/at/all/unless/told/to/do/so/0123456789 and `inline code` and\n\n```\nconst aVeryLongLineOfCode = "that would push the page wider than a phone if it were not scrolled in its own box"\n```',
    })
    await page.setViewportSize({ width: 375, height: 812 })
    try {
      await page.goto(`${weft.baseUrl}/memory`)
      await page.getByTestId('memory').first().waitFor()
      await assertFitsWidth(page, '/memory')
      await shot(page, 'memory-phone', { fullPage: true })
      await page.getByTestId('memory').first().getByTestId('memory-edit').click()
      await page.getByTestId('memory-edit-form').waitFor()
      await page.getByTestId('memory-forget-open').click()
      await page.getByTestId('memory-forget-input').waitFor()
      await assertFitsWidth(page, '/memory, editing and forgetting')
      await shot(page, 'memory-phone-forms', { fullPage: true })
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 })
    }
  })

  test('forget everything needs the phrase typed, then forgets every kind', T, async () => {
    await page.goto(`${weft.baseUrl}/memory`)
    await page.getByTestId('memory').first().waitFor()
    const held = (await serverList()).memories.length
    assert.ok(held >= 2, 'memories of more than one kind to forget')
    await page.getByTestId('memory-forget-open').click()
    const confirm = page.getByTestId('memory-forget-confirm')
    assert.equal(await confirm.isDisabled(), true)
    await page.getByTestId('memory-forget-input').fill('forget')
    assert.equal(await confirm.isDisabled(), true, 'half the phrase is not enough')
    await page.getByTestId('memory-forget-input').fill('Forget Everything')
    await confirm.click()
    const done = page.getByTestId('memory-forgotten')
    await done.waitFor()
    assert.equal((await done.textContent()).trim(), `Forgot ${held} memories.`)
    await page.getByTestId('memory-none').waitFor()
    for (const k of ['fact', 'episode', 'procedure']) assert.equal(await count(k), 0)
    assert.deepEqual((await serverList()).memories, [])
  })
})
