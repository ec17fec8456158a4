// End-to-end: a user's own account on /settings — changing the password, the
// list of sign-ins and the files stored against the quota — against a real `weft up`, with two browsers signed in as the
// same user (two Chromium profiles, so two separate sign-ins).

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `acct_${crypto.randomBytes(3).toString('hex')}`
const OLD_PASSWORD = `old-${crypto.randomBytes(8).toString('hex')}`
const NEW_PASSWORD = `new-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 90_000 }

let weft
/** The browser the user works in, and a second one elsewhere. */
let here
let elsewhere
let page
let other
const cspViolations = []

async function signIn(p, password) {
  await p.goto(`${weft.baseUrl}/login`)
  await p.locator('input[name=username]').fill(USER)
  await p.locator('input[name=password]').fill(password)
  await p.locator('button[type=submit]').click()
}

async function signInOk(p, password) {
  await signIn(p, password)
  await p.waitForURL(/\/chat$/)
}

/** Waits until the sign-in list shows exactly n rows. */
async function waitForSignIns(n, p = page) {
  await p.waitForFunction((want) => document.querySelectorAll('[data-testid=sign-in-row]').length === want, n, {
    timeout: 15_000,
  })
}

async function openSettings(p = page) {
  await p.goto(`${weft.baseUrl}/settings`)
  await p.getByTestId('sign-ins').locator('[data-testid=sign-in-row]').first().waitFor()
}

/** The other browser is signed out: any signed-in page sends it to /login. */
async function assertSignedOut(p) {
  await p.goto(`${weft.baseUrl}/settings`)
  await p.waitForURL(/\/login/)
}

async function fillPassword(current, next, confirm) {
  await page.getByTestId('password-current').fill(current)
  await page.getByTestId('password-next').fill(next)
  await page.getByTestId('password-confirm').fill(confirm)
  await page.getByTestId('password-submit').click()
}

describe('your account: password and sign-ins', () => {
  before(async () => {
    weft = await startWeft(bin)
    await adminRequest(weft, 'POST', '/v1/admin/users', { username: USER, password: OLD_PASSWORD, role: 'user' })
    here = await launchBrowser()
    elsewhere = await launchBrowser()
    for (const b of [here, elsewhere]) {
      b.context.on('console', (m) => {
        if (/content security policy/i.test(m.text())) cspViolations.push(m.text())
      })
    }
    page = await here.context.newPage()
    other = await elsewhere.context.newPage()
  })

  after(async () => {
    await here?.close()
    await elsewhere?.close()
    await weft?.stop()
  })

  test('lists both sign-ins, this browser marked, and revokes the other one', T, async () => {
    await signInOk(page, OLD_PASSWORD)
    await signInOk(other, OLD_PASSWORD)
    await page.getByTestId('nav-settings').click()
    await page.waitForURL(/\/settings$/)
    await waitForSignIns(2)
    const mine = page.locator('[data-testid=sign-in-row][data-current]')
    assert.equal(await mine.count(), 1, 'exactly one row is this browser')
    assert.match(await mine.getByTestId('this-browser').textContent(), /this browser/)
    await shot(page, 'account-01-sign-ins')

    const theirs = page.locator('[data-testid=sign-in-row]:not([data-current])')
    // Cancelling the confirmation keeps it.
    page.once('dialog', (d) => d.dismiss())
    await theirs.getByTestId('revoke-sign-in').click()
    await page.reload()
    await waitForSignIns(2)

    page.once('dialog', (d) => d.accept())
    await page.locator('[data-testid=sign-in-row]:not([data-current])').getByTestId('revoke-sign-in').click()
    await waitForSignIns(1)
    assert.equal(await page.locator('[data-testid=sign-in-row][data-current]').count(), 1, 'this browser is what is left')
    // Gone for the server too, not only from the page: still one after a reload,
    // and the other browser is signed out.
    await page.reload()
    await waitForSignIns(1)
    await assertSignedOut(other)
  })

  test('shows the files you store against your quota', T, async () => {
    // A 1×1 PNG sent over the API as this user.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
    const call = async (method, path, body, token) => {
      const res = await fetch(`${weft.baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: body && JSON.stringify(body),
      })
      const text = await res.text()
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`)
      return text ? JSON.parse(text) : null
    }
    const { token } = await call('POST', '/v1/auth/login', { username: USER, password: OLD_PASSWORD })
    const session = await call('POST', '/v1/sessions', {}, token)
    await call('POST', `/v1/sessions/${session.id}/messages`, { text: 'keep this', attachments: [{ name: 'dot.png', data: png }] }, token)
    await page.goto(`${weft.baseUrl}/settings`)
    const used = page.getByTestId('storage-used')
    await used.waitFor()
    assert.match(await used.textContent(), /^\d+ B of 1 GiB used \(1%\)$/)
    await used.scrollIntoViewIfNeeded()
    await shot(page, 'account-02-storage')
    // This test's sign-in must not count in the ones below.
    await call('POST', '/v1/auth/logout', undefined, token)
  })

  test('refuses a new password that is too short or not repeated, and shows the server error', T, async () => {
    await openSettings()
    await fillPassword(OLD_PASSWORD, 'short', 'short')
    await page.getByTestId('password-error').filter({ hasText: 'at least 8 characters' }).waitFor()
    await fillPassword(OLD_PASSWORD, NEW_PASSWORD, `${NEW_PASSWORD}x`)
    await page.getByTestId('password-error').filter({ hasText: 'do not match' }).waitFor()
    // A wrong current password is the server's call, in its words.
    await fillPassword('not-my-password', NEW_PASSWORD, NEW_PASSWORD)
    await page.getByTestId('password-error').filter({ hasText: /current password is not correct/ }).waitFor()
    assert.equal(await page.getByTestId('password-changed').count(), 0)
    await shot(page, 'account-02-password-refused')
  })

  test('changes the password: other sign-ins end, the old password stops working, the new one works', T, async () => {
    await signInOk(other, OLD_PASSWORD)
    await openSettings()
    await waitForSignIns(2)
    await fillPassword(OLD_PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
    await page.getByTestId('password-changed').waitFor()
    assert.equal(await page.getByTestId('password-error').count(), 0)
    assert.equal(await page.getByTestId('password-current').inputValue(), '', 'the form is cleared')
    // The change signed the other browser out; the list says so at once.
    await waitForSignIns(1)
    await shot(page, 'account-03-password-changed')
    await assertSignedOut(other)

    // This browser stays signed in until it signs out.
    await page.goto(`${weft.baseUrl}/chat`)
    await page.getByTestId('sign-out').click()
    await page.waitForURL(/\/login/)
    await signIn(page, OLD_PASSWORD)
    await page.getByRole('alert').waitFor()
    assert.match(page.url(), /\/login/, 'the old password is refused')
    await signInOk(page, NEW_PASSWORD)
  })

  test('revoking this browser’s own sign-in signs it out', T, async () => {
    await openSettings()
    await waitForSignIns(1)
    page.once('dialog', (d) => d.accept())
    await page.locator('[data-testid=sign-in-row][data-current]').getByTestId('revoke-sign-in').click()
    await page.waitForURL(/\/login/)
    await assertSignedOut(page)
    // And it can sign in again with the new password.
    await signInOk(page, NEW_PASSWORD)
    assert.deepEqual(cspViolations, [], 'the settings pages worked within the Content-Security-Policy')
  })
})
