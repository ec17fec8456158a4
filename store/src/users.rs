//! Users and credentials. Tokens (API tokens, login sessions, the bootstrap admin
//! token) share one table and one lookup path: by the SHA-256 of the secret.

use std::str::FromStr;

use sqlx::any::AnyRow;

use super::runs::ActiveRun;
use super::sessions::active_runs_where;
use super::{
    Conflict, Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str,
};
use weft_wire::api::{TokenDto, UserDto};
use weft_wire::ids::{TokenId, UserId};
use weft_wire::time::{now_ms, rfc3339};

pub use weft_wire::states::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A personal API token (CLI, scripts).
    Api,
    /// A web login session (cookie) or a token returned by `/v1/auth/login`.
    Login,
    /// `WEFT_ADMIN_TOKEN`.
    Bootstrap,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Api => "api",
            TokenKind::Login => "login",
            TokenKind::Bootstrap => "bootstrap",
        }
    }
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthUser {
    pub id: UserId,
    pub username: String,
    pub role: Role,
    pub created_at: i64,
}

impl AuthUser {
    pub(super) fn from_row(row: &AnyRow) -> Result<AuthUser> {
        Ok(AuthUser {
            id: UserId(get_str(row, "id")?),
            username: get_str(row, "username")?,
            role: get_enum(row, "role")?,
            created_at: get_i64(row, "created_at")?,
        })
    }

    pub fn to_dto(&self) -> UserDto {
        UserDto {
            id: self.id.0.clone(),
            username: self.username.clone(),
            role: self.role,
            created_at: rfc3339(self.created_at),
            storage: None,
        }
    }

    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}

impl FromStr for TokenKind {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Self, ()> {
        match s {
            "api" => Ok(TokenKind::Api),
            "login" => Ok(TokenKind::Login),
            "bootstrap" => Ok(TokenKind::Bootstrap),
            _ => Err(()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct TokenRecord {
    pub id: TokenId,
    pub name: String,
    pub kind: TokenKind,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
    /// SHA-256 of the secret (to tell the caller's own token apart).
    pub hash: String,
}

impl TokenRecord {
    fn from_row(r: &AnyRow) -> Result<TokenRecord> {
        Ok(TokenRecord {
            id: TokenId(get_str(r, "id")?),
            name: get_str(r, "name")?,
            kind: get_enum(r, "kind")?,
            created_at: get_i64(r, "created_at")?,
            last_used_at: get_opt_i64(r, "last_used_at")?,
            expires_at: get_opt_i64(r, "expires_at")?,
            hash: get_str(r, "hash")?,
        })
    }

    /// `current`: the hash of the token the caller presented, if any.
    pub fn to_dto(&self, current: Option<&str>) -> TokenDto {
        TokenDto {
            id: self.id.0.clone(),
            name: self.name.clone(),
            kind: self.kind.as_str().into(),
            created_at: rfc3339(self.created_at),
            last_used_at: self.last_used_at.map(rfc3339),
            expires_at: self.expires_at.map(rfc3339),
            current: current == Some(self.hash.as_str()),
        }
    }
}

/// Which of a user's tokens a password change revokes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordChange<'a> {
    /// An admin reset it: every API and login token goes (the bootstrap token,
    /// owned by the configuration, stays).
    Reset,
    /// The user changed it: their other login sessions go; the token they made
    /// the change with (this hash) and their API tokens stay.
    BySelf { keep: &'a str },
}

/// Login sessions last 30 days.
const LOGIN_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
/// `last_used_at` is refreshed at most this often, so auth is not a write per request.
const TOUCH_EVERY_MS: i64 = 60_000;

impl Store {
    pub async fn create_user(
        &self,
        username: &str,
        password_hash: &str,
        role: Role,
    ) -> Result<AuthUser> {
        weft_shared::auth::check_new_username(username).map_err(StoreError::Invalid)?;
        let user = AuthUser {
            id: UserId::new(),
            username: username.to_string(),
            role,
            created_at: now_ms(),
        };
        let mut w = self.writer().await?;
        sqlx::query("insert into users (id, username, password_hash, role, created_at) values ($1, $2, $3, $4, $5)")
            .bind(&user.id.0)
            .bind(&user.username)
            .bind(password_hash)
            .bind(role.as_str())
            .bind(user.created_at)
            .execute(&mut *w)
            .await
            .map_err(|e| StoreError::unique(e, Conflict::UsernameTaken))?;
        Ok(user)
    }

    /// A user's password hash (changing one's own password checks the current one).
    pub async fn password_hash(&self, id: &UserId) -> Result<String> {
        let row = sqlx::query("select password_hash from users where id = $1")
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        get_str(&row, "password_hash")
    }

    /// The user and their password hash, for login.
    pub async fn user_credentials(&self, username: &str) -> Result<Option<(AuthUser, String)>> {
        let row = sqlx::query(
            "select id, username, role, created_at, password_hash from users where username = $1",
        )
        .bind(username)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| Ok((AuthUser::from_row(&r)?, get_str(&r, "password_hash")?)))
            .transpose()
    }

    pub async fn list_users(&self) -> Result<Vec<AuthUser>> {
        let rows =
            sqlx::query("select id, username, role, created_at from users order by username")
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(AuthUser::from_row).collect()
    }

    pub async fn get_user(&self, id: &UserId) -> Result<AuthUser> {
        let row = sqlx::query("select id, username, role, created_at from users where id = $1")
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        AuthUser::from_row(&row)
    }

    /// Change a user's role, or (admin reset) password: a reset revokes the user's
    /// API and login tokens in the same transaction.
    pub async fn update_user(
        &self,
        id: &UserId,
        password_hash: Option<&str>,
        role: Option<Role>,
    ) -> Result<AuthUser> {
        if let Some(hash) = password_hash {
            self.set_password(id, hash, PasswordChange::Reset).await?;
        }
        let mut tx = self.begin().await?;
        if let Some(role) = role {
            sqlx::query("update users set role = $1 where id = $2")
                .bind(role.as_str())
                .bind(&id.0)
                .execute(&mut *tx)
                .await?;
        }
        let row = sqlx::query("select id, username, role, created_at from users where id = $1")
            .bind(&id.0)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        AuthUser::from_row(&row)
    }

    /// Delete a user and everything they own. Returns their runs that were still
    /// active, which end `cancelled` like those of a deleted session.
    pub async fn delete_user(&self, id: &UserId) -> Result<Vec<ActiveRun>> {
        let mut tx = self.begin().await?;
        // Sessions, then runs, then the user: the order every send takes its locks in.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from sessions where user_id = $1{}",
            self.lock_suffix()
        )))
        .bind(&id.0)
        .fetch_all(&mut *tx)
        .await?;
        let active = active_runs_where(&mut tx, self.lock_suffix(), "user_id", &id.0).await?;
        let done = sqlx::query("delete from users where id = $1")
            .bind(&id.0)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("delete from idempotency_keys where user_id = $1")
            .bind(&id.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(active)
    }

