//! The registry's index: users, namespace owners, hashed tokens, pending device logins,
//! packages and their versions. One set of queries through `sqlx::Any`, so the same code runs
//! on the embedded SQLite file (the default) and on PostgreSQL (`--database postgres://…`);
//! `$N` placeholders and `ON CONFLICT` are understood by both. Tables are created at start.

use std::path::Path;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("{0}")]
    Refused(String),
}

/// What a publish's insert found.
#[derive(Debug, PartialEq, Eq)]
pub enum Inserted {
    Done,
    /// `name@version` is already in the index (a UNIQUE key: exactly one racing publish wins).
    Exists,
}

#[derive(Debug, Clone)]
pub struct VersionRow {
    pub id: String,
    pub version: String,
    pub sha256: String,
    pub size: i64,
    pub publisher: String,
    pub published_ms: i64,
    pub client_version: String,
    pub manifest: String,
    pub yanked: bool,
}

#[derive(Debug, Clone)]
pub struct DeviceRow {
    pub user_code: String,
    pub expires_ms: i64,
    pub interval_secs: i64,
    pub last_poll_ms: i64,
    pub state: String,
    pub user_name: Option<String>,
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, \
     created_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS namespace_owners (namespace TEXT NOT NULL, owner TEXT NOT NULL, \
     PRIMARY KEY (namespace, owner))",
    "CREATE TABLE IF NOT EXISTS tokens (token_hash TEXT PRIMARY KEY, user_name TEXT NOT NULL, \
     created_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS device_codes (device_code_hash TEXT PRIMARY KEY, \
     user_code TEXT NOT NULL UNIQUE, expires_ms BIGINT NOT NULL, interval_secs BIGINT NOT NULL, \
     last_poll_ms BIGINT NOT NULL, state TEXT NOT NULL, user_name TEXT)",
    "CREATE TABLE IF NOT EXISTS packages (id TEXT PRIMARY KEY, namespace TEXT NOT NULL, \
     name TEXT NOT NULL, description TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS versions (id TEXT NOT NULL, version TEXT NOT NULL, \
     sha256 TEXT NOT NULL, size BIGINT NOT NULL, publisher TEXT NOT NULL, \
     published_ms BIGINT NOT NULL, client_version TEXT NOT NULL, manifest TEXT NOT NULL, \
     yanked BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, version))",
];

#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    /// Which database this is, for the logs and the tests.
    pub kind: &'static str,
}

