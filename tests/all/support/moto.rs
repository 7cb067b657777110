//! A real S3 wire implementation on loopback for the registry's object storage: moto's server
//! (PyPI `moto[server]`, pinned in `scripts/test_deps.py`), installed once into a venv under
//! the target directory (`target/moto/venv`) unless `SPLICE_MOTO_SERVER` names one. A test that cannot get it fails with the reason; it is never skipped.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::process::{Running, Start};
use object_store::ObjectStoreExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;

pub const ACCESS_KEY: &str = "splice-test-key";
pub const SECRET_KEY: &str = "splice-test-secret";
pub const REGION: &str = "us-east-1";

/// `moto_server`, installed when missing.
pub fn moto_server() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(find)
        .clone()
        .unwrap_or_else(|why| panic!("the S3 registry tests need moto's server: {why}"))
}

fn find() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os("SPLICE_MOTO_SERVER").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(named));
    }
    super::deps::fetch("moto", &[])
}

/// A running moto server on 127.0.0.1 (a free port), killed and reaped when dropped.
pub struct Moto {
    child: Running,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Moto {
    pub fn start() -> Moto {
        Moto::start_with(&[])
    }

    /// With moto settings in its environment, e.g. `INITIAL_NO_AUTH_ACTION_COUNT`: that many
    /// requests are served before every request's access key must be one moto issued.
    pub fn start_with(env: &[(&str, &str)]) -> Moto {
        let mut child = Command::new(moto_server())
            .args(["-H", "127.0.0.1", "-p", "0"])
            .env("PYTHONUNBUFFERED", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .start()
            .expect("moto_server");
        let stderr = child.stderr.take().expect("no stderr");
        // Werkzeug names its port on stderr, then logs each request there: the rest is
        // drained on a thread so that moto never blocks on a full pipe.
        let (found, endpoint) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let mut seen = Vec::new();
            for line in lines.by_ref().map_while(Result::ok) {
                if let Some(at) = line.find("Running on http://") {
                    let _ = found.send(Ok(line[at + "Running on ".len()..].trim().to_string()));
                    break;
                }
                seen.push(line);
            }
            let _ = found.send(Err(seen.join("\n")));
            for _ in lines {}
        });
        let moto = |child: Running, endpoint: String| Moto { child, endpoint };
        match endpoint.recv() {
            Ok(Ok(endpoint)) => moto(child, endpoint),
            // `child` is ended as the panic drops it.
            other => panic!("moto_server did not start: {other:?}"),
        }
    }

    /// The environment `splice registry serve --blobs s3://…` needs to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", REGION.to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
    }

    /// A new bucket, created with a plain PUT (moto takes it unsigned).
    pub fn create_bucket(&self, name: &str) {
        let status = block(async {
            splice::http::client_builder()
                .build()
                .expect("build")
                .put(format!("{}/{name}", self.endpoint))
                .send()
                .await
                .map(|r| r.status())
        })
        .unwrap_or_else(|e| panic!("create bucket {name}: {e}"));
        assert!(status.is_success(), "create bucket {name}: {status}");
    }

    /// An S3 client of `bucket`, for the tests' own reads and writes.
    pub fn bucket(&self, bucket: &str) -> AmazonS3 {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_region(REGION)
            .with_bucket_name(bucket)
            .build()
            .expect("build the S3 client for moto")
    }

    /// The object at `key`, or `None` when there is none.
    pub fn read(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let store = self.bucket(bucket);
        block(async {
            match store.get(&Key::from(key)).await {
                Ok(got) => Some(
                    got.bytes()
                        .await
                        .expect("read the object from moto")
                        .to_vec(),
                ),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("read {key}: {e}"),
            }
        })
    }

    /// Replace (or create) the object at `key`, as someone with write access to the bucket.
    pub fn write(&self, bucket: &str, key: &str, bytes: Vec<u8>) {
        let store = self.bucket(bucket);
        block(store.put(&Key::from(key), bytes.into())).expect("put key in moto");
    }
}

fn block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime")
        .block_on(future)
}
