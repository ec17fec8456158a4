// Files sent with a message: what the composer may hold before sending, how a send
// carries them, and how a message shows them. Pure, so the rules are unit-tested.
//
// The server types every file by its bytes and enforces the limits (413 naming the
// limit, 422 for a type it does not take); the checks here only spare the user an
// upload that is sure to be refused. The browser cannot read `/v1/admin/limits`
// (admins only), so the defaults of `[attachments]` are assumed; a server set
// lower still answers with its own message, which the chat shows.
//
// Files travel as `multipart/form-data` (a `json` part with the usual body, one
// part per file): base64 in JSON would make every upload a third larger.

import type { Translate } from './i18n'
import type { Attachment, AttachmentKind, SendMessageRequest } from './types'

export interface AttachmentLimits {
  images: number
  imageBytes: number
  documents: number
  documentBytes: number
  /** all files of one message together */
  totalBytes: number
}

const MiB = 1024 * 1024

/** The server's defaults: 4 images ≤ 4 MiB, 3 documents ≤ 10 MiB, 20 MiB per message. */
export const DEFAULT_LIMITS: AttachmentLimits = {
  images: 4,
  imageBytes: 4 * MiB,
  documents: 3,
  documentBytes: 10 * MiB,
  totalBytes: 20 * MiB,
}

/** The image types a model is sent as images; anything else is a document to the server. */
const IMAGE_TYPES: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
}
const IMAGE_EXT = /\.(png|jpe?g|gif|webp)$/i

/** What the browser tells of a file: enough to check it (a `File` is one). */
export interface FileInfo {
  name: string
  size: number
  /** the browser's guess from the name; may be empty */
  type: string
}

/** The server decides from the bytes; this guess only picks which limits apply. */
export function kindOf(f: Pick<FileInfo, 'name' | 'type'>): AttachmentKind {
  if (f.type) return f.type in IMAGE_TYPES ? 'image' : 'document'
  return IMAGE_EXT.test(f.name) ? 'image' : 'document'
}

/** A file in the composer, waiting to be sent. */
export interface Draft {
  id: string
  file: File
  /** the name it is sent under (a pasted image's is made up) */
  name: string
  kind: AttachmentKind
  /** an object URL for an image's thumbnail */
  url?: string
}

/** Why a file was not added. */
export type Problem =
  | { code: 'empty'; name: string }
  | { code: 'images'; max: number }
  | { code: 'documents'; max: number }
  | { code: 'imageBytes'; name: string; size: number; max: number }
  | { code: 'documentBytes'; name: string; size: number; max: number }
  | { code: 'totalBytes'; name: string; max: number }

export interface Admitted<T> {
  accepted: T[]
  refused: Problem[]
}

/**
 * Which of `incoming` fit beside `current` within `limits`, taken in order: a
 * file that would break a limit is refused (with why) and the next still tried.
 */
export function admit<T extends FileInfo>(
  current: readonly { kind: AttachmentKind; file: FileInfo }[],
  incoming: readonly T[],
  limits: AttachmentLimits = DEFAULT_LIMITS,
): Admitted<T> {
  let images = current.filter((d) => d.kind === 'image').length
  let documents = current.length - images
  let total = current.reduce((n, d) => n + d.file.size, 0)
  const accepted: T[] = []
  const refused: Problem[] = []
  const seen = new Set<string>()
  for (const f of incoming) {
    const kind = kindOf(f)
    const problem: Problem | null =
      f.size === 0
        ? { code: 'empty', name: f.name }
        : kind === 'image' && images >= limits.images
          ? { code: 'images', max: limits.images }
          : kind === 'document' && documents >= limits.documents
            ? { code: 'documents', max: limits.documents }
            : kind === 'image' && f.size > limits.imageBytes
              ? { code: 'imageBytes', name: f.name, size: f.size, max: limits.imageBytes }
              : kind === 'document' && f.size > limits.documentBytes
                ? { code: 'documentBytes', name: f.name, size: f.size, max: limits.documentBytes }
                : total + f.size > limits.totalBytes
                  ? { code: 'totalBytes', name: f.name, max: limits.totalBytes }
                  : null
    if (problem) {
      // "at most 4 images" once, however many were dropped at a time
      const key = 'name' in problem ? `${problem.code}:${problem.name}` : problem.code
      if (!seen.has(key)) refused.push(problem)
      seen.add(key)
      continue
    }
    if (kind === 'image') images++
    else documents++
    total += f.size
    accepted.push(f)
  }
  return { accepted, refused }
}

