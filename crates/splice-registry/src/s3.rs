//! Archives in S3-compatible object storage (`registry serve --blobs s3://BUCKET[/PREFIX]`),
//! through `object_store` configured from the standard AWS environment. Keys are
//! `PREFIX/sha256/<hex>`. A put is conditional (`If-None-Match: *`), so an object once written
//! is never replaced; an S3 PUT is atomic, so readers see a whole archive or none.

use std::time::Duration;

use axum::body::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientConfigKey, ObjectStore, ObjectStoreExt, PutMode, PutPayload, RetryConfig,
};
use thiserror::Error;

use crate::storage::{BlobError, BlobFuture, BlobStore, checked_key};
use splice_core::packages::archive::sha256_hex;

/// `--blobs` that is not a usable `s3://` URL, or an environment object_store refuses.
#[derive(Debug, Error)]
pub enum S3UrlError {
    #[error(
        "--blobs must be s3://BUCKET or s3://BUCKET/PREFIX (leave it out for archives under --data), not `{0}`"
    )]
    NotS3(String),
    #[error("--blobs: `{0}` is not an S3 bucket name (3 to 63 of a-z, 0-9, `.` and `-`)")]
    Bucket(String),
    #[error("--blobs: the prefix `{0}` is not a plain path (no empty, `.` or `..` segments)")]
    Prefix(String),
    #[error("--blobs {url}: {source}")]
    Config {
        url: String,
        source: object_store::Error,
    },
}

/// Where the archives go: the bucket and the prefix inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    pub prefix: String,
}

/// `s3://BUCKET[/PREFIX]`, checked before anything is contacted.
pub fn parse_url(url: &str) -> Result<S3Location, S3UrlError> {
    let rest = url
        .strip_prefix("s3://")
        .ok_or_else(|| S3UrlError::NotS3(url.to_string()))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let bucket_ok = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && !bucket.starts_with(['.', '-'])
        && !bucket.ends_with(['.', '-']);
    if !bucket_ok {
        return Err(S3UrlError::Bucket(bucket.to_string()));
    }
    let prefix = prefix.trim_end_matches('/');
    let plain = prefix.is_empty()
        || prefix.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment.chars().all(|c| !c.is_control())
        });
    if !plain {
        return Err(S3UrlError::Prefix(prefix.to_string()));
    }
    Ok(S3Location {
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
    })
}

pub struct S3BlobStore {
    store: AmazonS3,
    location: S3Location,
    /// `AWS_ENDPOINT_URL` when set (a local or non-AWS store), for messages.
    endpoint: Option<String>,
}

impl S3BlobStore {
    /// The client, configured from `AWS_*` in the environment; nothing is contacted yet.
    pub fn new(url: &str) -> Result<S3BlobStore, S3UrlError> {
        let location = parse_url(url)?;
        // object_store builds its own reqwest client: the process's provider must be ring's
        // before it does (aws-lc-rs is compiled in too here, and rustls would pick neither).
        splice_core::http::install_crypto_provider();
        // Few, short retries: an unreachable store is reported at start within seconds, and a
        // publish fails rather than hanging for the crate's default three minutes.
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 2,
            retry_timeout: Duration::from_secs(15),
        };
        let builder = AmazonS3Builder::from_env()
            .with_bucket_name(&location.bucket)
            .with_retry(retry)
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                "5s",
            )
            .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), "120s");
        let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
        let store = builder.build().map_err(|source| S3UrlError::Config {
            url: url.to_string(),
            source,
        })?;
        Ok(S3BlobStore {
            store,
            location,
            endpoint,
        })
    }

    /// List the prefix once: a missing bucket, refused credentials or an unreachable endpoint
    /// is found at start, not at the first publish.
    pub async fn check(&self) -> Result<(), BlobError> {
        let prefix = self.prefix_path();
        self.store
            .list_with_delimiter(prefix.as_ref())
            .await
            .map(|_| ())
            .map_err(|source| BlobError::Object {
                key: self.describe(),
                source,
            })
    }

    fn prefix_path(&self) -> Option<Path> {
        (!self.location.prefix.is_empty()).then(|| Path::from(self.location.prefix.as_str()))
    }

    fn key(&self, sha256: &str) -> Result<Path, BlobError> {
        let hex = checked_key(sha256)?;
        Ok(match self.prefix_path() {
            Some(prefix) => prefix.clone().join("sha256").join(hex),
            None => Path::from("sha256").join(hex),
        })
    }

    fn failed(&self, key: &Path) -> impl FnOnce(object_store::Error) -> BlobError {
        let key = format!("s3://{}/{key}", self.location.bucket);
        move |source| BlobError::Object { key, source }
    }

    async fn put_once(&self, sha256: &str, bytes: Bytes) -> Result<(), BlobError> {
        let key = self.key(sha256)?;
        let written = self
            .store
            .put_opts(&key, PutPayload::from(bytes), PutMode::Create.into())
            .await;
        match written {
            Ok(_) => Ok(()),
            // Someone stored this key first: fine only if what is there is the archive.
            Err(object_store::Error::AlreadyExists { .. }) => match self.read(sha256).await? {
                Some(held) if sha256_hex(&held) == sha256 => Ok(()),
                _ => Err(BlobError::Corrupt(format!(
                    "s3://{}/{key}",
                    self.location.bucket
                ))),
            },
            Err(e) => Err(self.failed(&key)(e)),
        }
    }

    async fn read(&self, sha256: &str) -> Result<Option<Bytes>, BlobError> {
        let key = self.key(sha256)?;
        match self.store.get(&key).await {
            Ok(result) => result.bytes().await.map(Some).map_err(self.failed(&key)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.failed(&key)(e)),
        }
    }
}

impl BlobStore for S3BlobStore {
    fn put<'a>(&'a self, sha256: &'a str, bytes: Bytes) -> BlobFuture<'a, ()> {
        Box::pin(self.put_once(sha256, bytes))
    }

    fn get<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, Option<Bytes>> {
        Box::pin(self.read(sha256))
    }

    fn describe(&self) -> String {
        let url = match self.location.prefix.as_str() {
            "" => format!("s3://{}", self.location.bucket),
            prefix => format!("s3://{}/{prefix}", self.location.bucket),
        };
        match &self.endpoint {
            Some(endpoint) => format!("{url} at {endpoint}"),
            None => url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_bucket_and_a_plain_prefix() {
        let at = |bucket: &str, prefix: &str| S3Location {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        };
        assert_eq!(parse_url("s3://archives").ok(), Some(at("archives", "")));
        assert_eq!(
            parse_url("s3://my.bucket-1/registry/prod/").ok(),
            Some(at("my.bucket-1", "registry/prod"))
        );
        for bad in [
            "archives",
            "https://s3.amazonaws.com/archives",
            "s3://",
            "s3://ab",
            "s3://Upper",
            "s3://under_score",
            "s3://-dash",
            "s3://ok-bucket//double",
            "s3://ok-bucket/../up",
            "s3://ok-bucket/a/./b",
        ] {
            assert!(parse_url(bad).is_err(), "{bad} was taken");
        }
    }
}
