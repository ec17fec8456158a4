// End-to-end: the /knowledge page and the agent editor's knowledge fields, in the
// browser, against a real `weft up`. An admin makes a shared base on the page,
// picks five files with the file input (one hidden, skipped; one binary the server
// refuses, whose message shows while the others go on) and drops one more; each
// row follows its document to `ready`, and a search finds the passage. The admin
// then gives an agent the base with knowledge_mode `auto` in the agent editor, and
// `GET /v1/agents` shows both saved, also after another save. A normal user sees
// the shared base but may not delete it or add to it, and makes a private base of
// their own (no "shared" choice), and adds the shared base to a conversation's own
// bases from the chat header. At phone width nothing is wider than the screen.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `kb_${crypto.randomBytes(3).toString('hex')}`
const ADMIN = `${USER}_admin`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const BASE = 'Team handbook'
const T = { timeout: 180_000 }

const FILES = [
  { name: 'leave.md', mimeType: 'text/markdown', buffer: Buffer.from('# Leave\n\nEveryone gets 25 vacation days a year.\n') },
  { name: 'setup.txt', mimeType: 'text/plain', buffer: Buffer.from('Laptops are set up by the help desk on the first day.\n') },
  { name: 'blob.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 1, 2, 3, 0, 255, 254, 0, 7, 0, 0, 9, 0, 200, 0, 1]) },
  { name: '.secret.md', mimeType: 'text/markdown', buffer: Buffer.from('# Hidden\n\nThis must never be uploaded.\n') },
  { name: 'faq.md', mimeType: 'text/markdown', buffer: Buffer.from('# FAQ\n\n## Parking\n\nThe garage opens at seven.\n') },
]

let weft
let browser
let page
let baseUrlOfKb

async function signIn(username) {
  await browser.context.clearCookies()
  await page.goto(`${weft.baseUrl}/login`)
  await page.locator('input[name=username]').fill(username)
  await page.locator('input[name=password]').fill(PASSWORD)
  await page.locator('button[type=submit]').click()
  await page.waitForURL(/\/chat$/)
}

const uploadRow = (path) => page.locator(`[data-testid=kb-upload-row][data-path="${path}"]`)
const docRow = (name) => page.locator(`[data-testid=kb-doc][data-name="${name}"]`)

async function waitForPhase(path, phase) {
  await page.waitForFunction(
    ([p, want]) => document.querySelector(`[data-testid=kb-upload-row][data-path="${p}"]`)?.getAttribute('data-phase') === want,
    [path, phase],
    { timeout: 90_000 },
  )
}

describe('knowledge bases in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-knowledge.log' })
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

  test('an admin makes a shared base, uploads files (one refused, one hidden), sees them ready and searches', T, async () => {
    await signIn(ADMIN)
    await page.getByTestId('nav-knowledge').click()
    await page.waitForURL(/\/knowledge$/)
    const create = page.getByTestId('kb-create')
    await create.getByTestId('kb-name').fill(BASE)
    await create.getByTestId('kb-description').fill('How we work')
    await create.getByTestId('kb-visibility-select').selectOption('shared')
    await create.getByTestId('kb-create-submit').click()
    const row = page.locator(`[data-testid=kb-row][data-name="${BASE}"]`)
    await row.waitFor()
    assert.equal((await row.getByTestId('kb-visibility').textContent()).trim(), 'shared')
    assert.match(await row.textContent(), /How we work/)
    assert.match(await row.textContent(), /0 documents/)

    // The same name again is the server's 409, shown.
    await create.getByTestId('kb-name').fill(BASE)
    await create.getByTestId('kb-create-submit').click()
    await create.locator('[role=alert]').waitFor()

    await row.getByTestId('kb-open').click()
    await page.waitForURL(/\/knowledge\/[^/]+$/)
    baseUrlOfKb = page.url()
    assert.match(await page.getByTestId('kb-title').textContent(), new RegExp(BASE))

    await page.getByTestId('kb-file-input').setInputFiles(FILES)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=kb-upload-row]').length === 4, null, {
      timeout: 10_000,
    })
    assert.equal(await uploadRow('.secret.md').count(), 0, 'a dot-file is never uploaded')

    // The binary is refused with the server's message; the files after it still go.
    await waitForPhase('blob.bin', 'failed')
    assert.match(await uploadRow('blob.bin').getByTestId('kb-upload-error').textContent(), /blob\.bin/)
    for (const name of ['leave.md', 'setup.txt', 'faq.md']) await waitForPhase(name, 'ready')

    // A file dropped on the zone goes the same way.
    await page.getByTestId('kb-drop').evaluate((zone) => {
      const dt = new DataTransfer()
      dt.items.add(new File(['# Dropped\n\nThe canteen serves soup on Fridays.\n'], 'dropped.md', { type: 'text/markdown' }))
      for (const type of ['dragenter', 'dragover', 'drop']) {
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }))
      }
    })
    await waitForPhase('dropped.md', 'ready')
    assert.match(await page.getByTestId('kb-upload-summary').textContent(), /4 of 5 ready, 1 failed/)

    // A folder from the folder picker: its files with their paths, the hidden ones
    // (and everything in a hidden folder) left out.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-kb-'))
    const folder = path.join(dir, 'policies')
    fs.mkdirSync(path.join(folder, 'travel'), { recursive: true })
    fs.mkdirSync(path.join(folder, '.git'))
    fs.writeFileSync(path.join(folder, 'expenses.md'), '# Expenses\n\nReceipts go to finance within a month.\n')
    fs.writeFileSync(path.join(folder, 'travel', 'trains.md'), '# Trains\n\nSecond class for trips under four hours.\n')
    fs.writeFileSync(path.join(folder, '.notes.md'), '# Private\n')
    fs.writeFileSync(path.join(folder, '.git', 'HEAD'), 'ref: refs/heads/main\n')
    try {
      await page.getByTestId('kb-upload-clear').click()
      assert.equal(await page.getByTestId('kb-upload-row').count(), 0, 'finished rows are cleared')
      await page.getByTestId('kb-folder-input').setInputFiles(folder)
      await waitForPhase('policies/expenses.md', 'ready')
      await waitForPhase('policies/travel/trains.md', 'ready')
      const paths = await page.getByTestId('kb-upload-row').evaluateAll((rows) => rows.map((r) => r.dataset.path).sort())
      assert.deepEqual(paths, ['policies/expenses.md', 'policies/travel/trains.md'])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }

    for (const name of ['leave.md', 'setup.txt', 'faq.md', 'dropped.md', 'expenses.md', 'trains.md']) {
      await page.waitForFunction(
        (n) => document.querySelector(`[data-testid=kb-doc][data-name="${n}"]`)?.getAttribute('data-status') === 'ready',
        name,
        { timeout: 30_000 },
      )
      assert.match(await docRow(name).getByTestId('kb-doc-status').textContent(), /ready/)
    }
    assert.equal(await page.getByTestId('kb-doc').count(), 6)
    assert.equal(await docRow('blob.bin').count(), 0)
    await shot(page, 'knowledge-base')

    await page.getByTestId('kb-search-input').fill('vacation days')
    await page.getByTestId('kb-search-submit').click()
    const hit = page.getByTestId('kb-hit').first()
    await hit.waitFor()
    assert.equal((await hit.getByTestId('kb-hit-doc').textContent()).trim(), 'leave.md')
    assert.match(await hit.textContent(), /Leave/)
    assert.match(await hit.getByTestId('kb-hit-text').textContent(), /25 vacation days/)

    await page.getByTestId('kb-search-input').fill('zebra unicorn')
    await page.getByTestId('kb-search-submit').click()
    await page.getByTestId('kb-no-results').waitFor()

    // Deleting a document takes it off the list.
    await docRow('dropped.md').getByTestId('kb-doc-delete').click()
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=kb-doc]').length === 5)
  })

  test('the agent editor saves the base and knowledge_mode auto', T, async () => {
    await page.goto(`${weft.baseUrl}/settings`)
    const section = page.getByTestId('agents')
    await section.getByTestId('agent-agent').waitFor()
    await section.getByTestId('agent-new').click()
    const form = section.getByTestId('agent-form')
    await form.getByTestId('agent-id').fill('helpdesk')
    await form.getByTestId('agent-name').fill('Help desk')
    const choice = form.locator(`[data-testid=agent-knowledge-base][data-name="${BASE}"]`)
    await choice.check()
    assert.equal(await form.getByTestId('agent-knowledge-mode-tool').isChecked(), true, 'tool is the default')
    await form.getByTestId('agent-knowledge-mode-auto').check()
    await shot(page, 'knowledge-agent-editor')
    await form.getByTestId('agent-save').click()
    await section.getByTestId('agent-helpdesk').waitFor()
    assert.match(
      await section.getByTestId('agent-helpdesk').getByTestId('agent-knowledge-summary').textContent(),
      new RegExp(`knowledge: ${BASE} \\(Auto\\)`),
    )

    const saved = async (id) => (await adminRequest(weft, 'GET', '/v1/agents')).agents.find((a) => a.id === id)
    let agent = await saved('helpdesk')
    assert.deepEqual(agent.knowledge, [BASE])
    assert.equal(agent.knowledge_mode, 'auto')

    // Edited again for something else, both stay.
    await section.getByTestId('agent-helpdesk').getByTestId('agent-edit').click()
    assert.equal(await form.locator(`[data-testid=agent-knowledge-base][data-name="${BASE}"]`).isChecked(), true)
    assert.equal(await form.getByTestId('agent-knowledge-mode-auto').isChecked(), true)
    await form.getByTestId('agent-description').fill('Answers from the handbook')
    await form.getByTestId('agent-save').click()
    await page.waitForFunction(() => !document.querySelector('[data-testid=agent-form]'))
    agent = await saved('helpdesk')
    assert.equal(agent.description, 'Answers from the handbook')
    assert.deepEqual(agent.knowledge, [BASE])
    assert.equal(agent.knowledge_mode, 'auto')

    // The built-in agent, which has no bases, still saves (none, as a tool).
    await section.getByTestId('agent-agent').getByTestId('agent-edit').click()
    await form.getByTestId('agent-save').click()
    await page.waitForFunction(() => !document.querySelector('[data-testid=agent-form]'))
    const builtin = await saved('agent')
    assert.deepEqual(builtin.knowledge ?? [], [])
    assert.equal(builtin.knowledge_mode ?? 'tool', 'tool')
  })

  test('a user sees the shared base but may not delete or change it; their own base is private', T, async () => {
    await signIn(USER)
    await page.goto(`${weft.baseUrl}/knowledge`)
    const row = page.locator(`[data-testid=kb-row][data-name="${BASE}"]`)
    await row.waitFor()
    assert.match(await row.textContent(), /5 documents/)
    assert.match(await row.textContent(), new RegExp(ADMIN))
    assert.equal(await row.getByTestId('kb-delete').count(), 0)
    assert.equal(await page.getByTestId('kb-visibility-select').count(), 0, 'only admins make shared bases')

    await row.getByTestId('kb-open').click()
    await page.getByTestId('kb-doc').first().waitFor()
    assert.equal(await page.getByTestId('kb-doc').count(), 5)
    assert.equal(await page.getByTestId('kb-delete').count(), 0)
    assert.equal(await page.getByTestId('kb-doc-delete').count(), 0)
    assert.equal(await page.getByTestId('kb-upload').count(), 0)
    await page.getByTestId('kb-search-input').fill('garage')
    await page.getByTestId('kb-search-submit').click()
    await page.getByTestId('kb-hit').first().waitFor()
    assert.equal((await page.getByTestId('kb-hit-doc').first().textContent()).trim(), 'faq.md')

    await page.goto(`${weft.baseUrl}/knowledge`)
    await page.getByTestId('kb-name').fill('My notes')
    await page.getByTestId('kb-create-submit').click()
    const mine = page.locator('[data-testid=kb-row][data-name="My notes"]')
    await mine.waitFor()
    assert.equal((await mine.getByTestId('kb-visibility').textContent()).trim(), 'private')
    await mine.getByTestId('kb-delete').click()
    await mine.waitFor({ state: 'detached' })
  })

  test("a user adds the shared base to a conversation's own bases", T, async () => {
    await page.goto(`${weft.baseUrl}/chat`)
    const box = page.getByTestId('composer')
    await box.fill('@mock.reply hello')
    await box.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    const sessionId = page.url().split('/').pop()
    await page.getByTestId('session-knowledge-toggle').click()
    const choice = page.locator(`[data-testid=session-kb][data-name="${BASE}"]`)
    await choice.check()
    await page.getByTestId('session-knowledge-count').waitFor()
    const kbId = baseUrlOfKb.split('/').pop()
    const saved = () =>
      page.evaluate(async (id) => (await (await fetch(`/v1/sessions/${id}`)).json()).knowledge, sessionId)
    assert.deepEqual(await saved(), [kbId])

    await page.reload()
    assert.equal((await page.getByTestId('session-knowledge-count').textContent()).trim(), '1')
    await page.getByTestId('session-knowledge-toggle').click()
    assert.equal(await choice.isChecked(), true)
    await choice.uncheck()
    await page.getByTestId('session-knowledge-count').waitFor({ state: 'detached' })
    assert.deepEqual(await saved(), [])
  })

  test('at phone width the pages fit the screen', T, async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await page.goto(`${weft.baseUrl}/knowledge`)
      await page.getByTestId('kb-row').first().waitFor()
      await assertFitsWidth(page, '/knowledge')
      await shot(page, 'knowledge-phone')
      await signIn(ADMIN)
      await page.goto(baseUrlOfKb)
      await page.getByTestId('kb-doc').first().waitFor()
      await page.getByTestId('kb-search-input').fill('vacation')
      await page.getByTestId('kb-search-submit').click()
      await page.getByTestId('kb-hit').first().waitFor()
      assert.ok(await page.getByTestId('kb-drop').isVisible())
      await assertFitsWidth(page, 'a base')
      await shot(page, 'knowledge-base-phone', { fullPage: true })
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 })
    }
  })
})
