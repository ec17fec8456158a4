// End-to-end: the agent asks the person a question (`ask_user`, docs/protocol.md,
// "Questions") and the run waits (`waiting_input`) until it is answered from the
// question card. The mock model calls the tool when asked with
// `@mock.tool ask_user {…}` and, given the answer, says
// `tool ask_user said: The user (<name>) answered: <answer>`.

import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { adminRequest, assertFitsWidth, launchBrowser, requireBinaries, shot, startWeft } from './harness.mjs'

const bin = requireBinaries()
const USER = `ques_${crypto.randomBytes(3).toString('hex')}`
const PASSWORD = `pw-${crypto.randomBytes(8).toString('hex')}`
const T = { timeout: 90_000 }
const COLOUR = { question: 'Which colour?', options: ['red', 'blue'] }

let weft
let browser
let page

const lastReply = () => page.locator('[data-testid=reply]').last()
const lastQuestion = () => lastReply().getByTestId('question')
const ask = (args, before = '') => `${before}@mock.tool ask_user ${JSON.stringify(args)}`

async function lastReplyText() {
  const parts = await lastReply().locator('[data-testid=reply-text]').allTextContents()
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

/** A new conversation whose first message makes the agent ask; resolves once its question waits. */
async function startAsking(text) {
  await page.goto(`${weft.baseUrl}/chat`)
  const box = page.getByTestId('composer')
  await box.fill(text)
  await box.press('Enter')
  await page.waitForURL(/\/chat\/[^/]+$/)
  await waitForQuestion()
}

async function waitForQuestion() {
  await lastQuestion().and(page.locator('[data-status=pending]')).waitFor({ timeout: 60_000 })
  await waitForPhase('waiting_input')
}

/** The answer's POST, once the card sent it: its status and body. */
function answerPosted() {
  return page
    .waitForResponse((r) => /\/v1\/questions\/[^/]+$/.test(r.url()) && r.request().method() === 'POST')
    .then((r) => ({ status: r.status(), body: JSON.parse(r.request().postData()) }))
}

async function outcomeOf(card) {
  await card.and(page.locator('[data-status=answered], [data-status=expired]')).waitFor({ timeout: 60_000 })
  return (await card.getByTestId('question-outcome').textContent()).trim()
}

describe('questions the agent asks, in the web UI', () => {
  before(async () => {
    weft = await startWeft(bin, { log: 'weft-questions.log' })
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

  test('the run waits for a choice; a click on an option answers, and the agent goes on with it', T, async () => {
    await startAsking(ask(COLOUR, '@mock.reply Let me ask. '))
    const card = lastQuestion()
    assert.equal((await card.getByTestId('question-text').textContent()).trim(), 'Which colour?')
    assert.deepEqual(
      (await card.getByTestId('question-option').allTextContents()).map((s) => s.trim()),
      ['red', 'blue'],
    )
    // A typed answer is taken too unless the agent said otherwise.
    assert.equal(await card.getByTestId('question-input').count(), 1)
    // The default question_ttl is 30 minutes or more; the card says when it ends.
    assert.match(await card.getByTestId('question-expiry').textContent(), /^Expires at .+ \(in /)
    assert.equal(await lastReplyText(), 'Let me ask.')
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'the question is not shown as a tool card too')
    await shot(page, 'question-1-waiting')

    const posted = answerPosted()
    await card.getByTestId('question-option').filter({ hasText: 'blue' }).click()
    const { status, body } = await posted
    assert.equal(status, 200)
    assert.deepEqual(body, { answer: 'blue' })

    await waitForPhase('done')
    assert.equal(await outcomeOf(card), `Answered by ${USER}: blue`)
    assert.equal(await lastReplyText(), `Let me ask.\n\ntool ask_user said: The user (${USER}) answered: blue`)
    assert.equal(await card.getByTestId('question-option').count(), 0, 'the options are gone')
    assert.equal(await page.getByTestId('question').count(), 1, 'one card for the one question')
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'the answered call stays the question card')
    await shot(page, 'question-2-answered')

    // After a reload the finished reply shows the answered card again, not a tool card.
    await page.reload()
    const again = lastQuestion()
    assert.equal(await outcomeOf(again), `Answered by ${USER}: blue`)
    assert.equal((await again.getByTestId('question-text').textContent()).trim(), 'Which colour?')
    assert.equal(await again.getByTestId('question-option').count(), 0, 'nothing to answer any more')
    assert.equal(await page.getByTestId('tool-call').count(), 0, 'not a tool card after a reload')
  })

  test('a typed answer is sent as text, from a phone, when the options do not fit', T, async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      const long = {
        question: 'Which colour should the quarterly report use for its charts and headings?',
        options: ['a rather long option that has to wrap on a phone screen', 'blue'],
      }
      await startAsking(ask(long))
      const card = lastQuestion()
      await card.scrollIntoViewIfNeeded()
      await assertFitsWidth(page, 'a question at phone width')
      await shot(page, 'question-3-phone')

      const input = card.getByTestId('question-input')
      assert.equal(await card.getByTestId('question-send').isDisabled(), true, 'nothing to send yet')
      await input.fill('  teal green ')
      const posted = answerPosted()
      await input.press('Enter')
      const { status, body } = await posted
      assert.equal(status, 200)
      assert.deepEqual(body, { answer: 'teal green' })

      await waitForPhase('done')
      assert.equal(await outcomeOf(card), `Answered by ${USER}: teal green`)
      assert.equal(await lastReplyText(), `tool ask_user said: The user (${USER}) answered: teal green`)
      await assertFitsWidth(page, 'an answered question at phone width')
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 })
    }
  })

  test('after a reload the waiting question is back; several choices go as a list', T, async () => {
    await startAsking(
      ask({ question: 'Which toppings?', options: ['cheese', 'ham', 'olives'], multiple: true, allow_text: false }),
    )
    await page.reload()
    await waitForQuestion()
    const card = lastQuestion()
    assert.equal(await card.getByTestId('question-input').count(), 0, 'no typed answer for this one')
    assert.equal(await card.getByTestId('question-check').count(), 3)
    const send = card.getByTestId('question-send-choices')
    assert.equal(await send.isDisabled(), true, 'nothing ticked yet')
    await card.locator('label', { hasText: 'olives' }).click()
    await card.locator('label', { hasText: 'cheese' }).click()
    const posted = answerPosted()
    await send.click()
    const { status, body } = await posted
    assert.equal(status, 200)
    assert.deepEqual(body, { answer: ['cheese', 'olives'] })

    await waitForPhase('done')
    assert.equal(await outcomeOf(card), `Answered by ${USER}: cheese, olives`)
    assert.equal(await lastReplyText(), `tool ask_user said: The user (${USER}) chose: "cheese", "olives"`)
  })

  test('without the event stream the card comes from the open list; a late answer shows the 409 inline', T, async () => {
    await startAsking(ask(COLOUR))
    const url = page.url()
    const sessionId = url.split('/').pop()
    // The stream of this run is unreachable now, as if its event log were gone.
    await page.route('**/v1/runs/*/events*', (route) => route.abort())
    await page.goto(url)
    await lastQuestion().getByTestId('question-option').first().waitFor({ timeout: 60_000 })
    const card = lastQuestion()

    // Someone else (here: the user's own API token) answers meanwhile.
    const login = await fetch(`${weft.baseUrl}/v1/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: USER, password: PASSWORD }),
    }).then((r) => r.json())
    const auth = { Authorization: `Bearer ${login.token}`, 'Content-Type': 'application/json' }
    const { questions } = await fetch(`${weft.baseUrl}/v1/sessions/${sessionId}/questions`, { headers: auth }).then(
      (r) => r.json(),
    )
    assert.equal(questions.length, 1)
    const answered = await fetch(`${weft.baseUrl}/v1/questions/${questions[0].id}`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ answer: 'red' }),
    })
    assert.equal(answered.status, 200)

    const posted = answerPosted()
    await card.getByTestId('question-option').filter({ hasText: 'blue' }).click()
    assert.equal((await posted).status, 409)
    const error = card.getByTestId('question-error')
    await error.waitFor()
    assert.equal((await error.textContent()).trim(), `already answered by ${USER}: red`)
    assert.equal(await card.getByTestId('question-option').count(), 0, 'no second try at an answered question')
    await shot(page, 'question-4-conflict')

    // The stream comes back: the answer that stands and the rest of the reply arrive.
    await page.unroute('**/v1/runs/*/events*')
    await waitForPhase('done')
    assert.equal(await outcomeOf(lastQuestion()), `Answered by ${USER}: red`)
    assert.equal(await lastReplyText(), `tool ask_user said: The user (${USER}) answered: red`)
  })
})
