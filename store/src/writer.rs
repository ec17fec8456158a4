//! Where writes run. On SQLite, one connection the store keeps out of the
//! pool (`Store::writer`'s field doc says why); on Postgres, the pool's.
//!
//! On SQLite every statement is a hop to the connection's own thread and back
//! (two thread wake-ups, sqlx), and the hops were a large part of what a run
//! cost `weft up` (issue 23's profile: about a quarter of its CPU in waking
//! and parking threads). So a write transaction there sends no statement of
//! its own: `begin immediate` goes in the same hop as its first statement, and
//! `commit` in the same hop as its last write when that write was handed over
//! with [`TxConn::defer`] (its result is not needed). A send and a run's end
//! went from 7 and 6 hops to 5 and 4 (docs/runs.md, "Hot path").
//! sqlx's SQLite driver runs a string of several statements in one hop, one
//! after the other, stopping at the first error; Postgres does not take
//! several statements with parameters in one, so there everything runs as
//! before (a deferred write just before the next statement or the commit).

use futures::{StreamExt, TryStreamExt, future::BoxFuture, stream::BoxStream};
use sqlx::any::{AnyArguments, AnyQueryResult, AnyRow};
use sqlx::{Any, AnyConnection, Either, Execute};

use super::{Result, Store, StoreError};

/// The writer connection, held (SQLite).
pub(crate) type HeldWriter =
    tokio::sync::OwnedMappedMutexGuard<Option<AnyConnection>, AnyConnection>;

/// A write transaction: on Postgres one of the pool's; on SQLite `begin
/// immediate` on the writer connection (sent with the first statement), held
/// until the transaction ends.
pub(crate) struct WriteTx(Option<TxConn>);

/// A connection to write on: one of the pool's (`P`, Postgres) or SQLite's
/// writer, held.
pub(crate) enum Conn<P> {
    Pooled(P),
    Held(HeldWriter),
}

/// The connection a [`WriteTx`] runs its statements on (`&mut *tx`, an
/// [`sqlx::Executor`] that adds what the transaction still owes SQLite to
/// the statement it runs).
pub(crate) struct TxConn {
    conn: Conn<sqlx::Transaction<'static, Any>>,
    /// SQLite: `begin immediate` not sent yet (no statement ran).
    begin: bool,
    /// A write whose result nobody needs, not run yet: it goes with the
    /// commit, or before the next statement.
    deferred: Option<Deferred>,
}

/// A statement kept for later: its text and its parameters.
struct Deferred(String, AnyArguments);

/// Where one write outside a transaction runs (`&mut *w`): the writer,
/// held, on SQLite; a pooled connection on Postgres.
pub(crate) type Writer = Conn<sqlx::pool::PoolConnection<Any>>;

impl TxConn {
    /// Run `query` later: with the commit, in the same hop on SQLite, unless
    /// another statement comes first (then just before it). Only for a write
    /// whose result is not needed; its error, if any, is the commit's (or
    /// the next statement's).
    pub(crate) fn defer<'q>(&mut self, mut query: impl Execute<'q, Any>) -> Result<()> {
        debug_assert!(self.deferred.is_none(), "one deferred write at a time");
        let args = query
            .take_arguments()
            .map_err(|e| StoreError::Other(format!("binding a deferred write: {e}")))?
            .unwrap_or_default();
        let sql = query.sql().as_str().to_string();
        self.deferred = Some(Deferred(sql, args));
        Ok(())
    }

    fn connection(&mut self) -> &mut AnyConnection {
        match &mut self.conn {
            Conn::Pooled(tx) => tx,
            Conn::Held(conn) => conn,
        }
    }

    /// The deferred write, run now, on its own (with `begin` if still owed).
    async fn flush(&mut self) -> std::result::Result<(), sqlx::Error> {
        if let Some(Deferred(sql, args)) = self.deferred.take() {
            let begin = std::mem::take(&mut self.begin);
            let sql = if begin { format!("{BEGIN} {sql}") } else { sql };
            sqlx::query_with(sqlx::AssertSqlSafe(sql), args)
                .execute(self.connection())
                .await?;
        }
        Ok(())
    }

    /// `query`, or (`Right`) `query` with `begin immediate` before it when it
    /// is the transaction's first statement.
    fn with_begin<'q, E: Execute<'q, Any>>(
        &mut self,
        mut query: E,
    ) -> std::result::Result<Either<E, sqlx::query::Query<'q, Any, AnyArguments>>, sqlx::Error>
    {
        if !std::mem::take(&mut self.begin) {
            return Ok(Either::Left(query));
        }
        let args = query
            .take_arguments()
            .map_err(sqlx::Error::Encode)?
            .unwrap_or_default();
        let sql = format!("{BEGIN} {}", query.sql().as_str());
        Ok(Either::Right(sqlx::query_with(
            sqlx::AssertSqlSafe(sql),
            args,
        )))
    }
}

/// Sent with a SQLite transaction's first statement.
const BEGIN: &str = "begin immediate;";

impl std::fmt::Debug for TxConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxConn")
            .field("begin", &self.begin)
            .field("deferred", &self.deferred.as_ref().map(|d| &d.0))
            .finish()
    }
}

