// Files, as the composer and the conversation show them: images as thumbnails,
// documents as named chips with their size. In the composer each can be removed;
// in a message an image opens full size in a new tab and a document downloads
// (`GET /v1/files/{id}` answers images `inline`, documents as `attachment`).

import { shownFromDraft, type Draft, type ShownFile } from '../attachments'
import { fmtBytes } from '../format'
import { useT } from '../i18n'
import { Icon } from './Icon'

export function DraftList({ items, onRemove }: { items: Draft[]; onRemove: (id: string) => void }) {
  const t = useT()
  if (!items.length) return null
  return (
    <ul className="files drafts" aria-label={t('attach.list')} data-testid="drafts">
      {items.map((d) => {
        const f = shownFromDraft(d)
        return (
          <li key={d.id} className={`file ${f.kind}`} data-testid="draft" data-kind={f.kind} data-name={f.name}>
            {f.kind === 'image' && f.src ? <Thumb file={f} /> : <Chip file={f} />}
            <button
              type="button"
              className="file-remove"
              onClick={() => onRemove(d.id)}
              aria-label={t('attach.remove', { name: f.name })}
              title={t('attach.remove', { name: f.name })}
              data-testid="draft-remove"
            >
              <Icon name="close" size={12} />
            </button>
          </li>
        )
      })}
    </ul>
  )
}

/** A message's files: its images first (they read as one picture), then its documents. */
export function MessageFiles({ files }: { files?: ShownFile[] }) {
  const t = useT()
  if (!files?.length) return null
  const images = files.filter((f) => f.kind === 'image')
  const documents = files.filter((f) => f.kind !== 'image')
  return (
    <div className="files message-files" aria-label={t('attach.list')}>
      {images.map((f) =>
        f.src ? (
          <a
            key={f.key}
            className="file image"
            href={f.src}
            target="_blank"
            rel="noopener noreferrer"
            title={t('attach.open', { name: f.name })}
            data-testid="message-image"
          >
            <Thumb file={f} />
          </a>
        ) : (
          <span key={f.key} className="file" data-testid="message-image">
            <Chip file={f} />
          </span>
        ),
      )}
      {documents.map((f) =>
        f.src ? (
          <a
            key={f.key}
            className="file document"
            href={f.src}
            download={f.name}
            title={t('attach.download', { name: f.name, size: fmtBytes(f.bytes) })}
            data-testid="message-file"
          >
            <Chip file={f} />
          </a>
        ) : (
          <span key={f.key} className="file document" data-testid="message-file">
            <Chip file={f} />
          </span>
        ),
      )}
    </div>
  )
}

/** Over the chat while files are dragged onto it (it lets every drag event through). */
export function DropZone() {
  const t = useT()
  return (
    <div className="drop-zone" data-testid="drop-zone" aria-hidden="true">
      <Icon name="attach" size={28} />
      <strong>{t('attach.drop')}</strong>
      <span>{t('attach.dropHint')}</span>
    </div>
  )
}

function Thumb({ file }: { file: ShownFile }) {
  return <img className="thumb" src={file.src} alt={file.name} loading="lazy" decoding="async" />
}

function Chip({ file }: { file: ShownFile }) {
  const t = useT()
  return (
    <span className={file.unreadable ? 'chip unreadable' : 'chip'}>
      <Icon name="file" size={16} />
      <span className="chip-name">{file.name}</span>
      <span className="chip-size">{fmtBytes(file.bytes)}</span>
      {file.unreadable && (
        <span className="chip-note" data-testid="file-unreadable" title={file.unreadable}>
          {t('attach.unreadable', { reason: file.unreadable })}
        </span>
      )}
    </span>
  )
}
