// End-to-end: an answer that cites a knowledge base, in the browser, against a real
// `weft up`. An admin makes a shared base "handbook" with one Markdown document and
// an agent that searches it; a user picks the agent and sends
// `@mock.tool knowledge_search {"query": "vacation days"}`, to which the mock model
// calls the tool and answers with its output (`tool knowledge_search said: …[1]
// handbook.md — Handbook > Leave (chunk …)…`), so the answer cites [1]. The [1]
// becomes a footnote, "Sources" lists the document and its place, and either opens
// a panel with the document's text at the cited passage, highlighted, read on both
// ways. After a reload the stored reply shows the same; at phone width the panel
// fills the screen; once the document is deleted the panel shows the cited snippet.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `cit_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 120_000 }
const topics = (from, to) =>
  Array.from({ length: to - from + 1 }, (_, i) => `## Topic ${from + i}\n\nRule ${from + i} covers desk ${from + i}.\n`)
// A heading starts a chunk: Welcome (ord 0), Topics 1–12, Leave (13), Topics
// 13–24, Equipment (26). The panel reads 20 chunks around Leave (ords 3…22), so
// there is more to read either way.
const HANDBOOK = [
  '# Handbook\n\nWelcome.\n',
  ...topics(1, 12),
  '## Leave\n\nEveryone gets 25 vacation days a year.\n',
  ...topics(13, 24),
  '## Equipment\n\nLaptops are replaced every three years.\n',
].join('\n')
const MESSAGE = '@mock.tool knowledge_search {"query": "vacation days"}'

let weft
let browser
let page
let kb
let doc
/** The conversation with the cited answer. */
let chatUrl

const reply = () => page.getByTestId('reply').last()
const panel = () => page.getByTestId('source-panel')

async function signIn() {
  await page.goto(`${weft.baseUrl}/login`)
  await page.locator('input[name=username]').fill(USER)
  await page.locator('input[name=password]').fill(PASSWORD)
  await page.locator('button[type=submit]').click()
  await page.waitForURL(/\/chat$/)
}

async function waitForDone() {
  await page.waitForFunction(
    () => {
      const all = document.querySelectorAll('[data-testid=reply]')
      return all[all.length - 1]?.getAttribute('data-phase') === 'done'
    },
    null,
    { timeout: 60_000 },
  )
}

/** The ingestion job reads the upload in the background: wait until it is searchable. */
async function waitForReady(kbId, docId) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const { documents } = await adminRequest(weft, 'GET', `/v1/knowledge/${kbId}/documents`)
    const d = documents.find((x) => x.id === docId)
    if (d?.status === 'ready') return d
    if (d?.status === 'failed') throw new Error(`ingestion failed: ${d.error}`)
    if (Date.now() > deadline) throw new Error(`document still ${d?.status} after 60 s`)
    await delay(200)
  }
}

/** The footnotes, sources and panel of the newest reply, as a reader sees them. */
async function checkCitedReply() {
  const refs = reply().getByTestId('cite-ref')
  await refs.first().waitFor()
  assert.deepEqual(
    [...new Set(await refs.evaluateAll((els) => els.map((e) => e.getAttribute('data-n'))))],
    ['1'],
    'every footnote is [1]',
  )
  const text = (await reply().getByTestId('reply-text').allTextContents()).join('\n')
  assert.match(text, /tool knowledge_search said:/)
  assert.doesNotMatch(text, /\[1\]/, 'the cited [1] is drawn as a footnote, not as text')
  assert.match(text, /Cite them as \[n\]/, 'brackets that cite nothing stay as written')

  const sources = reply().getByTestId('source')
  assert.equal(await sources.count(), 1)
  assert.equal((await sources.first().textContent()).trim(), '[1] handbook.md — Handbook > Leave')
}