impl<'c> sqlx::Executor<'c> for &'c mut TxConn {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, std::result::Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        futures::stream::once(async move {
            self.flush().await?;
            Ok::<_, sqlx::Error>(match self.with_begin(query)? {
                Either::Left(query) => self.connection().fetch_many(query),
                Either::Right(query) => {
                    // The begin's own result comes first: not the caller's.
                    let mut begun = false;
                    self.connection()
                        .fetch_many(query)
                        .try_filter(move |step| {
                            let skip = !begun && step.is_left();
                            begun |= skip;
                            std::future::ready(!skip)
                        })
                        .boxed()
                }
            })
        })
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, std::result::Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        Box::pin(async move {
            self.flush().await?;
            match self.with_begin(query)? {
                Either::Left(query) => self.connection().fetch_optional(query).await,
                // Not `fetch_optional`: through `Any` it looks only at the first
                // result, here the begin's.
                Either::Right(query) => {
                    let mut steps = self.connection().fetch_many(query);
                    while let Some(step) = steps.try_next().await? {
                        if let Either::Right(row) = step {
                            return Ok(Some(row));
                        }
                    }
                    Ok(None)
                }
            }
        })
    }

    fn prepare_with<'e>(
        self,
        sql: sqlx::SqlStr,
        parameters: &'e [sqlx::any::AnyTypeInfo],
    ) -> BoxFuture<'e, std::result::Result<sqlx::any::AnyStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().prepare_with(sql, parameters)
    }

    fn describe<'e>(
        self,
        sql: sqlx::SqlStr,
    ) -> BoxFuture<'e, std::result::Result<sqlx::Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().describe(sql)
    }
}

impl WriteTx {
    pub(crate) async fn commit(mut self) -> Result<()> {
        let Some(mut tx) = self.0.take() else {
            return Ok(());
        };
        match tx.conn {
            Conn::Pooled(_) => {
                tx.flush().await?;
                if let Conn::Pooled(pooled) = tx.conn {
                    pooled.commit().await?;
                }
            }
            // No statement ran: there is nothing to begin or commit.
            Conn::Held(_) if tx.begin && tx.deferred.is_none() => {}
            Conn::Held(_) => {
                // The deferred write and the commit, in one hop.
                let done = match tx.deferred.take() {
                    Some(Deferred(sql, args)) => {
                        let begin = if std::mem::take(&mut tx.begin) {
                            BEGIN
                        } else {
                            ""
                        };
                        sqlx::query_with(
                            sqlx::AssertSqlSafe(format!("{begin} {sql}; commit")),
                            args,
                        )
                        .execute(tx.connection())
                        .await
                    }
                    None => sqlx::query("commit").execute(tx.connection()).await,
                };
                // Until it is known to have committed, a drop (an error, a
                // cancelled future) still rolls back: a no-op after a commit.
                if done.is_err() {
                    self.0 = Some(tx);
                }
                done?;
            }
        }
        Ok(())
    }
}

impl Drop for WriteTx {
    /// Ended without a commit: roll the writer back before the next writer may
    /// take it (a pooled transaction rolls itself back). The task holds the
    /// writer until the rollback ran, so no write, gated on a pooled
    /// connection or on the writer, finds the database still locked by it. (A
    /// rollback with no transaction open, after a commit that answered late, is
    /// an error nobody needs.) A transaction that never sent its `begin` has
    /// nothing to roll back.
    fn drop(&mut self) {
        let Some(TxConn {
            conn: Conn::Held(mut conn),
            begin: false,
            ..
        }) = self.0.take()
        else {
            return;
        };
        let rollback = async move {
            if let Err(e) = sqlx::query("rollback").execute(&mut *conn).await {
                tracing::debug!(error = %e, "rolling the writer back");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(rollback)),
            // Outside a runtime nothing can use the store again anyway.
            Err(_) => tracing::warn!("a write transaction dropped outside a runtime"),
        }
    }
}

impl std::ops::Deref for WriteTx {
    type Target = TxConn;
    fn deref(&self) -> &TxConn {
        self.0.as_ref().expect("an open transaction")
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut TxConn {
        self.0.as_mut().expect("an open transaction")
    }
}

impl<P: std::ops::DerefMut<Target = AnyConnection>> std::ops::Deref for Conn<P> {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Held(conn) => conn,
        }
    }
}

impl<P: std::ops::DerefMut<Target = AnyConnection>> std::ops::DerefMut for Conn<P> {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Held(conn) => conn,
        }
    }
}

impl Store {
    /// A write transaction. On SQLite it waits for the writer and takes the
    /// write lock up front (`begin immediate`, sent with the first
    /// statement), so two writers never both read and then both try to
    /// upgrade.
    pub(crate) async fn begin(&self) -> Result<WriteTx> {
        let (conn, begin) = match self.held_writer().await? {
            None => (Conn::Pooled(self.pool.begin().await?), false),
            Some(conn) => (Conn::Held(conn), true),
        };
        Ok(WriteTx(Some(TxConn {
            conn,
            begin,
            deferred: None,
        })))
    }

    /// The connection for one write outside a transaction: the writer on
    /// SQLite (waiting for it), a pooled one on Postgres.
    pub(crate) async fn writer(&self) -> Result<Writer> {
        Ok(match self.held_writer().await? {
            Some(conn) => Conn::Held(conn),
            None => Conn::Pooled(self.pool.acquire().await?),
        })
    }

    /// SQLite's writer, waited for; `None` on Postgres.
    async fn held_writer(&self) -> Result<Option<HeldWriter>> {
        let Some(writer) = &self.writer else {
            return Ok(None);
        };
        tokio::sync::OwnedMutexGuard::try_map(writer.clone().lock_owned().await, Option::as_mut)
            .map(Some)
            .map_err(|_| StoreError::Other("the database is closed".into()))
    }

    /// Hold across a write run on a connection of the caller's own (SQLite:
    /// the writer's lock, so it waits for and excludes every other write;
    /// nothing on Postgres). Every other write uses [`Store::writer`].
    pub(crate) async fn write_gate(
        &self,
    ) -> Option<tokio::sync::OwnedMutexGuard<Option<AnyConnection>>> {
        match &self.writer {
            Some(writer) => Some(writer.clone().lock_owned().await),
            None => None,
        }
    }
}
