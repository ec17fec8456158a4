import { describe, expect, it, vi } from 'vitest'
import { ApiError, createApi, errorFromBody, runEventsUrl, withQuery } from './api'

interface Call {
  url: string
  init: RequestInit
}

function fakeFetch(respond: (call: Call) => Response | Promise<Response>) {
  const calls: Call[] = []
  const fn = vi.fn(async (url: RequestInfo | URL, init?: RequestInit) => {
    const call = { url: String(url), init: init ?? {} }
    calls.push(call)
    return respond(call)
  })
  return { fetch: fn as unknown as typeof fetch, calls }
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } })

const headersOf = (c: Call) => c.init.headers as Record<string, string>

describe('api client', () => {
  it('GETs with cookies and no body', async () => {
    const f = fakeFetch(() => json(200, { id: 'u1', username: 'ann', role: 'user', created_at: '2025-01-01T00:00:00Z' }))
    const api = createApi({ fetch: f.fetch })
    const me = await api.me()
    expect(me.username).toBe('ann')
    expect(f.calls[0].url).toBe('/v1/me')
    expect(f.calls[0].init.method).toBe('GET')
    expect(f.calls[0].init.body).toBeUndefined()
    expect(f.calls[0].init.credentials).toBe('same-origin')
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBeUndefined()
  })

  it('sends writes as JSON with the CSRF header, `{}` when there is no body', async () => {
    const f = fakeFetch(() => new Response(null, { status: 202 }))
    const api = createApi({ fetch: f.fetch })
    await api.cancelRun('r/1')
    const c = f.calls[0]
    expect(c.url).toBe('/v1/runs/r%2F1/cancel')
    expect(c.init.method).toBe('POST')
    expect(c.init.body).toBe('{}')
    expect(headersOf(c)['Content-Type']).toBe('application/json')
    expect(headersOf(c)['X-Weft-Csrf']).toBe('1')
  })

  it('sends a message with an Idempotency-Key and returns the 202 body', async () => {
    const f = fakeFetch(() => json(202, { run_id: 'r1', message_id: 'm1', status: 'queued' }))
    const api = createApi({ fetch: f.fetch, baseUrl: 'http://gw' })
    const r = await api.sendMessage('s1', { text: 'hi', model: 'mock', multitask: 'enqueue' }, 'key-1')
    expect(r).toEqual({ run_id: 'r1', message_id: 'm1', status: 'queued' })
    expect(f.calls[0].url).toBe('http://gw/v1/sessions/s1/messages')
    expect(JSON.parse(f.calls[0].init.body as string)).toEqual({ text: 'hi', model: 'mock', multitask: 'enqueue' })
    expect(headersOf(f.calls[0])['Idempotency-Key']).toBe('key-1')
  })

  it('reports a message queued behind an active run', async () => {
    const f = fakeFetch(() => json(202, { status: 'queued', message_id: 'm2', active_run_id: 'r1' }))
    const r = await createApi({ fetch: f.fetch }).sendMessage('s1', { text: 'again' })
    expect(r.run_id).toBeUndefined()
    expect(r).toMatchObject({ status: 'queued', active_run_id: 'r1' })
  })

  it('builds list queries, leaving out empty parameters', async () => {
    const f = fakeFetch(() => json(200, { sessions: [], next_cursor: null }))
    const api = createApi({ fetch: f.fetch })
    await api.listSessions({ q: 'rust & 中文', limit: 20, cursor: null })
    await api.listSessions({ q: '', cursor: 'abc' })
    expect(f.calls[0].url).toBe('/v1/sessions?q=rust+%26+%E4%B8%AD%E6%96%87&limit=20')
    expect(f.calls[1].url).toBe('/v1/sessions?cursor=abc')
    expect(withQuery('/x')).toBe('/x')
  })

  it('unwraps list envelopes', async () => {
    const f = fakeFetch((c) =>
      c.url.endsWith('/models')
        ? json(200, { models: [{ id: 'mock', provider: 'mock', default: true }] })
        : json(200, {
            tokens: [
              { id: 't0', name: 'login', kind: 'login', created_at: 'x', last_used_at: null, expires_at: 'y', current: true },
              { id: 't1', name: 'cli', kind: 'api', created_at: 'x', last_used_at: null, expires_at: null, current: false },
            ],
          }),
    )
    const api = createApi({ fetch: f.fetch })
    expect((await api.models())[0].id).toBe('mock')
    // Web sessions are listed by the API too, but not as API tokens.
    expect((await api.listTokens()).map((t) => t.name)).toEqual(['cli'])
  })

  it('changes the password with {current, new} and lists sign-ins with every token', async () => {
    const f = fakeFetch((c) =>
      c.url === '/v1/me/password'
        ? new Response(null, { status: 204 })
        : json(200, {
            tokens: [
              { id: 't0', name: 'login', kind: 'login', created_at: 'x', last_used_at: null, expires_at: 'y', current: true },
              { id: 't1', name: 'cli', kind: 'api', created_at: 'x', last_used_at: null, expires_at: null, current: false },
            ],
          }),
    )
    const api = createApi({ fetch: f.fetch })
    await expect(api.changePassword({ current: 'old-pass', new: 'new-pass-1' })).resolves.toBeUndefined()
    expect(f.calls[0].init.method).toBe('POST')
    expect(JSON.parse(f.calls[0].init.body as string)).toEqual({ current: 'old-pass', new: 'new-pass-1' })
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBe('1')
    expect((await api.listAllTokens()).map((t) => t.kind)).toEqual(['login', 'api'])
    expect(f.calls[1].url).toBe('/v1/tokens')
  })

  it('carries the server message of a refused password change', async () => {
    const f = fakeFetch(() =>
      json(422, { error: { code: 'validation_failed', message: 'the current password is not correct' } }),
    )
    const err = await createApi({ fetch: f.fetch })
      .changePassword({ current: 'wrong', new: 'new-pass-1' })
      .catch((e) => e)
    expect(err).toMatchObject({ status: 422, code: 'validation_failed', message: 'the current password is not correct' })
  })

  it('throws ApiError from the error envelope', async () => {
    const f = fakeFetch(() =>
      json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'Retry-After': '7' }),
    )
    const err = await createApi({ fetch: f.fetch })
      .sendMessage('s', { text: 'x' })
      .catch((e) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 429, code: 'rate_limited', message: 'slow down', retryAfter: 7 })
  })

  it('falls back to the status when the error body is not JSON', async () => {
    const f = fakeFetch(() => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }))
    const err = await createApi({ fetch: f.fetch })
      .getRun('r')
      .catch((e) => e)
    expect(err).toMatchObject({ status: 502, code: 'http_502', message: 'Bad Gateway' })
  })

  it('turns a network failure into ApiError status 0', async () => {
    const api = createApi({
      fetch: (async () => {
        throw new TypeError('Failed to fetch')
      }) as unknown as typeof fetch,
    })
    await expect(api.getSession('s')).rejects.toMatchObject({ status: 0, code: 'network_error' })
  })

  it('calls onUnauthorized on 401, but not for the auth endpoints', async () => {
    const onUnauthorized = vi.fn()
    const f = fakeFetch(() => json(401, { error: { code: 'unauthorized', message: 'sign in' } }))
    const api = createApi({ fetch: f.fetch, onUnauthorized })
    await expect(api.me()).rejects.toMatchObject({ status: 401 })
    await expect(api.login('a', 'b')).rejects.toMatchObject({ status: 401 })
    expect(onUnauthorized).not.toHaveBeenCalled()
    await expect(api.listSessions()).rejects.toMatchObject({ code: 'unauthorized' })
    expect(onUnauthorized).toHaveBeenCalledTimes(1)
  })

  it('returns undefined for 204 and empty bodies', async () => {
    const f = fakeFetch(() => new Response(null, { status: 204 }))
    const api = createApi({ fetch: f.fetch })
    await expect(api.deleteSession('s1')).resolves.toBeUndefined()
    expect(f.calls[0].init.method).toBe('DELETE')
    expect(f.calls[0].init.body).toBe('{}')
  })

  it('patches users and sessions with only the given fields', async () => {
    const f = fakeFetch(() => json(200, {}))
    const api = createApi({ fetch: f.fetch })
    await api.updateUser('u1', { role: 'admin' })
    await api.updateSession('s1', { title: 'New name' })
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['PATCH', '/v1/admin/users/u1', '{"role":"admin"}'],
      ['PATCH', '/v1/sessions/s1', '{"title":"New name"}'],
    ])
  })

  it('decides an approval with {decision} and returns the approval; a late decision is a 409 with its reason', async () => {
    const decided = {
      id: 'ap_1',
      run_id: 'r1',
      session_id: 's1',
      call_id: 'c1',
      name: 'current_time',
      args: {},
      step: 1,
      status: 'approved',
      decided_by: 'alice',
      created_at: 'x',
      expires_at: 'y',
    }
    const f = fakeFetch((c) =>
      c.url.endsWith('/ap_1')
        ? json(200, decided)
        : json(409, { error: { code: 'already_decided', message: 'already denied by bob' } }),
    )
    const api = createApi({ fetch: f.fetch })
    await expect(api.decideApproval('ap_1', 'always')).resolves.toEqual(decided)
    expect(f.calls[0].url).toBe('/v1/approvals/ap_1')
    expect(f.calls[0].init.method).toBe('POST')
    expect(JSON.parse(f.calls[0].init.body as string)).toEqual({ decision: 'always' })
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBe('1')
    await expect(api.decideApproval('ap_2', 'deny')).rejects.toMatchObject({
      status: 409,
      code: 'already_decided',
      message: 'already denied by bob',
    })
  })

  it('answers a question with a text or several options, and lists the open ones', async () => {
    const answered = { id: 'q1', status: 'answered', answer: ['blue'], answered_by: 'ann' }
    const f = fakeFetch((c) =>
      c.url.endsWith('/questions')
        ? json(200, { questions: [] })
        : c.url.endsWith('/q2')
          ? json(409, { error: { code: 'already_answered', message: 'already answered by bob: red' } })
          : json(200, answered),
    )
    const api = createApi({ fetch: f.fetch })
    await expect(api.answerQuestion('q1', 'blue')).resolves.toEqual(answered)
    await api.answerQuestion('q/1', ['red', 'blue'])
    await expect(api.answerQuestion('q2', 'red')).rejects.toMatchObject({
      status: 409,
      code: 'already_answered',
      message: 'already answered by bob: red',
    })
    await expect(api.listQuestions('s/1')).resolves.toEqual([])
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['POST', '/v1/questions/q1', '{"answer":"blue"}'],
      ['POST', '/v1/questions/q%2F1', '{"answer":["red","blue"]}'],
      ['POST', '/v1/questions/q2', '{"answer":"red"}'],
      ['GET', '/v1/sessions/s%2F1/questions', undefined],
    ])
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBe('1')
  })

  it('decides a plan with {decision} (and a comment for revise), lists a run\'s and a session\'s plans', async () => {
    const revised = { id: 'pl_1', status: 'revised', comment: 'Test it too.', decided_by: 'ann' }
    const f = fakeFetch((c) =>
      c.url.endsWith('/plans')
        ? json(200, { plans: [revised] })
        : c.url.endsWith('/pl_2')
          ? json(409, { error: { code: 'already_decided', message: 'already approved by bob' } })
          : json(200, revised),
    )
    const api = createApi({ fetch: f.fetch })
    await expect(api.decidePlan('pl_1', 'revise', 'Test it too.')).resolves.toEqual(revised)
    await api.decidePlan('pl/1', 'approve')
    await expect(api.decidePlan('pl_2', 'reject')).rejects.toMatchObject({
      status: 409,
      code: 'already_decided',
      message: 'already approved by bob',
    })
    await expect(api.runPlans('r/1')).resolves.toEqual([revised])
    await expect(api.listPlans('s1')).resolves.toEqual([revised])
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['POST', '/v1/plans/pl_1', '{"decision":"revise","comment":"Test it too."}'],
      ['POST', '/v1/plans/pl%2F1', '{"decision":"approve"}'],
      ['POST', '/v1/plans/pl_2', '{"decision":"reject"}'],
      ['GET', '/v1/runs/r%2F1/plans', undefined],
      ['GET', '/v1/sessions/s1/plans', undefined],
    ])
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBe('1')
  })

  it('lists a run\'s delegations', async () => {
    const d = { id: 'dl_1', call_id: 'call_1', agent: 'researcher', status: 'succeeded' }
    const f = fakeFetch(() => json(200, { delegations: [d] }))
    const api = createApi({ fetch: f.fetch })
    await expect(api.runDelegations('r/1')).resolves.toEqual([d])
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['GET', '/v1/runs/r%2F1/delegations', undefined],
    ])
  })

  it('lists a session\'s pending approvals and the MCP status', async () => {
    const f = fakeFetch((c) =>
      c.url.endsWith('/approvals') ? json(200, { approvals: [] }) : json(200, { configured: [], workers: [] }),
    )
    const api = createApi({ fetch: f.fetch })
    await expect(api.listApprovals('s/1')).resolves.toEqual([])
    await expect(api.mcpStatus()).resolves.toEqual({ configured: [], workers: [] })
    expect(f.calls.map((c) => [c.init.method, c.url])).toEqual([
      ['GET', '/v1/sessions/s%2F1/approvals'],
      ['GET', '/v1/mcp'],
    ])
  })

  it('reads the unread count and marks notifications read, some or all', async () => {
    const f = fakeFetch((c) => (c.init.method === 'GET' ? json(200, { notifications: [], unread: 3 }) : new Response(null, { status: 204 })))
    const api = createApi({ fetch: f.fetch })
    await expect(api.notifications({ unread: true, limit: 1 })).resolves.toEqual({ notifications: [], unread: 3 })
    await api.notifications({ limit: 50 })
    await expect(api.markNotificationsRead(['n1'])).resolves.toBeUndefined()
    await api.markNotificationsRead()
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['GET', '/v1/me/notifications?unread=true&limit=1', undefined],
      ['GET', '/v1/me/notifications?limit=50', undefined],
      ['POST', '/v1/me/notifications/read', '{"ids":["n1"]}'],
      ['POST', '/v1/me/notifications/read', '{}'],
    ])
  })

  it('makes, tests and lists a channel’s deliveries, and carries a refusal’s field', async () => {
    const made = { id: 'c/1', name: 'ops', target: { kind: 'webhook', url: 'https://x/h', secret: 'whsec_1' }, schedules: 0 }
    const f = fakeFetch((c) => {
      if (c.url === '/v1/channels' && c.init.method === 'POST') {
        const body = JSON.parse(c.init.body as string)
        return body.name === 'bad'
          ? json(422, { error: { code: 'validation_failed', message: 'target.url: refused: 10.0.0.1 is a private address' } })
          : json(201, made)
      }
      if (c.url.endsWith('/test')) return json(202, { id: 'd1', status: 'pending' })
      if (c.url.includes('/deliveries')) return json(200, { deliveries: [{ id: 'd1', status: 'delivered' }] })
      if (c.url === '/v1/channels') return json(200, { channels: [made] })
      return new Response(null, { status: 204 })
    })
    const api = createApi({ fetch: f.fetch })
    await expect(api.createChannel({ name: 'ops', target: { kind: 'webhook', url: 'https://x/h' } })).resolves.toEqual(made)
    await expect(api.listChannels()).resolves.toEqual([made])
    await expect(api.testChannel('c/1')).resolves.toEqual({ id: 'd1', status: 'pending' })
    await expect(api.channelDeliveries('c/1', 20)).resolves.toEqual([{ id: 'd1', status: 'delivered' }])
    await api.updateChannel('c/1', { name: 'ops2' })
    await api.deleteChannel('c/1')
    const refused = await api.createChannel({ name: 'bad', target: { kind: 'webhook', url: 'http://10.0.0.1/x' } }).catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ status: 422, message: 'target.url: refused: 10.0.0.1 is a private address' })
    expect(f.calls.map((c) => [c.init.method, c.url])).toEqual([
      ['POST', '/v1/channels'],
      ['GET', '/v1/channels'],
      ['POST', '/v1/channels/c%2F1/test'],
      ['GET', '/v1/channels/c%2F1/deliveries?limit=20'],
      ['PATCH', '/v1/channels/c%2F1'],
      ['DELETE', '/v1/channels/c%2F1'],
      ['POST', '/v1/channels'],
    ])
    expect(f.calls[2].init.body).toBe('{}')
  })

  it('reads, sets and clears your timezone with PUT {timezone}, and carries a refused name’s 422', async () => {
    const f = fakeFetch((c) => {
      if (c.init.method === 'GET') return json(200, { timezone: null, effective: 'UTC' })
      const { timezone } = JSON.parse(c.init.body as string)
      if (timezone === 'Mars/Olympus') {
        return json(422, {
          error: { code: 'validation_failed', message: 'timezone: "Mars/Olympus" is not an IANA timezone (e.g. Asia/Shanghai, Europe/Berlin, UTC)' },
        })
      }
      return json(200, { timezone, effective: timezone ?? 'UTC' })
    })
    const api = createApi({ fetch: f.fetch })
    await expect(api.myTimezone()).resolves.toEqual({ timezone: null, effective: 'UTC' })
    await expect(api.setMyTimezone('Asia/Shanghai')).resolves.toEqual({ timezone: 'Asia/Shanghai', effective: 'Asia/Shanghai' })
    await expect(api.setMyTimezone(null)).resolves.toEqual({ timezone: null, effective: 'UTC' })
    const refused = await api.setMyTimezone('Mars/Olympus').catch((e) => e)
    expect(refused).toBeInstanceOf(ApiError)
    expect(refused).toMatchObject({ status: 422, code: 'validation_failed' })
    expect(refused.message).toMatch(/^timezone: "Mars\/Olympus" is not an IANA timezone/)
    expect(f.calls.map((c) => [c.init.method, c.url, c.init.body])).toEqual([
      ['GET', '/v1/me/timezone', undefined],
      ['PUT', '/v1/me/timezone', '{"timezone":"Asia/Shanghai"}'],
      // Clearing sends an explicit null, not an empty body.
      ['PUT', '/v1/me/timezone', '{"timezone":null}'],
      ['PUT', '/v1/me/timezone', '{"timezone":"Mars/Olympus"}'],
    ])
    expect(headersOf(f.calls[1])['X-Weft-Csrf']).toBe('1')
  })

  it('builds the run events URL, with ?after only for a real seq', () => {
    expect(runEventsUrl('r1')).toBe('/v1/runs/r1/events')
    expect(runEventsUrl('r1', 0)).toBe('/v1/runs/r1/events')
    expect(runEventsUrl('r1', 17)).toBe('/v1/runs/r1/events?after=17')
  })
})

