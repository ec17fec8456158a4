import { describe, expect, it, vi } from 'vitest'
import { createApi } from './api'
import {
  admit,
  DEFAULT_LIMITS,
  fileUrl,
  kindOf,
  pastedFiles,
  pastedName,
  problemText,
  sendForm,
  shownFromServer,
  type AttachmentLimits,
} from './attachments'
import { fmtBytes } from './format'
import { translator } from './i18n'

const MiB = 1024 * 1024
const info = (name: string, size: number, type = '') => ({ name, size, type })
const held = (name: string, size: number, type = '') => ({ kind: kindOf({ name, type }), file: info(name, size, type) })

describe('kindOf', () => {
  it('takes the four image types as images, by type or else by name', () => {
    expect(kindOf({ name: 'a.png', type: 'image/png' })).toBe('image')
    expect(kindOf({ name: 'x', type: 'image/webp' })).toBe('image')
    expect(kindOf({ name: 'photo.JPEG', type: '' })).toBe('image')
    // what the model cannot see as an image counts against the documents
    expect(kindOf({ name: 'a.bmp', type: 'image/bmp' })).toBe('document')
    expect(kindOf({ name: 'report.pdf', type: 'application/pdf' })).toBe('document')
    expect(kindOf({ name: 'main.rs', type: '' })).toBe('document')
  })
})

describe('admit', () => {
  it('takes files within every limit', () => {
    const r = admit([], [info('a.png', MiB, 'image/png'), info('b.pdf', 2 * MiB, 'application/pdf')])
    expect(r.accepted.map((f) => f.name)).toEqual(['a.png', 'b.pdf'])
    expect(r.refused).toEqual([])
  })

  it('refuses the fifth image once, however many more come', () => {
    const current = [1, 2, 3].map((i) => held(`${i}.png`, 10, 'image/png'))
    const r = admit(current, [info('4.png', 10, 'image/png'), info('5.png', 10, 'image/png'), info('6.gif', 10, 'image/gif')])
    expect(r.accepted.map((f) => f.name)).toEqual(['4.png'])
    expect(r.refused).toEqual([{ code: 'images', max: 4 }])
  })

  it('refuses a fourth document but still takes an image', () => {
    const current = [1, 2, 3].map((i) => held(`${i}.md`, 10, 'text/markdown'))
    const r = admit(current, [info('4.txt', 10, 'text/plain'), info('shot.png', 10, 'image/png')])
    expect(r.accepted.map((f) => f.name)).toEqual(['shot.png'])
    expect(r.refused).toEqual([{ code: 'documents', max: 3 }])
  })

  it('refuses an image over 4 MiB and a document over 10 MiB, by name', () => {
    const r = admit([], [info('big.png', 4 * MiB + 1, 'image/png'), info('ok.png', 4 * MiB, 'image/png'), info('big.pdf', 10 * MiB + 1)])
    expect(r.accepted.map((f) => f.name)).toEqual(['ok.png'])
    expect(r.refused).toEqual([
      { code: 'imageBytes', name: 'big.png', size: 4 * MiB + 1, max: 4 * MiB },
      { code: 'documentBytes', name: 'big.pdf', size: 10 * MiB + 1, max: 10 * MiB },
    ])
  })

  it('refuses what would take the message past 20 MiB in all', () => {
    const current = [held('a.pdf', 9 * MiB), held('b.pdf', 9 * MiB)]
    const r = admit(current, [info('c.png', 3 * MiB, 'image/png'), info('d.png', MiB, 'image/png')])
    expect(r.accepted.map((f) => f.name)).toEqual(['d.png'])
    expect(r.refused).toEqual([{ code: 'totalBytes', name: 'c.png', max: 20 * MiB }])
  })

  it('refuses an empty file', () => {
    expect(admit([], [info('empty.txt', 0)]).refused).toEqual([{ code: 'empty', name: 'empty.txt' }])
  })

  it('follows the limits it is given', () => {
    const limits: AttachmentLimits = { ...DEFAULT_LIMITS, images: 1 }
    const r = admit([], [info('a.png', 1, 'image/png'), info('b.png', 1, 'image/png')], limits)
    expect(r.refused).toEqual([{ code: 'images', max: 1 }])
  })

  it('says why in the user’s language', () => {
    const p = { code: 'imageBytes', name: 'big.png', size: 5 * MiB, max: 4 * MiB } as const
    expect(problemText(p, translator('en'), fmtBytes)).toBe('big.png is 5 MiB; an image can be at most 4 MiB.')
    expect(problemText(p, translator('zh'), fmtBytes)).toBe('big.png 大小为 5 MiB；图片最大 4 MiB。')
    expect(problemText({ code: 'images', max: 4 }, translator('en'), fmtBytes)).toBe('A message can carry at most 4 images.')
  })
})

