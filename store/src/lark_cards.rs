//! The Lark cards a run's reply lives in (docs/lark.md, "Egress"): its reply
//! cards, on the run (`runs.lark_cards`), and the card each approval asked
//! with (`approvals.lark_message_id`).
//!
//! And whether a run still owes its chat its final card (`runs.lark_card_due`,
//! migration 0026): set when an attempt starts following the run, cleared
//! when the end is shown, and claimed by the reaper's sweep for a run that
//! ended without it (its worker died in between).
//!
//! Both are written once per card, never per update: the worker that follows a
//! run streams thousands of updates into a card and records it only when it
//! creates it. A retried attempt on another worker reads them back and goes on
//! with the same cards. Reply cards are compare-and-set, so two attempts racing
//! for a card end with one.

use serde::{Deserialize, Serialize};

use super::{Result, Store, StoreError, get_i64, get_opt_str, get_str};
use weft_wire::ids::RunId;
use weft_wire::time::now_ms;

/// One reply card of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LarkCard {
    /// The message that shows it; `None` between creating its CardKit entity
    /// and sending that (a retry sends the same entity, with the same `uuid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The CardKit entity it streams through; `None` for a plain card, patched
    /// whole.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub entity: Option<CardEntityRecord>,
}

/// A CardKit card entity behind a reply card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardEntityRecord {
    pub card_id: String,
    /// When it was created (unix ms): its updates are numbered by the
    /// milliseconds since, so any worker continues the sequence.
    pub created_ms: i64,
}

impl LarkCard {
    /// A plain card, sent as `message_id`.
    pub fn plain(message_id: impl Into<String>) -> Self {
        LarkCard {
            message_id: Some(message_id.into()),
            entity: None,
        }
    }
}

/// How `runs.lark_cards` holds a card: an object, or (written before CardKit
/// entities) a bare message id.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Card(LarkCard),
    MessageId(String),
}

pub(super) fn decode_cards(json: Option<&str>) -> Result<Vec<LarkCard>> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let stored: Vec<Stored> = serde_json::from_str(json)
        .map_err(|e| StoreError::Other(format!("runs.lark_cards: {e}")))?;
    Ok(stored
        .into_iter()
        .map(|s| match s {
            Stored::Card(card) => card,
            Stored::MessageId(id) => LarkCard::plain(id),
        })
        .collect())
}

/// An approval's Lark card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkApprovalCard {
    pub approval_id: String,
    pub message_id: String,
    /// Approved with "always" (the tool no longer asks in the session): its
    /// grant was made with the decision, by the same person.
    pub always: bool,
}

impl Store {
    /// Makes `next` the reply cards of `run` if they are still `known`
    /// (compare-and-set). Returns the cards on record afterwards, so a caller
    /// that lost a race sees the winner's.
    pub async fn set_lark_cards(
        &self,
        run: &RunId,
        known: &[LarkCard],
        next: &[LarkCard],
    ) -> Result<Vec<LarkCard>> {
        let mut w = self.writer().await?;
        let (current, raw) = read_lark_cards(&mut w, run).await?;
        if current != known {
            return Ok(current);
        }
        let encoded = serde_json::to_string(next).expect("cards encode");
        // Compared with the text read, which may be in the older form.
        let done = sqlx::query(
            "update runs set lark_cards = $1 where id = $2 and coalesce(lark_cards, '') = coalesce($3, '')",
        )
        .bind(encoded)
        .bind(&run.0)
        .bind(raw)
        .execute(&mut *w)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(next.to_vec());
        }
        Ok(read_lark_cards(&mut w, run).await?.0)
    }

    /// Records the Lark card that asks for approval `approval`.
    pub async fn record_lark_approval_card(&self, approval: &str, message_id: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update approvals set lark_message_id = $1 where id = $2")
            .bind(message_id)
            .bind(approval)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// The Lark cards of `run`'s approvals.
    pub async fn lark_approval_cards(&self, run: &RunId) -> Result<Vec<LarkApprovalCard>> {
        let rows = sqlx::query(
            "select a.id, a.lark_message_id,
                 cast(case when a.status = 'approved' and exists (
                     select 1 from session_tool_grants g
                     where g.session_id = a.session_id and g.tool = a.name
                       and g.created_at = a.decided_at and g.granted_by = a.decided_by
                 ) then 1 else 0 end as bigint) as always
             from approvals a
             where a.run_id = $1 and a.lark_message_id is not null",
        )
        .bind(&run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(LarkApprovalCard {
                    approval_id: get_str(row, "id")?,
                    message_id: get_str(row, "lark_message_id")?,
                    always: get_i64(row, "always")? == 1,
                })
            })
            .collect()
    }
}

