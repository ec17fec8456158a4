// "120 / 2,000 characters" under a text box, in the danger colour once over the limit.
// `n` is counted by the caller as its server counts (Unicode scalar values).

import { useI18n } from '../i18n'

export function CharCount({ n, max, testid }: { n: number; max: number; testid?: string }) {
  const { t } = useI18n()
  return (
    <span className={`char-count ${n > max ? 'danger-text' : 'muted'}`} data-testid={testid}>
      {t('settings.chars', { n: n.toLocaleString(), max: max.toLocaleString() })}
    </span>
  )
}
