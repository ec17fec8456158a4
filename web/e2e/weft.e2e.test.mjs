// End-to-end: the built web UI served by a real `weft up`, in headless Chromium.
// Run with `npm run e2e` (needs WEFT_BIN and a prior `npm run build` embedded in it).

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startDropProxy, startWeft, words } from './harness.mjs'

const bin = requireBinaries()
const USER = `e2e_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const ADMIN = `${USER}_admin`
const T = { timeout: 90_000 }

let weft
let browser
let page
/** Every Content-Security-Policy violation any page reported. */
const cspViolations = []
/** Every request a page made outside this machine. */
const foreignRequests = []

/** The text of the newest reply, as rendered. */
async function lastReplyText(p = page) {
  const parts = await p.locator('[data-testid=reply]').last().locator('[data-testid=reply-text]').allTextContents()
  return parts.map((s) => s.trim()).join('\n\n')
}

async function lastReplyPhase(p = page) {
  return p.locator('[data-testid=reply]').last().getAttribute('data-phase')
}

/** Waits until the newest reply holds at least n words. */
async function waitForWords(n, p = page) {
  await p.waitForFunction(
    (min) => {
      const replies = document.querySelectorAll('[data-testid=reply]')
      const last = replies[replies.length - 1]
      if (!last) return false
      const text = [...last.querySelectorAll('[data-testid=reply-text]')].map((e) => e.textContent).join(' ')
      return text.trim().split(/\s+/).filter(Boolean).length >= min
    },
    n,
    { timeout: 60_000 },
  )
}

async function waitForPhase(phase, p = page) {
  await p.waitForFunction(
    (want) => {
      const replies = document.querySelectorAll('[data-testid=reply]')
      return replies[replies.length - 1]?.getAttribute('data-phase') === want
    },
    phase,
    { timeout: 60_000 },
  )
}

async function newChat() {
  await page.goto(`${weft.baseUrl}/chat`)
  await page.getByTestId('composer').waitFor()
}

async function sendMessage(text) {
  const box = page.getByTestId('composer')
  await box.fill(text)
  await box.press('Enter')
}

describe('weft web UI', () => {
  before(async () => {
    weft = await startWeft(bin)
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: PASSWORD, role: 'user' })
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: ADMIN, password: PASSWORD, role: 'admin' })
    browser = await launchBrowser()
    browser.context.on('console', (m) => {
      if (/content security policy/i.test(m.text())) cspViolations.push(m.text())
    })
    browser.context.on('request', (r) => {
      if (/^https?:/.test(r.url()) && new URL(r.url()).hostname !== '127.0.0.1') foreignRequests.push(r.url())
    })
    page = await browser.context.newPage()
    page.on('pageerror', (e) => console.error('[page error]', e.message))
  })

  after(async () => {
    await browser?.close()
    await weft?.stop()
  })

  test('signs in', T, async () => {
    await page.goto(weft.baseUrl + '/')
    await page.waitForURL(/\/login/)
    await page.locator('input[name=username]').fill(USER)
    // A wrong password is refused in place.
    await page.locator('input[name=password]').fill('not-the-password')
    await page.locator('button[type=submit]').click()
    await page.getByRole('alert').waitFor()
    assert.match(page.url(), /\/login/)
    await page.locator('input[name=password]').fill(PASSWORD)
    await shot(page, '01-login')
    await page.locator('button[type=submit]').click()
    await page.waitForURL(/\/chat$/)
    await page.getByTestId('composer').waitFor()
    await shot(page, '02-new-chat')
  })

  test('sends a message and streams the reply', T, async () => {
    await newChat()
    await sendMessage('@mock.tokens 60 @mock.delay 200 40')
    await page.waitForURL(/\/chat\/[^/]+$/)
    // Observe the reply while it is still growing.
    await waitForWords(5)
    const partial = await lastReplyText()
    assert.match(partial, /^w1 w2 w3 w4 w5/)
    assert.notEqual(partial, words(60), 'reply should be seen mid-stream, not only at the end')
    assert.equal(await lastReplyPhase(), 'running')
    await shot(page, '03-streaming')
    await waitForPhase('done')
    assert.equal(await lastReplyText(), words(60))
    const foot = await page.locator('[data-testid=reply]').last().getByTestId('reply-foot').textContent()
    assert.match(foot, /first token/)
    assert.match(foot, /in · .* out/)
    // The user's message is there once.
    assert.equal(await page.getByTestId('user-message').count(), 1)
  })

  test('renders Markdown tables and highlighted code', T, async () => {
    await newChat()
    // Shift+Enter adds a line; it does not send.
    const box = page.getByTestId('composer')
    await box.type('line one')
    await box.press('Shift+Enter')
    await box.type('line two')
    assert.equal(await box.inputValue(), 'line one\nline two')
    assert.match(page.url(), /\/chat$/, 'nothing was sent')
    const md = ['Demo', '', '| lang | year |', '|---|---|', '| Rust | 2015 |', '', '```rust', 'fn main() { println!("hi"); }', '```'].join('\n')
    await page.getByTestId('composer').fill(md)
    await page.getByTestId('send').click()
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('done')
    const reply = page.locator('[data-testid=reply]').last()
    await reply.locator('table td', { hasText: 'Rust' }).waitFor()
    await reply.locator('pre code.hljs .hljs-keyword').first().waitFor()
    await shot(page, '04-markdown')
  })

  test('shows images from elsewhere as links and never loads them', T, async () => {
    await newChat()
    await sendMessage('@mock.reply See ![chart](https://images.example.invalid/c.png?q=secret) and ![logo](/favicon.svg)')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('done')
    const reply = page.locator('[data-testid=reply]').last()
    const link = reply.locator('a.md-image-link')
    await link.waitFor()
    assert.equal(await link.getAttribute('href'), 'https://images.example.invalid/c.png?q=secret')
    assert.equal((await link.textContent()).trim(), 'chart')
    assert.equal(await reply.locator('img').count(), 1, 'only the same-origin image is an image')
    assert.equal(await reply.locator('img').getAttribute('src'), '/favicon.svg')
    assert.deepEqual(foreignRequests, [], 'nothing was fetched from another host')
  })

  test('shows thinking (collapsible) and tool calls', T, async () => {
    await newChat()
    await sendMessage('@mock.think 12 @mock.tokens 5 @mock.delay 0 20')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('done')
    const thinking = page.locator('[data-testid=reply]').last().getByTestId('thinking')
    await thinking.waitFor()
    assert.equal(await thinking.getAttribute('open'), null, 'thinking starts collapsed')
    assert.match(
      (await thinking.locator('summary').textContent()).trim(),
      /^Thought for \d+\.\d s · \d+ tokens$/,
      'how long it thought and how much',
    )
    await thinking.locator('summary').click()
    assert.match(await thinking.textContent(), /12/)
    assert.equal(await lastReplyText(), words(5))
    await sendMessage('@mock.tool current_time {}')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 30_000,
    })
    await waitForPhase('done')
    const tool = page.locator('[data-testid=reply]').last().getByTestId('tool-call')
    await tool.waitFor()
    assert.match(await tool.locator('summary').textContent(), /current_time/)
    await tool.locator('summary').click()
    const said = await lastReplyText()
    assert.match(said, /^tool current_time said: /)
    await shot(page, '05-thinking-tools')
    // From history after a reload: the same two replies, the tool call once.
    await page.reload()
    await page.getByTestId('tool-call').waitFor()
    assert.equal(await page.locator('[data-testid=reply]').count(), 2)
    assert.equal(await page.getByTestId('tool-call').count(), 1)
    assert.equal(await lastReplyText(), said)
    assert.equal(await lastReplyPhase(), 'done')
    // The reasoning is stored with the reply it came before, folded as it was.
    const stored = page.locator('[data-testid=reply]').first().getByTestId('thinking')
    assert.equal(await stored.getAttribute('open'), null)
    assert.match((await stored.locator('summary').textContent()).trim(), /^Thinking · \d+ tokens$/)
    await stored.locator('summary').click()
    assert.match(await stored.textContent(), /t1 t2 .* t12/)
    assert.equal(await page.locator('[data-testid=reply]').last().getByTestId('thinking').count(), 0)
  })

  test('a reload mid-stream continues the reply exactly once', T, async () => {
    await newChat()
    await sendMessage('@mock.tokens 300 @mock.delay 0 50')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForWords(40)
    const before = await lastReplyText()
    await page.reload()
    // The conversation reappears with what was already streamed, and keeps going.
    await waitForWords(before.split(' ').length)
    assert.ok((await lastReplyText()).startsWith(before), 'text before the reload is still there, unchanged')
    assert.notEqual(await lastReplyPhase(), 'done', 'the reply should still be streaming after the reload')
    await shot(page, '06-reload-mid-stream')
    await waitForPhase('done')
    assert.equal(await lastReplyText(), words(300))
    assert.equal(await page.locator('[data-testid=reply]').count(), 1, 'exactly one reply')
    assert.equal(await page.getByTestId('user-message').count(), 1, 'exactly one user message')
    // And once more from history, after the run has finished.
    await page.reload()
    await page.locator('[data-testid=reply-text]').first().waitFor()
    assert.equal(await lastReplyText(), words(300))
    assert.equal(await page.locator('[data-testid=reply]').count(), 1)
  })

  test('stops a reply and keeps the partial text', T, async () => {
    await newChat()
    await sendMessage('@mock.tokens 300 @mock.delay 0 50')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForWords(15)
    await page.getByTestId('stop').click()
    await waitForPhase('cancelled')
    await page.getByTestId('reply-cancelled').waitFor()
    const partial = await lastReplyText()
    const n = partial.split(' ').length
    assert.ok(n >= 15 && n < 300, `partial reply has ${n} words`)
    assert.equal(partial, words(n))
    assert.equal(await page.getByTestId('stop').count(), 0, 'Stop disappears once stopped')
    await shot(page, '07-stopped')
    // The partial text is what was kept.
    await page.reload()
    await page.locator('[data-testid=reply-text]').first().waitFor()
    assert.equal(await lastReplyText(), partial)
  })

  test('queues a message sent while a reply runs', T, async () => {
    await newChat()
    await sendMessage('@mock.tokens 60 @mock.delay 0 50')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForWords(3)
    await sendMessage('@mock.reply second answer')
    await page.getByTestId('queued').waitFor()
    await shot(page, '08-queued')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 60_000,
    })
    await waitForPhase('done')
    assert.equal(await lastReplyText(), 'second answer')
    assert.equal(await page.getByTestId('queued').count(), 0)
    const texts = await page.locator('[data-testid=reply]').first().locator('[data-testid=reply-text]').allTextContents()
    assert.equal(texts.join('').trim(), words(60))
  })

  test('"Send now" interrupts the running reply', T, async () => {
    await newChat()
    await sendMessage('@mock.tokens 300 @mock.delay 0 50')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForWords(5)
    await page.getByTestId('composer').fill('@mock.reply interrupted you')
    await page.getByTestId('send-now').click()
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 30_000,
    })
    await waitForPhase('done')
    assert.equal(await lastReplyText(), 'interrupted you')
    const first = page.locator('[data-testid=reply]').first()
    await first.getByTestId('reply-cancelled').waitFor()
    const kept = (await first.locator('[data-testid=reply-text]').allTextContents()).join('').trim()
    assert.ok(kept.startsWith('w1 w2 w3 w4 w5') && kept !== words(300), 'the partial reply is kept')
  })

  test('shows a failed reply in place, and a retried step only once', T, async () => {
    await newChat()
    await sendMessage('@mock.fail 400')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('error')
    await page.getByTestId('reply-error').waitFor()
    await shot(page, '09-error')
    // A transient failure is retried inside the step: no error, no duplicated text.
    await sendMessage('@mock.fail 503 times=1 @mock.tokens 8')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 60_000,
    })
    await waitForPhase('done')
    assert.equal(await lastReplyText(), words(8))
    assert.equal(await page.locator('[data-testid=reply]').last().getByTestId('reply-error').count(), 0)
  })

  test('two tabs on one conversation both show the reply live', T, async () => {
    await newChat()
    await sendMessage('@mock.reply first')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('done')
    const second = await browser.context.newPage()
    await second.goto(page.url())
    await second.getByTestId('composer').waitFor()
    await sendMessage('@mock.tokens 120 @mock.delay 0 50')
    await waitForWords(5)
    // The other tab picks the run up while it is still streaming.
    await second.waitForFunction(() => document.querySelectorAll('[data-testid=reply]').length === 2, null, {
      timeout: 30_000,
    })
    assert.notEqual(await lastReplyPhase(second), 'done', 'second tab joins mid-stream')
    await waitForPhase('done', second)
    await waitForPhase('done')
    assert.equal(await lastReplyText(second), words(120))
    assert.equal(await lastReplyText(), words(120))
    await second.close()
  })

  test('a network drop shows "reconnecting…" and recovers by itself', T, async () => {
    const proxy = await startDropProxy(weft.baseUrl)
    const tab = await browser.context.newPage()
    try {
      await tab.goto(`${proxy.url}/chat`)
      await tab.getByTestId('composer').fill('@mock.tokens 150 @mock.delay 0 40')
      await tab.getByTestId('composer').press('Enter')
      await tab.waitForURL(/\/chat\/[^/]+$/)
      await waitForWords(10, tab)
      proxy.drop()
      await tab.getByTestId('reconnecting').waitFor({ timeout: 30_000 })
      await shot(tab, '10-reconnecting')
      proxy.restore()
      await waitForPhase('done', tab)
      assert.equal(await lastReplyText(tab), words(150))
      assert.equal(await tab.getByTestId('reconnecting').count(), 0)
    } finally {
      proxy.restore()
      await tab.close()
      await proxy.close()
    }
  })

  test('searches and renames sessions', T, async () => {
    const tag = crypto.randomBytes(3).toString('hex')
    // Two conversations with known titles, created through the UI's own cookie.
    for (const title of [`alpha ${tag}`, `beta ${tag}`]) {
      const res = await page.request.post(`${weft.baseUrl}/v1/sessions`, {
        data: { title },
        headers: { 'X-Weft-Csrf': '1' },
      })
      assert.ok(res.ok(), `create session: ${res.status()}`)
    }
    await page.goto(`${weft.baseUrl}/sessions`)
    await page.getByTestId('session-row').first().waitFor()
    await page.getByTestId('session-search').fill(`alpha ${tag}`)
    await page.waitForFunction(
      (want) => {
        const titles = [...document.querySelectorAll('[data-testid=session-title]')].map((e) => e.textContent?.trim())
        return titles.length === 1 && titles[0] === want
      },
      `alpha ${tag}`,
      { timeout: 15_000 },
    )
    await shot(page, '11-sessions-search')
    // Rename it, then find it by its new name.
    await page.getByTestId('rename').click()
    await page.getByTestId('rename-input').fill(`gamma ${tag}`)
    await page.getByTestId('rename-input').press('Enter')
    await page.getByTestId('session-title').filter({ hasText: `gamma ${tag}` }).waitFor()
    await page.getByTestId('session-search').fill(`gamma ${tag}`)
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid=session-row]').length === 1,
      null,
      { timeout: 15_000 },
    )
    await page.getByTestId('session-search').fill(`nothing-${tag}`)
    await page.getByTestId('sessions-empty').waitFor()
  })

  test('switches language and remembers it', T, async () => {
    await page.goto(`${weft.baseUrl}/settings`)
    await page.getByTestId('nav-settings').waitFor()
    assert.equal((await page.getByTestId('nav-settings').textContent()).trim(), 'Settings')
    await page.getByTestId('lang-switch').first().selectOption('zh')
    await page.getByTestId('nav-settings').filter({ hasText: '设置' }).waitFor()
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN')
    await page.reload()
    await page.getByTestId('nav-settings').filter({ hasText: '设置' }).waitFor()
    await page.getByTestId('token-name').fill('e2e-cli')
    await page.getByTestId('token-create').click()
    const token = await page.getByTestId('new-token').textContent()
    assert.ok(token && token.length > 10, 'a new token is shown once')
    await page.setViewportSize({ width: 1280, height: 1400 })
    await shot(page, '12-settings-zh')
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.goto(`${weft.baseUrl}/chat`)
    await page.getByText('开始一段对话。').waitFor()
    await page.getByTestId('lang-switch').first().selectOption('en')
    await page.getByTestId('nav-settings').filter({ hasText: 'Settings' }).waitFor()
  })

  test('is usable at phone width', T, async () => {
    const phone = await browser.context.newPage()
    await phone.setViewportSize({ width: 390, height: 844 })
    await phone.goto(`${weft.baseUrl}/chat`)
    await phone.getByTestId('composer').waitFor()
    await phone.getByTestId('composer').fill('@mock.tokens 30 @mock.delay 0 10')
    await phone.getByTestId('composer').press('Enter')
    await phone.waitForURL(/\/chat\/[^/]+$/)
    await waitForPhase('done', phone)
    assert.equal(await lastReplyText(phone), words(30))
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth > window.innerWidth)
    assert.equal(overflow, false, 'no horizontal scrolling at 390 px')
    await shot(phone, '13-phone-chat')
    await phone.getByRole('button', { name: 'Menu' }).click()
    await phone.getByTestId('nav-sessions').waitFor({ state: 'visible' })
    await shot(phone, '14-phone-menu')
    await phone.keyboard.press('Escape')
    await phone.close()
  })

  test('runs under a strict Content-Security-Policy without violations', T, async () => {
    const resp = await page.goto(`${weft.baseUrl}/chat`)
    await page.getByTestId('composer').waitFor()
    const csp = resp.headers()['content-security-policy'] ?? ''
    assert.match(csp, /default-src 'self'/)
    assert.doesNotMatch(csp, /script-src[^;]*unsafe/)
    assert.deepEqual(cspViolations, [], 'every page so far worked within the policy')
  })

  test('signs out', T, async () => {
    await page.goto(`${weft.baseUrl}/chat`)
    await page.getByTestId('sign-out').click()
    await page.waitForURL(/\/login/)
    await page.goto(`${weft.baseUrl}/sessions`)
    await page.waitForURL(/\/login/)
  })

  test('an admin sees users, models and limits', T, async () => {
    await browser.context.clearCookies()
    await page.goto(`${weft.baseUrl}/login`)
    await page.locator('input[name=username]').fill(ADMIN)
    await page.locator('input[name=password]').fill(PASSWORD)
    await page.locator('button[type=submit]').click()
    await page.waitForURL(/\/chat$/)
    await page.goto(`${weft.baseUrl}/settings`)
    const users = page.getByTestId('users')
    await users.getByRole('cell', { name: USER, exact: true }).waitFor()
    await page.getByTestId('limits').locator('dd').first().waitFor()
    assert.ok((await page.getByTestId('models').locator('tbody tr').count()) >= 1)
    await page.setViewportSize({ width: 1280, height: 1700 })
    await shot(page, '15-settings-admin')
    await page.setViewportSize({ width: 1280, height: 860 })
  })
})