describe('agents, instructions and turns', () => {
  it('PUTs an agent and your instructions as JSON with the CSRF header', async () => {
    const f = fakeFetch((c) => json(200, c.url.endsWith('/instructions') ? { instructions: 'be brief' } : { id: 'x' }))
    const api = createApi({ fetch: f.fetch })
    await api.putAgent('pir ate', { name: 'Pirate', tools: null, default: false })
    expect(f.calls[0].url).toBe('/v1/admin/agents/pir%20ate')
    expect(f.calls[0].init.method).toBe('PUT')
    expect(headersOf(f.calls[0])['X-Weft-Csrf']).toBe('1')
    expect(JSON.parse(f.calls[0].init.body as string)).toEqual({ name: 'Pirate', tools: null, default: false })
    expect(await api.setInstructions('be brief')).toBe('be brief')
    expect(JSON.parse(f.calls[1].init.body as string)).toEqual({ instructions: 'be brief' })
  })

  it('has no summary (null) on 404, and surfaces other errors', async () => {
    const missing = fakeFetch(() => json(404, { error: { code: 'not_found', message: 'not found' } }))
    expect(await createApi({ fetch: missing.fetch }).summary('s1')).toBeNull()
    expect(missing.calls[0].url).toBe('/v1/sessions/s1/summary')
    const broken = fakeFetch(() => json(500, { error: { code: 'internal', message: 'boom' } }))
    await expect(createApi({ fetch: broken.fetch }).summary('s1')).rejects.toMatchObject({ status: 500 })
  })

  it('carries a refused undo’s 409 code and message', async () => {
    const f = fakeFetch(() => json(409, { error: { code: 'nothing_to_undo', message: 'nothing to undo' } }))
    const err = await createApi({ fetch: f.fetch }).undo('s1').catch((e) => e)
    expect(f.calls[0].url).toBe('/v1/sessions/s1/undo')
    expect(f.calls[0].init.method).toBe('POST')
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 409, code: 'nothing_to_undo', message: 'nothing to undo' })
  })

  it('edits the last message and chooses an alternative by run id', async () => {
    const f = fakeFetch(() => json(202, { run_id: 'r2' }))
    const api = createApi({ fetch: f.fetch })
    expect(await api.editLast('s1', 'new text')).toEqual({ run_id: 'r2' })
    expect(JSON.parse(f.calls[0].init.body as string)).toEqual({ text: 'new text' })
    await api.chooseAlternative('s1', 'r/1')
    expect(f.calls[1].url).toBe('/v1/sessions/s1/alternatives/r%2F1')
  })

  it('reads a document around a cited chunk, or after an ord; a gone document is a 404', async () => {
    const page = { chunks: [{ id: 'c7', ord: 7, text: 'Everyone gets 25 vacation days.', position: 'Handbook > Leave' }], total: 9 }
    const f = fakeFetch(() => json(200, page))
    const api = createApi({ fetch: f.fetch })
    expect(await api.documentChunks('kb 1', 'd/2', { around: 'c7', limit: 20 })).toEqual(page)
    await api.documentChunks('kb1', 'd2', { after: 26, limit: 20 })
    expect(f.calls.map((c) => c.url)).toEqual([
      '/v1/knowledge/kb%201/documents/d%2F2/chunks?around=c7&limit=20',
      '/v1/knowledge/kb1/documents/d2/chunks?after=26&limit=20',
    ])
    const gone = fakeFetch(() => json(404, { error: { code: 'not_found', message: 'not found' } }))
    await expect(createApi({ fetch: gone.fetch }).documentChunks('kb1', 'd2', { around: 'c7' })).rejects.toMatchObject({
      status: 404,
    })
  })
})