describe('citations in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-citations.log' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    kb = await adminRequest(weft, 'POST', '/v1/knowledge', {
      name: 'handbook',
      description: 'The staff handbook',
      visibility: 'shared',
    })
    const up = await adminRequest(weft, 'POST', `/v1/knowledge/${kb.id}/documents`, {
      name: 'handbook.md',
      data: Buffer.from(HANDBOOK).toString('base64'),
    })
    doc = up.documents[0].document
    const ready = await waitForReady(kb.id, doc.id)
    assert.equal(ready.chunks, 27, 'one chunk per section')
    await adminRequest(weft, 'PUT', '/v1/admin/agents/librarian', {
      name: 'Librarian',
      instructions: 'Answer from the handbook and cite it.',
      knowledge: ['handbook'],
    })
    browser = await launchBrowser()
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('a cited answer has footnotes and sources that open the document at the passage, highlighted', T, async () => {
    await signIn()
    const picker = page.getByTestId('agent-picker')
    await picker.locator('option[value=librarian]').waitFor({ state: 'attached' })
    await picker.selectOption('librarian')
    const box = page.getByTestId('composer')
    await box.fill(MESSAGE)
    await box.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    chatUrl = page.url()
    await waitForDone()
    await checkCitedReply()
    await shot(page, 'citations-1-reply')

    // The footnote opens the panel: the document, the place, its text with the
    // cited passage highlighted and scrolled into view; focus moves into it.
    const ref = reply().getByTestId('cite-ref').first()
    await ref.click()
    await panel().waitFor()
    assert.equal((await page.getByTestId('source-panel-title').textContent()).trim(), 'handbook.md')
    assert.equal((await page.getByTestId('source-panel-position').textContent()).trim(), '[1] Handbook > Leave')
    const cited = page.getByTestId('cited-chunk')
    await cited.waitFor()
    assert.match(await cited.textContent(), /Everyone gets 25 vacation days a year\./)
    assert.equal(await page.locator('[data-testid=source-panel] .cited').count(), 1, 'only the cited passage is highlighted')
    assert.notEqual(
      await cited.evaluate((e) => getComputedStyle(e).backgroundColor),
      await page.getByTestId('source-text').evaluate((e) => getComputedStyle(e).backgroundColor),
      'the cited passage stands out',
    )
    const body = await page.getByTestId('source-text').boundingBox()
    const passage = await cited.boundingBox()
    assert.ok(
      passage.y >= body.y && passage.y + passage.height <= body.y + body.height,
      `the cited passage is scrolled into view (${JSON.stringify({ body, passage })})`,
    )
    assert.ok(body.y > (await page.getByTestId('source-panel-title').boundingBox()).y, 'the heading stays in view')
    assert.ok((await page.getByTestId('source-panel-title').boundingBox()).y >= 0)
    assert.ok(await page.evaluate(() => !!document.activeElement?.closest('[data-testid=source-panel]')), 'focus is in the panel')
    const text = page.getByTestId('source-text')
    assert.match(await text.textContent(), /Rule 12 covers desk 12\.[\s\S]*25 vacation days[\s\S]*Rule 13 covers desk 13\./)
    assert.doesNotMatch(await text.textContent(), /Welcome\.|Laptops/, 'only the chunks around the passage are read at first')
    await shot(page, 'citations-2-panel')

    // Reading on either way, up to the document's ends.
    await page.getByTestId('source-earlier').click()
    await page.waitForFunction(() => document.querySelector('[data-testid=source-text]')?.textContent.includes('Welcome.'))
    assert.equal(await page.getByTestId('source-earlier').count(), 0, 'nothing before the first chunk')
    await page.getByTestId('source-later').click()
    await page.waitForFunction(() =>
      document.querySelector('[data-testid=source-text]')?.textContent.includes('Laptops are replaced every three years.'),
    )
    assert.equal(await page.getByTestId('source-later').count(), 0, 'nothing after the last chunk')
    const ords = await page.locator('[data-testid=source-text] [data-ord]').evaluateAll((els) => els.map((e) => Number(e.dataset.ord)))
    assert.deepEqual(ords, Array.from({ length: 27 }, (_, i) => i), 'the whole document, in order, each chunk once')

    // Esc closes it and gives focus back to the footnote.
    await page.keyboard.press('Escape')
    await panel().waitFor({ state: 'detached' })
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'cite-ref')

    // The source under the reply opens the same; the close button closes it.
    await reply().getByTestId('source').first().click()
    await page.getByTestId('cited-chunk').waitFor()
    await page.getByTestId('source-close').click()
    await panel().waitFor({ state: 'detached' })
  })

  test('after a reload the stored reply shows the same footnotes and sources', T, async () => {
    assert.ok(chatUrl, 'the first test made the conversation')
    await page.goto(chatUrl)
    await waitForDone()
    await checkCitedReply()
    await reply().getByTestId('cite-ref').first().click()
    await page.getByTestId('cited-chunk').waitFor()
    assert.match(await page.getByTestId('cited-chunk').textContent(), /25 vacation days/)
    await page.keyboard.press('Escape')
    await panel().waitFor({ state: 'detached' })
  })

  test('at phone width the panel fills the screen', T, async () => {
    const phone = await browser.context.newPage()
    try {
      await phone.setViewportSize({ width: 390, height: 844 })
      await phone.goto(chatUrl)
      const source = phone.getByTestId('source').last()
      await source.waitFor()
      await source.click()
      await phone.getByTestId('cited-chunk').waitFor()
      const box = await phone.getByTestId('source-panel').boundingBox()
      assert.deepEqual(
        [box.x, box.y, box.width, box.height].map(Math.round),
        [0, 0, 390, 844],
        'the panel covers the whole screen',
      )
      const close = await phone.getByTestId('source-close').boundingBox()
      assert.ok(close.x + close.width <= 390 && close.y >= 0, 'the close button is on screen')
      const passage = await phone.getByTestId('cited-chunk').boundingBox()
      assert.ok(passage.y > close.y + close.height && passage.y + passage.height <= 844, 'the passage is in view, under the heading')
      await shot(phone, 'citations-3-phone')
      await phone.getByTestId('source-close').click()
      await phone.getByTestId('source-panel').waitFor({ state: 'detached' })
    } finally {
      await phone.close()
    }
  })

  test('a deleted document leaves the cited snippet and says it is gone', T, async () => {
    await adminRequest(weft, 'DELETE', `/v1/knowledge/${kb.id}/documents/${doc.id}`)
    await page.goto(chatUrl)
    await waitForDone()
    await checkCitedReply()
    await reply().getByTestId('source').first().click()
    await page.getByTestId('source-gone').waitFor()
    assert.equal((await page.getByTestId('source-gone').textContent()).trim(), 'This document is no longer available.')
    assert.match(await page.locator('[data-testid=source-text] .cited').textContent(), /Everyone gets 25 vacation days a year\./)
    await shot(page, 'citations-4-gone')
    await page.keyboard.press('Escape')
    await panel().waitFor({ state: 'detached' })
  })
})
