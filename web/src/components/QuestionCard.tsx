// A question the agent asked (`ask_user`): its text and the ways to answer it
// while the run waits — one button per option, checkboxes and Send when several
// may be chosen, a text box when a typed answer is taken — then what was
// answered and by whom (or that nobody answered in time). A refused answer shows
// the server's message: a 409 (answered elsewhere, expired, the run ended) closes
// the card, a 422 leaves it open for another try. It stands in for the tool card
// of its `ask_user` call.
//
// `QuestionCard` holds the state; `QuestionCardView` only draws it, so each state
// can be rendered in a test.

import { useState, type FormEvent } from 'react'
import { api } from '../api'
import { fmtClock, fmtLeft } from '../format'
import { useI18n } from '../i18n'
import { choicesAnswer, outcomeOf, outcomeText, refusalOf, takesText, textAnswer } from '../questions'
import type { QuestionOutcome, QuestionView } from '../stream/reducer'
import type { AnswerValue } from '../types'
import { useNow } from './ToolCard'

/** What is being sent: one option (its text), the ticked boxes, or the typed text. */
export type Sending = { option: string } | 'choices' | 'text'

export interface QuestionCardState {
  sending: Sending | null
  /** the server's message when it refused the last answer */
  error: string | null
  /** the question takes no answer any more (409) */
  closed: boolean
  /** our answer, accepted; the run resumes and `question_answered` follows */
  sent: QuestionOutcome | null
  ticked: string[]
  text: string
}

export interface QuestionCardViewProps extends QuestionCardState {
  q: QuestionView
  /** the run has not ended */
  live: boolean
  now: number
  onOption: (option: string) => void
  onTick: (option: string, on: boolean) => void
  onSendChoices: () => void
  onText: (text: string) => void
  onSendText: () => void
}

export function QuestionCard({ q, live }: { q: QuestionView; live: boolean }) {
  const [state, setState] = useState<QuestionCardState>({
    sending: null,
    error: null,
    closed: false,
    sent: null,
    ticked: [],
    text: '',
  })
  const open = live && !q.answered && !state.sent && !state.closed
  const now = useNow(open && q.expiresAt !== undefined, 10_000)

  async function send(answer: AnswerValue | null, sending: Sending) {
    if (answer === null || state.sending) return
    setState((s) => ({ ...s, sending, error: null }))
    try {
      const answered = await api.answerQuestion(q.questionId, answer)
      setState((s) => ({ ...s, sending: null, sent: outcomeOf(answered) }))
    } catch (e) {
      const r = refusalOf(e)
      setState((s) => ({ ...s, sending: null, error: r.message, closed: s.closed || r.closed }))
    }
  }

  return (
    <QuestionCardView
      {...state}
      q={q}
      live={live}
      now={now}
      onOption={(o) => send(o, { option: o })}
      onTick={(o, on) =>
        setState((s) => ({ ...s, ticked: on ? [...s.ticked.filter((x) => x !== o), o] : s.ticked.filter((x) => x !== o) }))
      }
      onSendChoices={() => send(choicesAnswer(q, state.ticked), 'choices')}
      onText={(text) => setState((s) => ({ ...s, text }))}
      onSendText={() => send(textAnswer(state.text), 'text')}
    />
  )
}

export function QuestionCardView(p: QuestionCardViewProps) {
  const { t, lang } = useI18n()
  const { q, now } = p
  const outcome = q.answered ?? p.sent
  const open = p.live && !outcome && !p.closed
  const busy = p.sending !== null
  const sendingOption = (o: string) => typeof p.sending === 'object' && p.sending?.option === o
  const status = q.answered?.status ?? 'pending'
  const spinner = <span className="spinner" aria-hidden="true" />

  const submitText = (e: FormEvent) => {
    e.preventDefault()
    p.onSendText()
  }

  return (
    <section
      className={`question question-${status}`}
      data-testid="question"
      data-status={status}
      data-question-id={q.questionId}
      aria-busy={busy}
    >
      <div className="question-head">
        <span className={`pill ${open ? 'awaiting_approval' : outcome?.status === 'answered' ? 'ok' : 'failed'}`}>
          {open
            ? t('question.waiting')
            : outcome?.status === 'answered'
              ? t('question.done')
              : outcome?.status === 'expired'
                ? t('tool.expired')
                : t('question.closed')}
        </span>
        <span className="muted small">{t('question.asks')}</span>
      </div>
      <p className="question-text" data-testid="question-text">
        {q.question}
      </p>
      {open && q.options.length > 0 && !q.multiple && (
        <div className="question-options" role="group" aria-label={q.question}>
          {q.options.map((o) => (
            <button
              key={o}
              type="button"
              className="btn"
              disabled={busy}
              aria-busy={sendingOption(o)}
              data-testid="question-option"
              onClick={() => p.onOption(o)}
            >
              {sendingOption(o) && spinner}
              {o}
            </button>
          ))}
        </div>
      )}
      {open && q.options.length > 0 && q.multiple && (
        <fieldset className="question-options" disabled={busy}>
          <legend className="muted">{t('question.chooseSeveral')}</legend>
          {q.options.map((o) => (
            <label key={o} className="question-check">
              <input
                type="checkbox"
                checked={p.ticked.includes(o)}
                data-testid="question-check"
                onChange={(e) => p.onTick(o, e.target.checked)}
              />
              {o}
            </label>
          ))}
          <button
            type="button"
            className="btn primary"
            disabled={busy || choicesAnswer(q, p.ticked) === null}
            aria-busy={p.sending === 'choices'}
            data-testid="question-send-choices"
            onClick={p.onSendChoices}
          >
            {p.sending === 'choices' && spinner}
            {t('question.send')}
          </button>
        </fieldset>
      )}
      {open && takesText(q) && (
        <form className="question-form" onSubmit={submitText}>
          <input
            type="text"
            value={p.text}
            placeholder={t('question.placeholder')}
            aria-label={t('question.yourAnswer')}
            disabled={busy}
            data-testid="question-input"
            onChange={(e) => p.onText(e.target.value)}
          />
          <button
            type="submit"
            className="btn primary"
            disabled={busy || textAnswer(p.text) === null}
            aria-busy={p.sending === 'text'}
            data-testid="question-send"
          >
            {p.sending === 'text' && spinner}
            {t('question.send')}
          </button>
        </form>
      )}
      {open && q.expiresAt !== undefined && (
        <p className="muted small question-expiry" data-testid="question-expiry">
          {q.expiresAt > now
            ? t('question.expiresAt', { time: fmtClock(q.expiresAt, lang, now), left: fmtLeft(q.expiresAt - now) })
            : t('question.expiredAt', { time: fmtClock(q.expiresAt, lang, now) })}
        </p>
      )}
      {outcome && (
        <p className={`question-outcome ${outcome.status}`} data-testid="question-outcome">
          {outcomeText(t, outcome)}
          {!q.answered && p.live && (
            <span className="muted">
              {' '}
              {spinner} {t('tool.resuming')}
            </span>
          )}
        </p>
      )}
      {!outcome && !p.live && (
        <p className="question-outcome muted" data-testid="question-outcome">
          {t('question.unanswered')}
        </p>
      )}
      {p.error && (
        <p className="form-error" role="alert" data-testid="question-error">
          {p.error}
        </p>
      )}
    </section>
  )
}
