//! The end of a workflow job's log (a `repair` session's evidence, contract §12).
//!
//! `GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs` answers `302 Found` with a `Location`
//! on another host: a short-lived, signed URL of the log's blob. That URL is read without klaud's
//! token (no `Authorization` header goes to another host, and no redirect is followed from it),
//! only when it is `https://` (or `http://127.0.0.1`, for tests), and never shown in a message
//! (its query is a signature). The body is streamed and only its last `keep_bytes` are kept, so
//! a log of any length costs that much memory; one longer than [`MAX_LOG_TRANSFER`] is not read
//! to its end. Both requests are charged to the pass's read budget; a transient failure of the
//! blob (5xx, 408, 429, network, timeout) is retried with a fresh redirect, under the transport's
//! attempts and request deadline.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use url::{Host, Url};

use super::GitHubClient;
use super::budget::RequestKind;
use super::error::GitHubError;
use super::transport::ApiRequest;
use crate::adapters::feeds::{error_chain, tls_config};
use crate::core::aftercare::evidence::JobLog;

/// The most of one log that is streamed looking for its end: 256 MiB.
pub const MAX_LOG_TRANSFER: u64 = 256 * 1024 * 1024;

/// Logs read at once.
const CONCURRENT_LOG_READS: usize = 4;

/// Why a job's log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobLogError {
    /// GitHub refused the log (404: no such job or no log kept; 410: expired) or failed.
    #[error("{0}")]
    Api(#[from] GitHubError),
    /// GitHub answered without the redirect to the log.
    #[error("GitHub answered HTTP {status} without the log's location")]
    NoLocation { status: u16 },
    /// The log's location is not one klaud reads (not `https://`, or not a URL).
    #[error("the log's location is not an https:// URL ({why})")]
    UnsafeLocation { why: String },
    /// The blob's host answered with an error status.
    #[error("the log's host {host} answered HTTP {status} (after {attempts} attempts)")]
    BlobStatus {
        host: String,
        status: u16,
        attempts: u32,
    },
    /// The blob could not be reached or read to its end in time.
    #[error("the log's host {host}: {detail} (after {attempts} attempts)")]
    BlobUnavailable {
        host: String,
        detail: String,
        attempts: u32,
    },
    /// The log is longer than klaud streams to find its end.
    #[error("the log is longer than {MAX_LOG_TRANSFER} bytes: its end was not reached")]
    TooLong,
    /// No HTTP client could be made for the blob's host.
    #[error("cannot read the log's host: {0}")]
    Client(String),
}

impl JobLogError {
    /// Whether a new redirect and another read of the blob may succeed.
    fn is_transient(&self) -> bool {
        match self {
            JobLogError::BlobStatus { status, .. } => {
                *status == 408 || *status == 429 || *status >= 500
            }
            JobLogError::BlobUnavailable { .. } => true,
            _ => false,
        }
    }
}

impl GitHubClient {
    /// The last `keep_bytes` of each job's log, read a few at a time; each job's result apart.
    pub async fn job_logs(
        &self,
        job_ids: &[u64],
        keep_bytes: u64,
    ) -> BTreeMap<u64, Result<JobLog, JobLogError>> {
        let client = blob_client(self.settings.retry.request_timeout);
        let client = &client;
        futures::stream::iter(job_ids.iter().copied())
            .map(|job_id| async move {
                let log = match client {
                    Ok(client) => self.job_log(client, job_id, keep_bytes).await,
                    Err(why) => Err(JobLogError::Client(why.clone())),
                };
                (job_id, log)
            })
            .buffer_unordered(CONCURRENT_LOG_READS)
            .collect()
            .await
    }

    async fn job_log(
        &self,
        client: &reqwest::Client,
        job_id: u64,
        keep_bytes: u64,
    ) -> Result<JobLog, JobLogError> {
        let attempts = self.settings.retry.attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let location = self.log_location(job_id).await?;
            self.transport
                .budget
                .charge(RequestKind::Read, attempt > 1)?;
            match read_tail(client, &location, keep_bytes, attempt).await {
                Err(error) if error.is_transient() && attempt < attempts => {
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
                }
                read => return read,
            }
        }
    }

    /// Where the job's log is: the `Location` of GitHub's redirect, checked.
    async fn log_location(&self, job_id: u64) -> Result<Url, JobLogError> {
        let path = self.repo_path(&format!("/actions/jobs/{job_id}/logs"));
        let response = self.send(ApiRequest::get(&path)).await?;
        let location = response
            .headers
            .get(http::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .filter(|_| (300..400).contains(&response.status))
            .ok_or(JobLogError::NoLocation {
                status: response.status,
            })?;
        readable_location(location)
    }
}

