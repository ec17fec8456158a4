// End-to-end: attachments in the browser, against a real `weft up`. An image is
// pasted (a real `paste` event whose DataTransfer holds a PNG drawn on a canvas in
// the page), sent with `@mock.describe_images` — the mock model answers
// `image 1: image/png, <n> bytes, sha256 <hex>` for what it received — and is still
// shown after a reload; a document picked with the file input and an image dropped
// on the chat go with the next message, whose own thumbnail shows while it is
// being sent. Also the composer's limit check and a file the server refuses (the
// text and files stay in the composer).

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `att_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 120_000 }
const NOTES = `# Notes ${crypto.randomBytes(3).toString('hex')}\n\n- one\n- two\n`

let weft
let browser
let page
/** The conversation of the first test, continued by the third. */
let chatUrl

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex')
const userMessages = () => page.getByTestId('user-message')

/**
 * Draws one PNG per seed on a canvas in the page and pastes them into the
 * composer in one `paste` event, as a browser does for a copied screenshot (named
 * `image.png`, as Chromium names clipboard images). Returns their bytes.
 */
async function pasteImages(seeds) {
  const images = await page.evaluate(async (seeds) => {
    const files = []
    for (const seed of seeds) {
      const canvas = document.createElement('canvas')
      canvas.width = 48 + seed
      canvas.height = 32
      const g = canvas.getContext('2d')
      g.fillStyle = `hsl(${(seed * 67) % 360} 70% 50%)`
      g.fillRect(0, 0, canvas.width, canvas.height)
      g.fillStyle = '#fff'
      g.fillText(String(seed), 8, 20)
      const blob = await new Promise((r) => canvas.toBlob(r, 'image/png'))
      files.push(new File([blob], 'image.png', { type: 'image/png' }))
    }
    const data = new DataTransfer()
    for (const f of files) data.items.add(f)
    const box = document.querySelector('[data-testid=composer]')
    box.focus()
    box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }))
    return Promise.all(files.map(async (f) => Array.from(new Uint8Array(await f.arrayBuffer()))))
  }, seeds)
  return images.map((a) => Buffer.from(a))
}

/** Drags a PNG over the chat (the drop zone must show) and drops it. */
async function dropImage(name, seed) {
  const bytes = await page.evaluate(
    async ([name, seed]) => {
      const canvas = document.createElement('canvas')
      canvas.width = 20 + seed
      canvas.height = 20
      const g = canvas.getContext('2d')
      g.fillStyle = `hsl(${(seed * 41) % 360} 60% 40%)`
      g.fillRect(0, 0, canvas.width, canvas.height)
      const blob = await new Promise((r) => canvas.toBlob(r, 'image/png'))
      const data = new DataTransfer()
      data.items.add(new File([blob], name, { type: 'image/png' }))
      window.__drop = data
      const chat = document.querySelector('[data-testid=chat]')
      chat.dispatchEvent(new DragEvent('dragenter', { dataTransfer: data, bubbles: true, cancelable: true }))
      chat.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }))
      return Array.from(new Uint8Array(await blob.arrayBuffer()))
    },
    [name, seed],
  )
  await page.getByTestId('drop-zone').waitFor()
  await shot(page, 'attachments-04-drop-zone')
  await page.evaluate(() => {
    const chat = document.querySelector('[data-testid=chat]')
    chat.dispatchEvent(new DragEvent('drop', { dataTransfer: window.__drop, bubbles: true, cancelable: true }))
  })
  await page.getByTestId('drop-zone').waitFor({ state: 'detached' })
  return Buffer.from(bytes)
}

/** Waits until the image has loaded and has pixels. */
async function loaded(img) {
  const handle = await img.elementHandle({ timeout: 30_000 })
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, handle, { timeout: 30_000 })
  return img.getAttribute('src')
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

async function send(text) {
  const box = page.getByTestId('composer')
  await box.fill(text)
  await box.press('Enter')
}

const described = (bytes) => `image 1: image/png, ${bytes.length} bytes, sha256 ${sha256(bytes)}`