describe('pasted files', () => {
  it('names a nameless clipboard image pasted-image-<n>, the first n not taken', () => {
    expect(pastedName({ name: 'image.png', type: 'image/png' }, [])).toBe('pasted-image-1.png')
    expect(pastedName({ name: '', type: 'image/png' }, ['pasted-image-1.png'])).toBe('pasted-image-2.png')
    expect(pastedName({ name: 'image.png', type: 'image/png' }, ['pasted-image-2.png'])).toBe('pasted-image-1.png')
    expect(pastedName({ name: 'blob', type: 'image/jpeg' }, [])).toBe('pasted-image-1.jpg')
    expect(pastedName({ name: 'image.webp', type: 'image/webp' }, [])).toBe('pasted-image-1.webp')
  })

  it('keeps the name a pasted file has of its own', () => {
    expect(pastedName({ name: 'Screenshot 2026-01-02.png', type: 'image/png' }, [])).toBe('Screenshot 2026-01-02.png')
    expect(pastedName({ name: 'notes.md', type: 'text/markdown' }, [])).toBe('notes.md')
  })

  it('attaches the files of a paste, unless it carries text too', () => {
    const png = new File([new Uint8Array([1, 2, 3])], 'image.png', { type: 'image/png' })
    const files = [png] as unknown as FileList
    expect(pastedFiles({ files, types: ['Files'] })).toEqual([png])
    // a spreadsheet's cells come with a picture of themselves: the text is meant
    expect(pastedFiles({ files, types: ['text/plain', 'text/html', 'Files'] })).toEqual([])
    expect(pastedFiles({ files: [] as unknown as FileList, types: ['text/plain'] })).toEqual([])
    expect(pastedFiles(null)).toEqual([])
  })
})

describe('sendForm', () => {
  it('is a json part and one part per file, each under its shown name', async () => {
    const png = new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], 'image.png', { type: 'image/png' })
    const md = new File(['# hi\n'], 'notes.md', { type: 'text/markdown' })
    const form = sendForm({ text: 'what is this?', model: 'mock' }, [
      { file: png, name: 'pasted-image-1.png' },
      { file: md, name: 'notes.md' },
    ])
    const parts = [...form.entries()]
    expect(parts.map(([k]) => k)).toEqual(['json', 'file', 'file'])
    // a string part: no filename, which is how the server tells it from the files
    expect(typeof parts[0][1]).toBe('string')
    expect(JSON.parse(parts[0][1] as string)).toEqual({ text: 'what is this?', model: 'mock' })
    const [, f1] = parts[1] as [string, File]
    expect(f1.name).toBe('pasted-image-1.png')
    expect(f1.type).toBe('image/png')
    expect(new Uint8Array(await f1.arrayBuffer())).toEqual(new Uint8Array([0x89, 0x50, 0x4e, 0x47]))

    // On the wire: the multipart body the gateway parses.
    const req = new Request('http://x/', { method: 'POST', body: form })
    expect(req.headers.get('content-type')).toMatch(/^multipart\/form-data; boundary=/)
    const wire = await req.text()
    expect(wire).toMatch(/Content-Disposition: form-data; name="json"\r\n\r\n\{"text":"what is this\?","model":"mock"\}/)
    expect(wire).toContain('Content-Disposition: form-data; name="file"; filename="pasted-image-1.png"\r\nContent-Type: image/png')
    expect(wire).toContain('filename="notes.md"\r\nContent-Type: text/markdown\r\n\r\n# hi\n')
  })

  it('goes as multipart from the API client when there are files, with the CSRF header and no JSON type', async () => {
    const calls: RequestInit[] = []
    const fetch = vi.fn(async (_url: RequestInfo | URL, init?: RequestInit) => {
      calls.push(init ?? {})
      return new Response(JSON.stringify({ message_id: 'm1', session_id: 's1', status: 'started', run_id: 'r1' }), { status: 202 })
    })
    const api = createApi({ fetch: fetch as unknown as typeof globalThis.fetch })
    const file = new File(['x'], 'a.txt', { type: 'text/plain' })
    await api.sendMessage('s1', { text: '' }, 'key-1', [{ file, name: 'a.txt' }])
    const headers = calls[0].headers as Record<string, string>
    expect(calls[0].body).toBeInstanceOf(FormData)
    // the browser writes the multipart type with its boundary
    expect(headers['Content-Type']).toBeUndefined()
    expect(headers['X-Weft-Csrf']).toBe('1')
    expect(headers['Idempotency-Key']).toBe('key-1')
    // without files it stays JSON
    await api.sendMessage('s1', { text: 'hi' })
    expect(calls[1].body).toBe('{"text":"hi"}')
  })
})

describe('files in history', () => {
  it('are read from /v1/files/{id}', () => {
    expect(fileUrl('f 1')).toBe('/v1/files/f%201')
    expect(shownFromServer({ id: 'f1', name: 'shot.png', kind: 'image', mime: 'image/png', bytes: 42 })).toEqual({
      key: 'f1',
      name: 'shot.png',
      kind: 'image',
      bytes: 42,
      src: '/v1/files/f1',
    })
  })
})
