// A timezone field and the one-click zones beside it, for the account page and
// the schedule form. The field suggests every IANA zone the browser knows (typing
// narrows them) but takes any text: the server is the judge of a name, and its
// 422 is shown under the field by the page. The shortcuts are buttons apart from
// the field so they can sit outside its <label>.

import { useId, useMemo } from 'react'
import { useI18n } from '../i18n'
import { supportedTimezones, zoneChoices, zoneShortcuts } from '../timezone'

export function TimezoneInput(p: {
  value: string
  onChange: (zone: string) => void
  testid: string
  /** zones to suggest besides the browser's list (yours, this browser's, a schedule's) */
  extra?: (string | null | undefined)[]
  placeholder?: string
  invalid?: boolean
  describedBy?: string
}) {
  const listId = useId()
  // The extra zones' text is what counts, not a new array each render.
  const extra = (p.extra ?? []).join('\n')
  const zones = useMemo(() => zoneChoices(supportedTimezones(), ...extra.split('\n')), [extra])
  return (
    <>
      <input
        value={p.value}
        list={listId}
        spellCheck={false}
        autoComplete="off"
        placeholder={p.placeholder}
        aria-invalid={p.invalid || undefined}
        aria-describedby={p.describedBy}
        onChange={(e) => p.onChange(e.target.value)}
        data-testid={p.testid}
      />
      <datalist id={listId}>
        {zones.map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
    </>
  )
}

/** "Use yours (…)" and "Use this browser's (…)", each only when it is not what the field holds. */
export function ZoneShortcuts(p: {
  /** what the field holds (or, empty, what applies) */
  current: string
  yours?: string | null
  browser?: string | null
  onPick: (zone: string) => void
  testid: string
}) {
  const { t } = useI18n()
  const offered = zoneShortcuts(p.current, { yours: p.yours, browser: p.browser })
  if (!offered.length) return null
  return (
    <div className="zone-shortcuts">
      {offered.map((s) => (
        <button
          key={s.kind}
          type="button"
          className="btn small"
          onClick={() => p.onPick(s.zone)}
          data-testid={`${p.testid}-${s.kind}`}
          data-zone={s.zone}
        >
          {t(s.kind === 'browser' ? 'timezone.useBrowser' : 'timezone.useYours', { zone: s.zone })}
        </button>
      ))}
    </div>
  )
}