/** A problem in the user's language. */
export function problemText(p: Problem, t: Translate, bytes: (n: number) => string): string {
  switch (p.code) {
    case 'empty':
      return t('attach.empty', { name: p.name })
    case 'images':
      return t('attach.tooManyImages', { max: p.max })
    case 'documents':
      return t('attach.tooManyDocuments', { max: p.max })
    case 'imageBytes':
      return t('attach.imageTooBig', { name: p.name, size: bytes(p.size), max: bytes(p.max) })
    case 'documentBytes':
      return t('attach.documentTooBig', { name: p.name, size: bytes(p.size), max: bytes(p.max) })
    case 'totalBytes':
      return t('attach.totalTooBig', { name: p.name, max: bytes(p.max) })
  }
}

// What browsers call an image pasted from the clipboard when it has no name of its own.
const GENERIC_PASTE = /^(image|blob|untitled)?(\.(png|jpe?g|gif|webp|bmp|tiff?))?$/i

/**
 * The name a pasted file is sent under: its own when it has one (a file copied in
 * a file manager), else `pasted-image-<n>.<ext>` with the first `n` no file in
 * `taken` has.
 */
export function pastedName(f: Pick<FileInfo, 'name' | 'type'>, taken: readonly string[]): string {
  const name = f.name.trim()
  if (name && !GENERIC_PASTE.test(name)) return name
  const ext = IMAGE_TYPES[f.type] ?? (f.type.startsWith('image/') || !f.type ? 'png' : 'bin')
  const stem = f.type.startsWith('image/') || !f.type ? 'pasted-image' : 'pasted-file'
  const used = new Set(taken)
  let n = 1
  while (used.has(`${stem}-${n}.${ext}`)) n++
  return `${stem}-${n}.${ext}`
}

/**
 * The body of a send with files: a `json` part (no filename: the server tells it
 * from the files by that) and one `file` part per file, under its shown name.
 */
export function sendForm(body: SendMessageRequest, files: readonly Pick<Draft, 'file' | 'name'>[]): FormData {
  const form = new FormData()
  form.append('json', JSON.stringify(body))
  for (const f of files) form.append('file', f.file, f.name)
  return form
}

/** Where an attachment's bytes are (owner only; the session cookie goes along). */
export function fileUrl(id: string): string {
  return `/v1/files/${encodeURIComponent(id)}`
}

/** A file as a message shows it: from history (its URL) or from this tab (a thumbnail). */
export interface ShownFile {
  key: string
  name: string
  kind: AttachmentKind
  bytes: number
  /** for an image: what the thumbnail shows; for a document: where it downloads from */
  src?: string
  /** why a document's text could not be read (the model was told the same) */
  unreadable?: string
}

export function shownFromServer(a: Attachment): ShownFile {
  return {
    key: a.id,
    name: a.name,
    kind: a.kind,
    bytes: a.bytes,
    src: fileUrl(a.id),
    unreadable: a.unreadable ?? undefined,
  }
}

export function shownFromDraft(d: Draft): ShownFile {
  return { key: d.id, name: d.name, kind: d.kind, bytes: d.file.size, src: d.url }
}

/**
 * The files a paste attaches. None when it carries text as well: a cell range
 * copied from a spreadsheet or a paragraph from a word processor comes with a
 * picture of itself, and the text is what was meant.
 */
export function pastedFiles(data: Pick<DataTransfer, 'files' | 'types'> | null | undefined): File[] {
  if (!data || Array.from(data.types).includes('text/plain')) return []
  return Array.from(data.files)
}
