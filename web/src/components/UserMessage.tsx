// A user's message; while not yet part of a run it shows "sending…" or "queued".

import { useT } from '../i18n'
import { Icon } from './Icon'
import { Markdown } from './Markdown'

/** A message of ours the server has not (yet) tied to a run. */
export interface Pending {
  key: string
  text: string
  status: 'sending' | 'queued'
  messageId?: string
}

export function UserMessage({ text, status }: { text: string; status?: Pending['status'] }) {
  const t = useT()
  return (
    <article className={`msg user ${status ?? ''}`} data-testid="user-message" data-status={status ?? 'sent'}>
      <div className="bubble md">
        <Markdown text={text} />
      </div>
      {status === 'queued' && (
        <p className="badge queued" data-testid="queued">
          <Icon name="clock" size={13} /> {t('chat.queued')}
        </p>
      )}
      {status === 'sending' && <p className="muted small">{t('chat.sending')}</p>}
    </article>
  )
}
