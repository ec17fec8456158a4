//! Where writes run. On SQLite, one connection the store keeps out of the
//! pool (`Store::writer`'s field doc says why); on Postgres, the pool's.

use sqlx::AnyConnection;

use super::{Result, Store, StoreError};

/// The writer connection, held (SQLite).
pub(crate) type HeldWriter =
    tokio::sync::OwnedMappedMutexGuard<Option<AnyConnection>, AnyConnection>;

/// A write transaction: on Postgres one of the pool's; on SQLite `begin
/// immediate` on the writer connection, held until the transaction ends.
pub(crate) struct WriteTx(Option<TxConn>);

/// A connection to write on: one of the pool's (`P`, Postgres) or SQLite's
/// writer, held.
pub(crate) enum Conn<P> {
    Pooled(P),
    Held(HeldWriter),
}

/// The connection a [`WriteTx`] runs its statements on (`&mut **tx`).
pub(crate) type TxConn = Conn<sqlx::Transaction<'static, sqlx::Any>>;

/// Where one write outside a transaction runs (`&mut *w`): the writer,
/// held, on SQLite; a pooled connection on Postgres.
pub(crate) type Writer = Conn<sqlx::pool::PoolConnection<sqlx::Any>>;

impl WriteTx {
    pub(crate) async fn commit(mut self) -> Result<()> {
        match self.0.take() {
            Some(Conn::Pooled(tx)) => tx.commit().await?,
            Some(Conn::Held(mut conn)) => {
                // Until it is known to have committed, a drop (an error, a
                // cancelled future) still rolls back: a no-op after a commit.
                let done = sqlx::query("commit").execute(&mut *conn).await;
                if done.is_err() {
                    self.0 = Some(Conn::Held(conn));
                }
                done?;
            }
            None => {}
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
    /// an error nobody needs.)
    fn drop(&mut self) {
        if let Some(Conn::Held(mut conn)) = self.0.take() {
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
    /// write lock up front (`begin immediate`), so two writers never both read
    /// and then both try to upgrade.
    pub(crate) async fn begin(&self) -> Result<WriteTx> {
        match self.held_writer().await? {
            None => Ok(WriteTx(Some(Conn::Pooled(self.pool.begin().await?)))),
            Some(conn) => {
                // Made before `begin` answers: dropped while it runs (a
                // cancelled future), it still rolls back whatever began.
                let mut tx = WriteTx(Some(Conn::Held(conn)));
                sqlx::query("begin immediate").execute(&mut **tx).await?;
                Ok(tx)
            }
        }
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
