// Starts a real `weft up` on a free port with a fresh data dir, and a headless
// Debian Chromium driven by playwright-core. No browser is ever downloaded.

import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

export const ARTIFACTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'artifacts')
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

/** Fails loudly, before anything else, when there is nothing to test against. */
export function requireBinaries() {
  const bin = process.env.WEFT_BIN
  if (!bin) {
    throw new Error('WEFT_BIN is not set: point it at a built weft binary (e.g. target/debug/weft).')
  }
  if (!fs.existsSync(bin)) throw new Error(`WEFT_BIN=${bin} does not exist; build weft first.`)
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH.`)
  }
  return bin
}

/**
 * `opts.env`: extra environment for weft (e.g. `WEFT_TOOLS__POLICIES__CURRENT_TIME`);
 * `opts.log`: the server log's file name in `e2e/artifacts/` (one per suite).
 */
export async function startWeft(bin, opts = {}) {
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-data-'))
  const adminToken = `e2e-${crypto.randomBytes(18).toString('hex')}`
  const env = { ...process.env, ...opts.env, WEFT_ADMIN_TOKEN: adminToken }
  // The mock model must answer: no real provider keys leak in from the shell.
  for (const k of Object.keys(env)) if (/^(OPENAI|ANTHROPIC|DEEPSEEK)_/.test(k)) delete env[k]
  const log = fs.createWriteStream(path.join(ARTIFACTS, opts.log ?? 'weft.log'))
  const child = spawn(bin, ['up', '--listen', '127.0.0.1:0', '--data-dir', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout.pipe(log, { end: false })

  const baseUrl = await new Promise((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => {
      reject(new Error(`weft did not print "listening on http://…" within 60 s. Output so far:\n${buf}`))
    }, 60_000)
    child.stderr.on('data', (chunk) => {
      log.write(chunk)
      buf += chunk
      // Strip ANSI colours a pretty log format may add.
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(buf.replace(/\x1b\[[0-9;]*m/g, ''))
      if (m) {
        clearTimeout(timer)
        resolve(m[1])
      }
    })
    child.once('exit', (code, sig) => {
      clearTimeout(timer)
      reject(new Error(`weft exited early (code ${code}, signal ${sig}). Output:\n${buf}`))
    })
  })

  return {
    baseUrl,
    adminToken,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(t)
      }
      log.end()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export async function adminRequest(weft, method, urlPath, body) {
  const res = await fetch(weft.baseUrl + urlPath, {
    method,
    headers: { Authorization: `Bearer ${weft.adminToken}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${urlPath} → ${res.status}: ${text}`)
  return text ? JSON.parse(text) : undefined
}

/** `opts.timezoneId`: the browser's own timezone (IANA), else the machine's. */
export async function launchBrowser(opts = {}) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    locale: 'en-US',
    timezoneId: opts.timezoneId,
    viewport: { width: 1280, height: 860 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  return {
    context,
    async close() {
      await context.close()
      fs.rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** Signs `username` in through the login page (cookies cleared first); resolves on /chat. */
export async function signIn(page, baseUrl, username, password) {
  await page.context().clearCookies()
  await page.goto(`${baseUrl}/login`)
  await page.locator('input[name=username]').fill(username)
  await page.locator('input[name=password]').fill(password)
  await page.locator('button[type=submit]').click()
  await page.waitForURL(/\/chat$/)
}

export function words(n) {
  return Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ')
}

export function shot(page, name, opts = {}) {
  return page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), ...opts })
}

/** Nothing on the page is wider than the window (no sideways scrolling). */
export async function assertFitsWidth(page, what) {
  const { doc, main, width } = await page.evaluate(() => {
    const m = document.querySelector('main')
    return { doc: document.documentElement.scrollWidth, main: m.scrollWidth - m.clientWidth, width: window.innerWidth }
  })
  assert.ok(doc <= width, `${what}: the page is ${doc}px wide at ${width}px`)
  assert.ok(main <= 0, `${what}: the main area scrolls sideways by ${main}px`)
}

/**
 * A TCP proxy in front of weft that can cut every open connection and refuse new
 * ones for a while: a real network drop, as a browser's own offline emulation
 * leaves established streams alone.
 */
export async function startDropProxy(targetUrl) {
  const target = new URL(targetUrl)
  const sockets = new Set()
  let refusing = false
  const server = net.createServer((client) => {
    if (refusing) return client.destroy()
    const upstream = net.connect(Number(target.port), target.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** cut everything and refuse connections until restore() */
    drop() {
      refusing = true
      for (const s of sockets) s.destroy()
    },
    restore() {
      refusing = false
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise((r) => server.close(r))
    },
  }
}
