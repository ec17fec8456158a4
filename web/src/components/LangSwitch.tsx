import { LANGS, useI18n, type Lang } from '../i18n'
import { Icon } from './Icon'

export function LangSwitch({ className }: { className?: string }) {
  const { lang, setLang, t } = useI18n()
  return (
    <label className={`lang-switch ${className ?? ''}`}>
      <span className="sr-only">{t('nav.language')}</span>
      <Icon name="globe" />
      <select
        aria-label={t('nav.language')}
        data-testid="lang-switch"
        value={lang}
        onChange={(e) => setLang(e.target.value as Lang)}
      >
        {LANGS.map((l) => (
          <option key={l.id} value={l.id}>
            {l.label}
          </option>
        ))}
      </select>
    </label>
  )
}