describe('attachments in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-attachments.log' })
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

  test('a pasted image reaches the model and is still shown after a reload', T, async () => {
    await page.getByTestId('composer').waitFor()
    const [png] = await pasteImages([1])
    const draft = page.getByTestId('draft')
    await draft.waitFor()
    assert.equal(await draft.getAttribute('data-name'), 'pasted-image-1.png')
    assert.match(await loaded(draft.locator('img')), /^blob:/)
    await shot(page, 'attachments-01-pasted')

    await send('@mock.describe_images')
    await page.waitForURL(/\/chat\/[^/]+$/)
    chatUrl = page.url()
    await waitForReply(described(png))
    assert.equal(await page.getByTestId('draft').count(), 0, 'the composer is empty once sent')

    await page.reload()
    await waitForReply(described(png))
    const img = userMessages().first().getByTestId('message-image').locator('img')
    const src = await loaded(img)
    assert.match(src, /^\/v1\/files\/[^/]+$/)
    assert.equal(await img.getAttribute('alt'), 'pasted-image-1.png')
    await shot(page, 'attachments-02-after-reload')

    // Full size in a new tab: the very bytes sent.
    const [tab] = await Promise.all([
      browser.context.waitForEvent('page'),
      userMessages().first().getByTestId('message-image').click(),
    ])
    await tab.waitForLoadState()
    assert.equal(tab.url(), new URL(src, weft.baseUrl).href)
    await tab.waitForFunction(() => document.querySelector('img')?.naturalWidth > 0)
    // The file is served sandboxed (an opaque origin, issue 20), so its own tab
    // cannot fetch it: read the same URL from the app's page.
    const bytes = await page.evaluate(
      async (href) => Array.from(new Uint8Array(await (await fetch(href)).arrayBuffer())),
      tab.url(),
    )
    assert.equal(sha256(Buffer.from(bytes)), sha256(png))
    await tab.close()
  })

  test('the composer checks the limits; a refused file leaves text and files in place', T, async () => {
    await page.goto(`${weft.baseUrl}/chat`)
    await page.getByTestId('composer').waitFor()
    await pasteImages([2, 3, 4, 5, 6])
    await page.getByTestId('attach-problem').waitFor()
    assert.equal(await page.getByTestId('draft').count(), 4)
    assert.match(await page.getByTestId('attach-problem').textContent(), /at most 4 images/)
    assert.deepEqual(
      await page.getByTestId('draft').evaluateAll((els) => els.map((e) => e.dataset.name)),
      ['pasted-image-1.png', 'pasted-image-2.png', 'pasted-image-3.png', 'pasted-image-4.png'],
    )
    await shot(page, 'attachments-03-limit')
    while (await page.getByTestId('draft-remove').count()) await page.getByTestId('draft-remove').first().click()
    assert.equal(await page.getByTestId('attach-problem').count(), 0)

    // Bytes that are no type the server takes: its message is shown, nothing is lost.
    await page.getByTestId('attach-input').setInputFiles({
      name: 'data.bin',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from([0x00, 0x9f, 0x92, 0x96, 0xff, 0xfe, 0x00, 0x01, 0x02, 0x03]),
    })
    await page.getByTestId('draft').waitFor()
    await page.getByTestId('composer').fill('keep this text')
    await page.getByTestId('send').click()
    const error = page.getByTestId('send-error')
    await error.waitFor()
    // the server's own message, naming the file
    assert.match(await error.textContent(), /data\.bin is not a supported file/)
    assert.equal(await page.getByTestId('composer').inputValue(), 'keep this text')
    assert.equal(await page.getByTestId('draft').getAttribute('data-name'), 'data.bin')
    assert.match(page.url(), /\/chat$/, 'no conversation is left behind')
    await page.getByTestId('draft-remove').click()
  })

  test('a picked document and a dropped image go with the next message, shown while sending and after a reload', T, async () => {
    await page.goto(chatUrl)
    await page.getByTestId('composer').waitFor()
    await page.getByTestId('attach-input').setInputFiles({ name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from(NOTES) })
    const chip = page.locator('[data-testid=draft][data-kind=document]')
    await chip.waitFor()
    assert.match(await chip.textContent(), new RegExp(`notes\\.md\\s*${Buffer.byteLength(NOTES)} B`))
    const png = await dropImage('dropped.png', 7)
    await page.locator('[data-testid=draft][data-name="dropped.png"]').waitFor()

    // Hold the send, to see the message as it is being sent.
    let release
    const held = new Promise((r) => (release = r))
    await page.route('**/v1/sessions/*/messages', async (route) => {
      if (route.request().method() === 'POST') await held
      await route.continue()
    })
    await send('@mock.describe_images')
    const sending = page.locator('[data-testid=user-message][data-status=sending]')
    await sending.waitFor()
    assert.match(await loaded(sending.getByTestId('message-image').locator('img')), /^blob:/)
    assert.match(await sending.getByTestId('message-file').textContent(), /notes\.md/)
    await shot(page, 'attachments-05-sending')
    release()
    await waitForReply(described(png))
    await page.unroute('**/v1/sessions/*/messages')
    // Once the server has listed the files, the message shows them from there.
    const second = userMessages().nth(1)
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid=user-message]')[1]?.querySelector('img')?.getAttribute('src')?.startsWith('/v1/files/'),
      null,
      { timeout: 30_000 },
    )

    await page.reload()
    await waitForReply(described(png))
    assert.equal(await userMessages().count(), 2)
    assert.match(await loaded(second.getByTestId('message-image').locator('img')), /^\/v1\/files\//)
    assert.match(await loaded(userMessages().first().getByTestId('message-image').locator('img')), /^\/v1\/files\//)
    const file = second.getByTestId('message-file')
    assert.match(await file.textContent(), new RegExp(`notes\\.md\\s*${Buffer.byteLength(NOTES)} B`))
    const href = await file.getAttribute('href')
    assert.match(href, /^\/v1\/files\/[^/]+$/)
    // It downloads (as an attachment, under its name) with the bytes sent.
    const got = await page.evaluate(async (href) => {
      const r = await fetch(href)
      return { status: r.status, disposition: r.headers.get('content-disposition'), text: await r.text() }
    }, href)
    assert.equal(got.status, 200)
    assert.match(got.disposition, /^attachment; filename="notes\.md"/)
    assert.equal(got.text, NOTES)
    await shot(page, 'attachments-06-document-after-reload')
  })
})