/// The default index: `DIR/registry.db`.
pub fn default_url(data: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    // Percent-encoded: a `?`, `#` or `%` in the directory's name must not become URL syntax
    // (an option such as `mode=ro`, a fragment) and put the index somewhere else.
    let path: String = data
        .join("registry.db")
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|&b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'.' | b'_' | b'-' | b'~' => {
                char::from(b).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect();
    format!("sqlite://{path}?mode=rwc")
}

impl Db {
    pub async fn open(url: &str) -> Result<Db, DbError> {
        sqlx::any::install_default_drivers();
        let kind = if url.starts_with("sqlite:") {
            "sqlite"
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            "postgres"
        } else {
            return Err(DbError::Refused(format!(
                "--database must be a postgres:// URL (or leave it out for SQLite under --data), not `{url}`"
            )));
        };
        let pool = AnyPoolOptions::new()
            .max_connections(8)
            .connect(url)
            .await?;
        if kind == "sqlite" {
            // WAL: `registry approve` and readers work beside the running server (sqlx waits
            // up to its 5 s busy timeout for a writer).
            sqlx::query("PRAGMA journal_mode=WAL")
                .fetch_all(&pool)
                .await?;
        }
        let mut tx = pool.begin().await?;
        if kind == "postgres" {
            // Two servers starting at once on a new database would race on the catalog
            // (CREATE TABLE IF NOT EXISTS is not atomic there): one at a time.
            sqlx::query("SELECT pg_advisory_xact_lock(7878100)")
                .execute(&mut *tx)
                .await?;
        }
        for statement in SCHEMA {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(Db { pool, kind })
    }

    // ---- accounts -------------------------------------------------------------------------

    pub async fn user_exists(&self, name: &str) -> Result<bool, DbError> {
        Ok(self.password_hash(name).await?.is_some())
    }

    /// Add a user (no-op when it exists) and make it an owner of `namespace`.
    pub async fn add_user(
        &self,
        name: &str,
        password_hash: Option<&str>,
        namespace: &str,
        now_ms: i64,
    ) -> Result<(), DbError> {
        let mut tx = self.pool.begin().await?;
        if let Some(hash) = password_hash {
            sqlx::query(
                "INSERT INTO users (name, password_hash, created_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .bind(hash)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "INSERT INTO namespace_owners (namespace, owner) VALUES ($1, $2) \
             ON CONFLICT (namespace, owner) DO NOTHING",
        )
        .bind(namespace)
        .bind(name)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn password_hash(&self, name: &str) -> Result<Option<String>, DbError> {
        let row = sqlx::query("SELECT password_hash FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<String, _>(0)).transpose()?)
    }

    pub async fn namespaces(&self, user: &str) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(
            "SELECT namespace FROM namespace_owners WHERE owner = $1 ORDER BY namespace",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get::<String, _>(0))
            .collect::<Result<_, _>>()?)
    }

    pub async fn owns(&self, user: &str, namespace: &str) -> Result<bool, DbError> {
        let row =
            sqlx::query("SELECT owner FROM namespace_owners WHERE namespace = $1 AND owner = $2")
                .bind(namespace)
                .bind(user)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.is_some())
    }

    pub async fn add_token(&self, hash: &str, user: &str, now_ms: i64) -> Result<(), DbError> {
        sqlx::query("INSERT INTO tokens (token_hash, user_name, created_ms) VALUES ($1, $2, $3)")
            .bind(hash)
            .bind(user)
            .bind(now_ms)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Forget a token; whether it was there.
    pub async fn remove_token(&self, hash: &str) -> Result<bool, DbError> {
        let done = sqlx::query("DELETE FROM tokens WHERE token_hash = $1")
            .bind(hash)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn token_user(&self, hash: &str) -> Result<Option<String>, DbError> {
        let row = sqlx::query("SELECT user_name FROM tokens WHERE token_hash = $1")
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<String, _>(0)).transpose()?)
    }

    // ---- device logins --------------------------------------------------------------------

    pub async fn add_device(
        &self,
        device_hash: &str,
        user_code: &str,
        expires_ms: i64,
        interval_secs: i64,
    ) -> Result<Inserted, DbError> {
        let done = sqlx::query(
            "INSERT INTO device_codes (device_code_hash, user_code, expires_ms, interval_secs, \
             last_poll_ms, state) VALUES ($1, $2, $3, $4, 0, 'pending') ON CONFLICT DO NOTHING",
        )
        .bind(device_hash)
        .bind(user_code)
        .bind(expires_ms)
        .bind(interval_secs)
        .execute(&self.pool)
        .await?;
        Ok(if done.rows_affected() == 1 {
            Inserted::Done
        } else {
            Inserted::Exists
        })
    }

    pub async fn device(&self, device_hash: &str) -> Result<Option<DeviceRow>, DbError> {
        let row = sqlx::query(
            "SELECT user_code, expires_ms, interval_secs, last_poll_ms, state, user_name \
             FROM device_codes WHERE device_code_hash = $1",
        )
        .bind(device_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(DeviceRow {
            user_code: r.try_get(0)?,
            expires_ms: r.try_get(1)?,
            interval_secs: r.try_get(2)?,
            last_poll_ms: r.try_get(3)?,
            state: r.try_get(4)?,
            user_name: r.try_get(5)?,
        }))
    }

    pub async fn device_polled(
        &self,
        device_hash: &str,
        now_ms: i64,
        interval_secs: i64,
    ) -> Result<(), DbError> {
        sqlx::query(
            "UPDATE device_codes SET last_poll_ms = $2, interval_secs = $3 \
             WHERE device_code_hash = $1",
        )
        .bind(device_hash)
        .bind(now_ms)
        .bind(interval_secs)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Delete the row; true for the one caller that deleted it (a code is spent once).
    pub async fn spend_device(&self, device_hash: &str) -> Result<bool, DbError> {
        let done = sqlx::query("DELETE FROM device_codes WHERE device_code_hash = $1")
            .bind(device_hash)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Approve (with `user`) or deny (`None`) a pending, unexpired login; false when there is
    /// none with that user code.
    pub async fn decide_device(
        &self,
        user_code: &str,
        user: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, DbError> {
        let state = if user.is_some() { "approved" } else { "denied" };
        let done = sqlx::query(
            "UPDATE device_codes SET state = $2, user_name = $3 \
             WHERE user_code = $1 AND state = 'pending' AND expires_ms > $4",
        )
        .bind(user_code)
        .bind(state)
        .bind(user)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Logins that expired long ago are forgotten.
    pub async fn purge_devices(&self, before_ms: i64) -> Result<(), DbError> {
        sqlx::query("DELETE FROM device_codes WHERE expires_ms < $1")
            .bind(before_ms)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    // ---- packages -------------------------------------------------------------------------

    /// Record a version, in one transaction: the package row (its description follows the
    /// newest publish) and the version, whose (id, version) key refuses a second insert.
    pub async fn insert_version(
        &self,
        row: &VersionRow,
        namespace: &str,
        name: &str,
        description: &str,
    ) -> Result<Inserted, DbError> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO versions (id, version, sha256, size, publisher, published_ms, \
             client_version, manifest, yanked) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0) \
             ON CONFLICT (id, version) DO NOTHING",
        )
        .bind(&row.id)
        .bind(&row.version)
        .bind(&row.sha256)
        .bind(row.size)
        .bind(&row.publisher)
        .bind(row.published_ms)
        .bind(&row.client_version)
        .bind(&row.manifest)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(Inserted::Exists);
        }
        sqlx::query(
            "INSERT INTO packages (id, namespace, name, description) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET description = $4",
        )
        .bind(&row.id)
        .bind(namespace)
        .bind(name)
        .bind(description)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Inserted::Done)
    }

    pub async fn description(&self, id: &str) -> Result<Option<String>, DbError> {
        let row = sqlx::query("SELECT description FROM packages WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<String, _>(0)).transpose()?)
    }

    pub async fn versions(&self, id: &str) -> Result<Vec<VersionRow>, DbError> {
        let rows = sqlx::query(&format!("{VERSION_COLUMNS} WHERE id = $1"))
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(version_row).collect()
    }

    pub async fn version(&self, id: &str, version: &str) -> Result<Option<VersionRow>, DbError> {
        let row = sqlx::query(&format!("{VERSION_COLUMNS} WHERE id = $1 AND version = $2"))
            .bind(id)
            .bind(version)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(version_row).transpose()
    }

    /// Mark a version yanked; nothing else of it changes. False when there is no such version.
    pub async fn yank(&self, id: &str, version: &str) -> Result<bool, DbError> {
        let done = sqlx::query("UPDATE versions SET yanked = 1 WHERE id = $1 AND version = $2")
            .bind(id)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Packages whose id or description holds `text` (case-insensitive), by id, at most 100.
    pub async fn search(&self, text: &str) -> Result<Vec<(String, String)>, DbError> {
        let escaped: String = text
            .to_lowercase()
            .chars()
            .flat_map(|c| match c {
                '%' | '_' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        let rows = sqlx::query(
            "SELECT id, description FROM packages WHERE LOWER(id) LIKE $1 ESCAPE '\\' \
             OR LOWER(description) LIKE $1 ESCAPE '\\' ORDER BY id LIMIT 100",
        )
        .bind(format!("%{escaped}%"))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}

const VERSION_COLUMNS: &str = "SELECT id, version, sha256, size, publisher, published_ms, \
                               client_version, manifest, yanked FROM versions";

fn version_row(r: &AnyRow) -> Result<VersionRow, DbError> {
    Ok(VersionRow {
        id: r.try_get(0)?,
        version: r.try_get(1)?,
        sha256: r.try_get(2)?,
        size: r.try_get(3)?,
        publisher: r.try_get(4)?,
        published_ms: r.try_get(5)?,
        client_version: r.try_get(6)?,
        manifest: r.try_get(7)?,
        yanked: r.try_get::<i64, _>(8)? != 0,
    })
}