/// The location when klaud may read it: `https://`, or `http://127.0.0.1` (tests); no user or
/// password in it.
fn readable_location(location: &str) -> Result<Url, JobLogError> {
    let unsafe_location = |why: &str| JobLogError::UnsafeLocation {
        why: why.to_string(),
    };
    let url = Url::parse(location).map_err(|_| unsafe_location("not a URL"))?;
    match url.scheme() {
        "https" => {}
        "http" if url.host() == Some(Host::Ipv4([127, 0, 0, 1].into())) => {}
        _ => return Err(unsafe_location("another scheme")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(unsafe_location("a user name or password in it"));
    }
    Ok(url)
}

/// A client for the blob's host: no token, no redirect, no proxy, the request deadline.
fn blob_client(timeout: Duration) -> Result<reqwest::Client, String> {
    let (config, _tls_problem) = tls_config()?;
    reqwest::Client::builder()
        .user_agent(concat!("klaud/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .no_proxy()
        .timeout(timeout)
        .tls_backend_preconfigured(config)
        .build()
        .map_err(error_chain)
}

/// Reads the blob at `url` to its end, keeping its last `keep_bytes`.
async fn read_tail(
    client: &reqwest::Client,
    url: &Url,
    keep_bytes: u64,
    attempts: u32,
) -> Result<JobLog, JobLogError> {
    let host = url.host_str().unwrap_or("unknown").to_string();
    let unavailable = |error: reqwest::Error| JobLogError::BlobUnavailable {
        host: host.clone(),
        detail: if error.is_timeout() {
            "no complete answer in time".to_string()
        } else {
            error_chain(error)
        },
        attempts,
    };
    let mut response = client.get(url.clone()).send().await.map_err(unavailable)?;
    if response.status() != StatusCode::OK {
        return Err(JobLogError::BlobStatus {
            host: host.clone(),
            status: response.status().as_u16(),
            attempts,
        });
    }
    let mut tail = Tail::new(keep_bytes);
    while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
        tail.push(&chunk)?;
    }
    Ok(tail.finish())
}

/// The end of a stream: at most `keep` bytes, and whether nothing before them was dropped.
struct Tail {
    keep: usize,
    bytes: Vec<u8>,
    received: u64,
}

impl Tail {
    fn new(keep: u64) -> Self {
        Tail {
            keep: usize::try_from(keep).unwrap_or(usize::MAX),
            bytes: Vec::new(),
            received: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) -> Result<(), JobLogError> {
        self.received += chunk.len() as u64;
        if self.received > MAX_LOG_TRANSFER {
            return Err(JobLogError::TooLong);
        }
        self.bytes.extend_from_slice(chunk);
        // Drop the front only now and then, so each byte moves a bounded number of times.
        if self.bytes.len() > self.keep.saturating_mul(2).max(64 * 1024) {
            let excess = self.bytes.len() - self.keep;
            self.bytes.drain(..excess);
        }
        Ok(())
    }

    fn finish(mut self) -> JobLog {
        let excess = self.bytes.len().saturating_sub(self.keep);
        self.bytes.drain(..excess);
        JobLog {
            text: String::from_utf8_lossy(&self.bytes).into_owned(),
            whole: self.received <= self.keep as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_bytes_and_says_whether_it_is_whole() {
        let mut tail = Tail::new(10);
        for chunk in ["line one\n", "line two\n", "last line\n"] {
            tail.push(chunk.as_bytes()).unwrap();
        }
        let log = tail.finish();
        assert_eq!((log.text.as_str(), log.whole), ("last line\n", false));

        let mut short = Tail::new(100);
        short.push(b"all of it\n").unwrap();
        let log = short.finish();
        assert_eq!((log.text.as_str(), log.whole), ("all of it\n", true));

        let mut big = Tail::new(3);
        for _ in 0..100_000 {
            big.push(b"abcdef").unwrap();
        }
        assert!(big.bytes.len() <= 64 * 1024 + 6, "memory stays bounded");
        assert_eq!(big.finish().text, "def");
    }

    #[test]
    fn only_https_or_loopback_locations_are_read() {
        assert!(readable_location("https://results.blob.core.windows.net/x?sig=s").is_ok());
        assert!(readable_location("http://127.0.0.1:4000/logs/1?sig=s").is_ok());
        for refused in [
            "http://example.com/logs",
            "file:///etc/passwd",
            "https://user:pw@example.com/x",
            "/relative",
        ] {
            assert!(
                matches!(
                    readable_location(refused),
                    Err(JobLogError::UnsafeLocation { .. })
                ),
                "{refused}"
            );
        }
    }

    #[test]
    fn only_a_blobs_transient_failures_are_retried() {
        let status = |status| JobLogError::BlobStatus {
            host: "h".into(),
            status,
            attempts: 1,
        };
        assert!(status(503).is_transient() && status(429).is_transient());
        assert!(!status(403).is_transient() && !status(404).is_transient());
        assert!(!JobLogError::TooLong.is_transient());
        assert!(!JobLogError::NoLocation { status: 200 }.is_transient());
    }
}