impl Store {
    /// `run` owes its chat a final card (an attempt follows it now); keeps
    /// the time it was first owed.
    pub async fn lark_card_owed(&self, run: &RunId) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update runs set lark_card_due = coalesce(lark_card_due, $1) where id = $2")
            .bind(now_ms())
            .bind(&run.0)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// `run`'s final card is shown.
    pub async fn lark_card_shown(&self, run: &RunId) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update runs set lark_card_due = null where id = $1")
            .bind(&run.0)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// Claims up to `limit` runs that ended more than `overdue_ms` ago and
    /// still owe their final card, owed (or last claimed) more than
    /// `overdue_ms` ago: each is claimed by one caller, for another
    /// `overdue_ms`. Runs that ended more than `give_up_ms` ago are given up
    /// (their event log may be gone): returns the claimed and how many were
    /// given up.
    pub async fn claim_overdue_lark_cards(
        &self,
        overdue_ms: i64,
        give_up_ms: i64,
        limit: u32,
    ) -> Result<(Vec<RunId>, u64)> {
        let now = now_ms();
        // One read a sweep; writes only for the runs it finds (the reaper
        // sweeps every few seconds, nearly always finding none).
        let rows = sqlx::query(
            "select id, lark_card_due, finished_at from runs
             where lark_card_due is not null and finished_at < $1
             order by lark_card_due limit $2",
        )
        .bind(now - overdue_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        let (mut claimed, mut given_up) = (Vec::new(), 0);
        for row in &rows {
            let id = get_str(row, "id")?;
            let due = get_i64(row, "lark_card_due")?;
            let give_up = get_i64(row, "finished_at")? < now - give_up_ms;
            if !give_up && due >= now - overdue_ms {
                // Claimed by a sweep a moment ago.
                continue;
            }
            let mut w = self.writer().await?;
            let done = sqlx::query(
                "update runs set lark_card_due = $1 where id = $2 and lark_card_due = $3",
            )
            .bind((!give_up).then_some(now))
            .bind(&id)
            .bind(due)
            .execute(&mut *w)
            .await?;
            match (done.rows_affected() == 1, give_up) {
                (true, true) => given_up += 1,
                (true, false) => claimed.push(RunId(id)),
                (false, _) => {}
            }
        }
        Ok((claimed, given_up))
    }
}

/// A run's Lark cards, and the text they were read from.
async fn read_lark_cards(
    conn: &mut sqlx::AnyConnection,
    run: &RunId,
) -> Result<(Vec<LarkCard>, Option<String>)> {
    let row = sqlx::query("select lark_cards from runs where id = $1")
        .bind(&run.0)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound)?;
    let raw = get_opt_str(&row, "lark_cards")?;
    Ok((decode_cards(raw.as_deref())?, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_read_in_both_forms() {
        let json = r#"["om_1",{"message_id":"om_2","card_id":"7a","created_ms":5},{"card_id":"7b","created_ms":6}]"#;
        let cards = decode_cards(Some(json)).unwrap();
        assert_eq!(cards[0], LarkCard::plain("om_1"));
        assert_eq!(
            cards[1].entity,
            Some(CardEntityRecord {
                card_id: "7a".into(),
                created_ms: 5
            })
        );
        assert_eq!(cards[2].message_id, None);
        let again = serde_json::to_string(&cards).unwrap();
        assert_eq!(
            again,
            r#"[{"message_id":"om_1"},{"message_id":"om_2","card_id":"7a","created_ms":5},{"card_id":"7b","created_ms":6}]"#
        );
        assert_eq!(decode_cards(Some(&again)).unwrap(), cards);
        assert!(decode_cards(None).unwrap().is_empty());
    }
}