    /// Store a token's hash; the caller shows the secret once.
    pub async fn create_token(
        &self,
        user: &UserId,
        name: &str,
        kind: TokenKind,
        hash: &str,
    ) -> Result<TokenRecord> {
        let now = now_ms();
        let expires = (kind == TokenKind::Login).then_some(now + LOGIN_TTL_MS);
        let rec = TokenRecord {
            id: TokenId::new(),
            name: name.to_string(),
            kind,
            created_at: now,
            last_used_at: None,
            expires_at: expires,
            hash: hash.to_string(),
        };
        let mut w = self.writer().await?;
        sqlx::query("insert into tokens (id, user_id, name, kind, hash, created_at, expires_at) values ($1, $2, $3, $4, $5, $6, $7)")
            .bind(&rec.id.0)
            .bind(&user.0)
            .bind(name)
            .bind(kind.as_str())
            .bind(hash)
            .bind(now)
            .bind(expires)
            .execute(&mut *w)
            .await
            .map_err(|e| StoreError::unique(e, Conflict::TokenExists))?;
        Ok(rec)
    }

    /// The user a token hash belongs to, if the token is valid.
    pub async fn authenticate(&self, hash: &str) -> Result<Option<AuthUser>> {
        let now = now_ms();
        let row = sqlx::query(
            "select u.id, u.username, u.role, u.created_at, t.id as token_id, t.last_used_at
             from tokens t join users u on u.id = t.user_id
             where t.hash = $1 and (t.expires_at is null or t.expires_at > $2)",
        )
        .bind(hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let last_used = get_opt_i64(&row, "last_used_at")?.unwrap_or(0);
        if now - last_used > TOUCH_EVERY_MS {
            let mut w = self.writer().await?;
            sqlx::query("update tokens set last_used_at = $1 where id = $2")
                .bind(now)
                .bind(get_str(&row, "token_id")?)
                .execute(&mut *w)
                .await?;
        }
        Ok(Some(AuthUser::from_row(&row)?))
    }

    /// A user's live tokens of every kind (API tokens, web/login sessions, the
    /// bootstrap token), oldest first.
    pub async fn list_tokens(&self, user: &UserId) -> Result<Vec<TokenRecord>> {
        let rows = sqlx::query("select id, name, kind, created_at, last_used_at, expires_at, hash from tokens where user_id = $1 and (expires_at is null or expires_at > $2) order by id")
            .bind(&user.0)
            .bind(now_ms())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(TokenRecord::from_row).collect()
    }

    /// Revoke one of a user's tokens, of any kind (signing a web session out
    /// included). A revoked bootstrap token comes back at the next start while
    /// `WEFT_ADMIN_TOKEN` is set.
    pub async fn delete_token(&self, user: &UserId, id: &TokenId) -> Result<()> {
        self.delete_owned("tokens", user, &id.0).await
    }

    /// Set a user's password hash and revoke the tokens `change` says, at once.
    pub async fn set_password(
        &self,
        id: &UserId,
        hash: &str,
        change: PasswordChange<'_>,
    ) -> Result<()> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("update users set password_hash = $1 where id = $2")
            .bind(hash)
            .bind(&id.0)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let (kinds, keep) = match change {
            PasswordChange::Reset => ("('api', 'login')", ""),
            PasswordChange::BySelf { keep } => ("('login')", keep),
        };
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "delete from tokens where user_id = $1 and kind in {kinds} and hash <> $2"
        )))
        .bind(&id.0)
        .bind(keep)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// `WEFT_ADMIN_TOKEN` is unset: no bootstrap token may stay valid.
    pub async fn revoke_bootstrap_tokens(&self) -> Result<u64> {
        let mut w = self.writer().await?;
        let done = sqlx::query("delete from tokens where kind = 'bootstrap'")
            .execute(&mut *w)
            .await?;
        Ok(done.rows_affected())
    }

    /// Logout: revoke the token with this hash, whatever its kind. A personal API
    /// token presented to logout (`weft logout`) is revoked too: leaving it valid
    /// would make logout a no-op for the terminal client. The bootstrap token comes
    /// back at the next start while `WEFT_ADMIN_TOKEN` is set.
    pub async fn revoke_token(&self, hash: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("delete from tokens where hash = $1")
            .bind(hash)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// Ensure user `admin` exists with role admin and that `hash` authenticates it.
    /// Idempotent and safe to run from several processes at once.
    pub async fn ensure_bootstrap_admin(
        &self,
        hash: &str,
        unusable_password_hash: &str,
    ) -> Result<()> {
        let admin = match self.user_credentials("admin").await? {
            Some((u, _)) => u,
            None => match self
                .create_user("admin", unusable_password_hash, Role::Admin)
                .await
            {
                Ok(u) => u,
                Err(StoreError::Conflict(_)) => {
                    self.user_credentials("admin")
                        .await?
                        .ok_or(StoreError::NotFound)?
                        .0
                }
                Err(e) => return Err(e),
            },
        };
        if admin.role != Role::Admin {
            self.update_user(&admin.id, None, Some(Role::Admin)).await?;
        }
        let mut tx = self.begin().await?;
        // Rotating WEFT_ADMIN_TOKEN retires the previous bootstrap token.
        sqlx::query("delete from tokens where kind = 'bootstrap' and hash <> $1")
            .bind(hash)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "insert into tokens (id, user_id, name, kind, hash, created_at) values ($1, $2, 'WEFT_ADMIN_TOKEN', 'bootstrap', $3, $4)
             on conflict (hash) do nothing",
        )
        .bind(TokenId::new().0)
        .bind(&admin.id.0)
        .bind(hash)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

impl Store {
    /// A person's timezone (IANA), when they set one.
    pub async fn user_timezone(&self, user: &UserId) -> Result<Option<String>> {
        let row = sqlx::query("select timezone from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        get_opt_str(&row, "timezone")
    }

    /// Set (or with `None` clear) a person's timezone, checked by the caller.
    pub async fn set_user_timezone(&self, user: &UserId, timezone: Option<&str>) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query("update users set timezone = $1 where id = $2")
            .bind(timezone)
            .bind(&user.0)
            .execute(&mut *w)
            .await?;
        Ok(())
    }
}