describe('knowledge', () => {
  it('lists bases, searches with top_k and reads the error envelope of a refusal', async () => {
    const f = fakeFetch((c) => {
      if (c.url === '/v1/knowledge' && c.init.method === 'GET') return json(200, { knowledge_bases: [{ id: 'k1', name: 'handbook' }] })
      if (c.url.endsWith('/search')) return json(200, { results: [], mode: 'lexical' })
      return json(409, { error: { code: 'conflict', message: 'you already have a knowledge base named handbook' } })
    })
    const api = createApi({ fetch: f.fetch })
    expect((await api.listKnowledge()).map((b) => b.name)).toEqual(['handbook'])
    await api.searchKnowledge('k/1', 'vacation', 3)
    expect(f.calls[1].url).toBe('/v1/knowledge/k%2F1/search')
    expect(JSON.parse(f.calls[1].init.body as string)).toEqual({ query: 'vacation', top_k: 3 })
    const err = await api.createKnowledge({ name: 'handbook' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 409, code: 'conflict', message: 'you already have a knowledge base named handbook' })
  })

  it("turns an upload's refusal into the server's message, or the status line when there is no envelope", () => {
    const body = JSON.stringify({ error: { code: 'payload_too_large', message: 'knowledge.max_document_bytes: big.pdf is 60 MiB' } })
    expect(errorFromBody(413, 'Payload Too Large', body)).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      message: 'knowledge.max_document_bytes: big.pdf is 60 MiB',
    })
    expect(errorFromBody(502, 'Bad Gateway', '<html>')).toMatchObject({ status: 502, code: 'http_502', message: 'Bad Gateway' })
    expect(errorFromBody(500, '', '')).toMatchObject({ message: 'HTTP 500' })
  })
})

