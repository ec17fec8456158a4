// What a question card (components/QuestionCard.tsx) sends and says, apart from
// React so it can be tested alone (docs/protocol.md, "Questions"): the answer's
// body, how an outcome reads, and what a refused answer means for the card.

import { ApiError } from './api'
import type { Translate } from './i18n'
import type { QuestionOutcome, QuestionView } from './stream/reducer'
import type { AnswerValue, Question } from './types'

/** Whether the card offers a text box: always for a question without options. */
export function takesText(q: Pick<QuestionView, 'allowText' | 'options'>): boolean {
  return q.allowText || q.options.length === 0
}

/**
 * The boxes ticked of a `multiple` question, in the order the question lists
 * them; null when none is.
 */
export function choicesAnswer(q: Pick<QuestionView, 'options'>, ticked: readonly string[]): AnswerValue | null {
  const chosen = q.options.filter((o) => ticked.includes(o))
  return chosen.length ? chosen : null
}

/** A typed answer, trimmed; null when there is nothing to send. */
export function textAnswer(text: string): AnswerValue | null {
  const t = text.trim()
  return t ? t : null
}

/** "Answered by alice: red, blue", or "Nobody answered in time". */
export function outcomeText(t: Translate, o: QuestionOutcome): string {
  if (o.status === 'expired') return t('question.expired')
  const answer = o.answer.join(', ')
  return o.by ? t('question.answeredBy', { by: o.by, answer }) : t('question.answered', { answer })
}

/** What our own accepted answer (the 200's question) stands for until `question_answered` arrives. */
export function outcomeOf(q: Question): QuestionOutcome {
  return { status: q.status, answer: q.answer, by: q.answered_by ?? null }
}

export interface Refusal {
  /** the server's message (the envelope's), shown as it is */
  message: string
  /**
   * The question takes no answer any more (409: answered elsewhere, expired, the
   * run ended; 404): the card stops offering one. A 422 or a lost connection
   * leaves it open for another try.
   */
  closed: boolean
}

export function refusalOf(e: unknown): Refusal {
  if (e instanceof ApiError) return { message: e.message, closed: e.status === 409 || e.status === 404 }
  return { message: e instanceof Error ? e.message : String(e), closed: false }
}