describe('memory', () => {
  it('lists with an optional search, writes with the CSRF header and reads the answers', async () => {
    const f = fakeFetch((c) => {
      if (c.init.method === 'GET') return json(200, { memories: [], enabled: true, available: true })
      if (c.url === '/v1/me/memories' && c.init.method === 'DELETE') return json(200, { deleted: 3 })
      if (c.url === '/v1/me/memory') return json(200, JSON.parse(c.init.body as string))
      if (c.init.method === 'DELETE') return new Response(null, { status: 204 })
      return json(c.init.method === 'POST' ? 201 : 200, { id: 'mem_1', ...JSON.parse(c.init.body as string) })
    })
    const api = createApi({ fetch: f.fetch })
    await api.listMemories({ q: '' })
    await api.listMemories({ q: 'tea & 茶' })
    expect(f.calls.map((c) => c.url)).toEqual(['/v1/me/memories', '/v1/me/memories?q=tea+%26+%E8%8C%B6'])

    await api.addMemory({ text: 'I like tea', kind: 'fact', pinned: true })
    await api.updateMemory('mem/1', { pinned: false })
    await api.deleteMemory('mem/1')
    expect(await api.forgetMemories()).toBe(3)
    expect(await api.setMemoryEnabled(false)).toBe(false)
    const writes = f.calls.slice(2)
    expect(writes.map((c) => `${c.init.method} ${c.url}`)).toEqual([
      'POST /v1/me/memories',
      'PATCH /v1/me/memories/mem%2F1',
      'DELETE /v1/me/memories/mem%2F1',
      'DELETE /v1/me/memories',
      'PATCH /v1/me/memory',
    ])
    for (const c of writes) expect(headersOf(c)['X-Weft-Csrf']).toBe('1')
    expect(JSON.parse(writes[0].init.body as string)).toEqual({ text: 'I like tea', kind: 'fact', pinned: true })
    expect(JSON.parse(writes[1].init.body as string)).toEqual({ pinned: false })
    expect(JSON.parse(writes[4].init.body as string)).toEqual({ enabled: false })
  })

  it("carries the server's refusal of a secret", async () => {
    const message = 'that looks like a secret (a password); secrets are never remembered'
    const f = fakeFetch(() => json(422, { error: { code: 'validation_failed', message } }))
    const err = await createApi({ fetch: f.fetch })
      .addMemory({ text: 'my password is hunter22', kind: 'fact' })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 422, code: 'validation_failed', message })
  })
})
