//! The one reader of public JSON feeds: InferenceX's public API (`/api/v1/latest-images`,
//! `/api/v1/benchmarks`, `/api/v1/workflow-info`) that `discover` reads, or a local file standing
//! in for one of its answers.
//!
//! - A feed is an `https://` URL, `http://127.0.0.1[:port]/…` (tests only) or an existing local
//!   file ([`FeedSource::parse`]); a sibling endpoint keeps the feed's origin
//!   ([`FeedSource::on_origin`]). Only the URL given is requested, with the query parameters the
//!   caller adds, percent-encoded; redirects are refused, never followed; no proxy is used.
//! - Each request has its own deadline (15 s). Network failures, timeouts, 408, 429 and 5xx are
//!   retried after short pauses (0.5 s, then 1 s), with no pause after the last attempt; any other
//!   status fails at once. Every request sent is counted ([`FeedReader::requests`]).
//! - An answer counts only with status 200 and `Content-Type: application/json`, and a body of at
//!   most 16 MiB ([`MAX_FEED_BYTES`]) both as received and after gzip decoding (which this module
//!   does itself, so that both sizes stay bounded while streaming), that is JSON whose numbers are
//!   all finite (no `NaN`, `Infinity` or `1e400`). A local file obeys the same size and JSON rules.
//!
//! HTTP is reqwest over the rustls octocrab already uses: the ring provider and the platform's
//! root certificates, as octocrab's connector has them (no aws-lc-rs in the binary).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flate2::write::GzDecoder;
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, LOCATION,
};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use url::{Host, Url};

use crate::core::text::bounded;

/// The largest body a feed may have, as received and after decoding: 16 MiB.
pub const MAX_FEED_BYTES: u64 = 16 * 1024 * 1024;

/// Characters of a server's text (an error body, a `Location`, a type) kept in a message.
const SHOWN_CHARS: usize = 200;

const USER_AGENT: &str = concat!("klaud/", env!("CARGO_PKG_VERSION"));

/// Where a feed is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedSource {
    /// An `https://` URL, or an `http://127.0.0.1` one (tests).
    Url(Url),
    /// A local file holding one answer of the feed.
    File(PathBuf),
}

impl FeedSource {
    /// Reads a feed as configured; the error says why the text is no feed.
    pub fn parse(text: &str) -> Result<FeedSource, String> {
        if text.is_empty() {
            return Err("empty".to_string());
        }
        if !text.contains("://") {
            return match std::fs::metadata(text) {
                Ok(metadata) if metadata.is_file() => Ok(FeedSource::File(PathBuf::from(text))),
                Ok(_) => Err("not a file".to_string()),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    Err("no such file (a URL starts with https://)".to_string())
                }
                Err(error) => Err(format!("unreadable file: {error}")),
            };
        }
        let mut url = Url::parse(text).map_err(|error| format!("not a URL: {error}"))?;
        match url.scheme() {
            "https" => {}
            "http" if url.host() == Some(Host::Ipv4([127, 0, 0, 1].into())) => {}
            "http" => return Err("not https:// (http:// is for 127.0.0.1 only)".to_string()),
            other => return Err(format!("not https:// ({other}://)")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a user name or password in the URL".to_string());
        }
        url.set_fragment(None);
        Ok(FeedSource::Url(url))
    }

    /// The endpoint at `path` (absolute, without a query) on this feed's scheme, host and port;
    /// `None` for a file, which has no origin.
    pub fn on_origin(&self, path: &str) -> Option<FeedSource> {
        match self {
            FeedSource::Url(url) => {
                let mut sibling = url.clone();
                sibling.set_query(None);
                sibling.set_path(path);
                Some(FeedSource::Url(sibling))
            }
            FeedSource::File(_) => None,
        }
    }
}

impl std::fmt::Display for FeedSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedSource::Url(url) => formatter.write_str(url.as_str()),
            FeedSource::File(path) => write!(formatter, "{}", path.display()),
        }
    }
}

/// How long one request may take and how failing ones are repeated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedSettings {
    /// The pause before each retry; as many retries as pauses.
    pub retry_delays: Vec<Duration>,
    /// The deadline of one request, its whole body included.
    pub timeout: Duration,
}

impl Default for FeedSettings {
    fn default() -> Self {
        FeedSettings {
            retry_delays: vec![Duration::from_millis(500), Duration::from_secs(1)],
            timeout: Duration::from_secs(15),
        }
    }
}

/// What went wrong reading a feed; `feed` is the URL requested (its query included) or the path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    #[error("feed {feed}: cannot make requests: {detail}")]
    Client { feed: String, detail: String },
    #[error("feed {feed}: network error after {requests} request(s): {detail}")]
    Network {
        feed: String,
        requests: u32,
        detail: String,
    },
    #[error("feed {feed}: no complete answer within {timeout:?}, after {requests} request(s)")]
    Timeout {
        feed: String,
        requests: u32,
        timeout: Duration,
    },
    #[error("feed {feed}: redirect refused: HTTP {status} to {location}")]
    Redirect {
        feed: String,
        status: u16,
        location: String,
    },
    #[error("feed {feed}: HTTP {status} after {requests} request(s){}", shown_body(.body))]
    Status {
        feed: String,
        status: u16,
        requests: u32,
        body: String,
    },
    #[error("feed {feed}: content type {content_type}, not application/json")]
    ContentType { feed: String, content_type: String },
    #[error("feed {feed}: body over the {MAX_FEED_BYTES}-byte limit: {measured}")]
    TooLarge { feed: String, measured: String },
    #[error("feed {feed}: {detail}")]
    Encoding { feed: String, detail: String },
    #[error("feed {feed}: not JSON: {detail}")]
    NotJson { feed: String, detail: String },
    #[error("feed {feed}: cannot read the file: {detail}")]
    File { feed: String, detail: String },
}

fn shown_body(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

/// Reads feeds, counting every request it sends.
#[derive(Debug)]
pub struct FeedReader {
    /// The client, or why none could be built (reported on the first request).
    client: Result<reqwest::Client, String>,
    /// Why `https://` cannot work (no root certificate found); `http://127.0.0.1` still can.
    tls_problem: Option<String>,
    settings: FeedSettings,
    requests: AtomicU64,
}

impl FeedReader {
    pub fn new(settings: FeedSettings) -> FeedReader {
        // reqwest is built without a default crypto provider (it would bring aws-lc-rs, and it
        // panics without one): the client always gets this rustls configuration.
        let (client, tls_problem) = match tls_config() {
            Ok((config, tls_problem)) => {
                let client = reqwest::Client::builder()
                    .user_agent(USER_AGENT)
                    .redirect(reqwest::redirect::Policy::none())
                    .retry(reqwest::retry::never())
                    .no_proxy()
                    .timeout(settings.timeout)
                    .tls_backend_preconfigured(config)
                    .build()
                    .map_err(error_chain);
                (client, tls_problem)
            }
            Err(problem) => (Err(problem), None),
        };
        FeedReader {
            client,
            tls_problem,
            settings,
            requests: AtomicU64::new(0),
        }
    }

    /// HTTP requests sent so far, retries included (reading a file sends none).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The feed's JSON: for a URL with `query` appended, for a file as it is (a file has no query).
    pub async fn get_json(
        &self,
        source: &FeedSource,
        query: &[(&str, &str)],
    ) -> Result<Value, FeedError> {
        match source {
            FeedSource::File(path) => read_file(path).await,
            FeedSource::Url(url) => {
                let mut url = url.clone();
                if !query.is_empty() {
                    url.query_pairs_mut().extend_pairs(query);
                }
                self.get_url(url).await
            }
        }
    }

    async fn get_url(&self, url: Url) -> Result<Value, FeedError> {
        let feed = url.to_string();
        let client = self.client.as_ref().map_err(|detail| FeedError::Client {
            feed: feed.clone(),
            detail: detail.clone(),
        })?;
        if let (Some(detail), "https") = (&self.tls_problem, url.scheme()) {
            return Err(FeedError::Client {
                feed,
                detail: detail.clone(),
            });
        }
        let mut sent: u32 = 0;
        loop {
            if let Some(delay) = sent
                .checked_sub(1)
                .and_then(|index| self.settings.retry_delays.get(index as usize))
            {
                tokio::time::sleep(*delay).await;
            }
            sent += 1;
            self.requests.fetch_add(1, Ordering::Relaxed);
            let failure = match attempt(client, &url, &feed).await {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            if failure.is_transient() && (sent as usize) <= self.settings.retry_delays.len() {
                continue;
            }
            return Err(failure.into_error(feed, sent, self.settings.timeout));
        }
    }
}

/// rustls with the ring provider and the platform's roots, like octocrab's connector; the second
/// value says why `https://` will fail when no root certificate could be loaded.
pub(crate) fn tls_config() -> Result<(rustls::ClientConfig, Option<String>), String> {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
    let problem = (added == 0).then(|| match loaded.errors.first() {
        Some(error) => format!("no root certificates found: {error}"),
        None => "no root certificates found".to_string(),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| format!("TLS: {error}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((config, problem.map(|problem| one_line(&problem))))
}

/// Why one request gave no JSON.
#[derive(Debug)]
enum Failure {
    Network(String),
    Timeout,
    Status {
        status: StatusCode,
        body: String,
    },
    /// Not worth repeating: the answer itself is wrong.
    Fatal(FeedError),
}

impl Failure {
    fn is_transient(&self) -> bool {
        match self {
            Failure::Network(_) | Failure::Timeout => true,
            Failure::Status { status, .. } => is_transient_status(*status),
            Failure::Fatal(_) => false,
        }
    }

    fn into_error(self, feed: String, requests: u32, timeout: Duration) -> FeedError {
        match self {
            Failure::Network(detail) => FeedError::Network {
                feed,
                requests,
                detail,
            },
            Failure::Timeout => FeedError::Timeout {
                feed,
                requests,
                timeout,
            },
            Failure::Status { status, body } => FeedError::Status {
                feed,
                status: status.as_u16(),
                requests,
                body,
            },
            Failure::Fatal(error) => error,
        }
    }
}

fn is_transient_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

fn transport(error: reqwest::Error) -> Failure {
    if error.is_timeout() {
        Failure::Timeout
    } else {
        Failure::Network(error_chain(error))
    }
}

/// One request: the answer checked and read into JSON.
async fn attempt(client: &reqwest::Client, url: &Url, feed: &str) -> Result<Value, Failure> {
    let feed = || feed.to_string();
    let mut response = client
        .get(url.clone())
        .header(ACCEPT, "application/json")
        .header(ACCEPT_ENCODING, "gzip")
        .send()
        .await
        .map_err(transport)?;
    let status = response.status();
    let headers = response.headers().clone();
    let header = |name| {
        headers
            .get(name)
            .map(|value: &HeaderValue| shown(value.as_bytes()))
    };
    if status.is_redirection() {
        let location = header(LOCATION).unwrap_or_else(|| "nowhere (no Location)".to_string());
        let status = status.as_u16();
        return Err(Failure::Fatal(FeedError::Redirect {
            feed: feed(),
            status,
            location,
        }));
    }
    if status != StatusCode::OK {
        // An encoded body would only show as noise.
        let body = match headers.contains_key(CONTENT_ENCODING) {
            true => String::new(),
            false => body_excerpt(&mut response).await,
        };
        return Err(Failure::Status { status, body });
    }
    let content_type = header(CONTENT_TYPE);
    if !content_type.as_deref().is_some_and(is_json_content_type) {
        let content_type = content_type.unwrap_or_else(|| "missing".to_string());
        return Err(Failure::Fatal(FeedError::ContentType {
            feed: feed(),
            content_type,
        }));
    }
    let encoding = header(CONTENT_ENCODING).map(|encoding| encoding.to_ascii_lowercase());
    let gzip = match encoding.as_deref() {
        None | Some("identity") => false,
        Some("gzip" | "x-gzip") => true,
        Some(other) => {
            let detail = format!("unsupported content encoding {other}");
            return Err(Failure::Fatal(FeedError::Encoding {
                feed: feed(),
                detail,
            }));
        }
    };
    let too_large = |measured: String| {
        Failure::Fatal(FeedError::TooLarge {
            feed: feed(),
            measured,
        })
    };
    let length = header(CONTENT_LENGTH).and_then(|length| length.parse::<u64>().ok());
    if let Some(length) = length.filter(|length| *length > MAX_FEED_BYTES) {
        return Err(too_large(format!("Content-Length {length}")));
    }
    let mut body = BodySink::new(gzip);
    let mut received: u64 = 0;
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        received += chunk.len() as u64;
        if received > MAX_FEED_BYTES {
            return Err(too_large("received while streaming".to_string()));
        }
        body.write(&chunk)
            .map_err(|problem| problem.into_failure(feed()))?;
    }
    let bytes = body
        .finish()
        .map_err(|problem| problem.into_failure(feed()))?;
    parse_json(&bytes).map_err(|detail| {
        Failure::Fatal(FeedError::NotJson {
            feed: feed(),
            detail,
        })
    })
}

/// The start of an error answer's body, for the message; empty when it cannot be read quickly.
async fn body_excerpt(response: &mut reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < 1024 {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    shown(&bytes)
}

/// `application/json`, with or without parameters such as `; charset=utf-8`.
fn is_json_content_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// A body being received: kept as it is or gzip-decoded, within [`MAX_FEED_BYTES`] either way.
enum BodySink {
    Identity(Bounded),
    Gzip(Box<GzDecoder<Bounded>>),
}

enum SinkProblem {
    TooLarge,
    CorruptGzip(String),
}

impl SinkProblem {
    fn into_failure(self, feed: String) -> Failure {
        Failure::Fatal(match self {
            SinkProblem::TooLarge => FeedError::TooLarge {
                feed,
                measured: "after gzip decoding".to_string(),
            },
            SinkProblem::CorruptGzip(detail) => FeedError::Encoding {
                feed,
                detail: format!("corrupt gzip body: {detail}"),
            },
        })
    }
}

impl BodySink {
    fn new(gzip: bool) -> BodySink {
        let bounded = Bounded {
            bytes: Vec::new(),
            exceeded: false,
        };
        if gzip {
            BodySink::Gzip(Box::new(GzDecoder::new(bounded)))
        } else {
            BodySink::Identity(bounded)
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), SinkProblem> {
        match self {
            BodySink::Identity(bounded) => {
                bounded.write_all(chunk).map_err(|_| SinkProblem::TooLarge)
            }
            BodySink::Gzip(decoder) => {
                let result = decoder.write_all(chunk);
                gzip_result(result, decoder.get_ref().exceeded)
            }
        }
    }

    fn finish(self) -> Result<Vec<u8>, SinkProblem> {
        match self {
            BodySink::Identity(bounded) => Ok(bounded.bytes),
            BodySink::Gzip(mut decoder) => {
                let result = decoder.try_finish();
                gzip_result(result, decoder.get_ref().exceeded)?;
                Ok(std::mem::take(&mut decoder.get_mut().bytes))
            }
        }
    }
}

fn gzip_result(result: io::Result<()>, exceeded: bool) -> Result<(), SinkProblem> {
    match result {
        Ok(()) => Ok(()),
        Err(_) if exceeded => Err(SinkProblem::TooLarge),
        Err(error) => Err(SinkProblem::CorruptGzip(one_line(&error.to_string()))),
    }
}

/// Bytes up to [`MAX_FEED_BYTES`]; a write beyond fails and marks it exceeded.
struct Bounded {
    bytes: Vec<u8>,
    exceeded: bool,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > MAX_FEED_BYTES {
            self.exceeded = true;
            return Err(io::Error::other("decoded body too large"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

async fn read_file(path: &Path) -> Result<Value, FeedError> {
    let feed = path.display().to_string();
    let unreadable = |error: io::Error| FeedError::File {
        feed: feed.clone(),
        detail: one_line(&error.to_string()),
    };
    let file = tokio::fs::File::open(path).await.map_err(unreadable)?;
    let length = file.metadata().await.map_err(unreadable)?.len();
    if length > MAX_FEED_BYTES {
        return Err(FeedError::TooLarge {
            feed,
            measured: format!("a file of {length} bytes"),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FEED_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FEED_BYTES {
        return Err(FeedError::TooLarge {
            feed,
            measured: "a file that grew while read".to_string(),
        });
    }
    parse_json(&bytes).map_err(|detail| FeedError::NotJson { feed, detail })
}

/// JSON whose every number is finite. serde_json already refuses `NaN`, `Infinity` and a number
/// out of range such as `1e400`; the walk keeps that true should a feature such as
/// `arbitrary_precision` ever be unified into the build.
fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|error| one_line(&error.to_string()))?;
    if has_non_finite_number(&value) {
        return Err("a number is not finite".to_string());
    }
    Ok(value)
}

fn has_non_finite_number(value: &Value) -> bool {
    match value {
        Value::Number(number) => {
            !(number.is_i64() || number.is_u64() || number.as_f64().is_some_and(f64::is_finite))
        }
        Value::Array(items) => items.iter().any(has_non_finite_number),
        Value::Object(fields) => fields.values().any(has_non_finite_number),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// A server's bytes as one bounded line of text.
fn shown(bytes: &[u8]) -> String {
    one_line(&bounded(String::from_utf8_lossy(bytes).trim(), SHOWN_CHARS))
}

fn one_line(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .collect()
}

/// Every cause of an HTTP error, outermost first, without repeats or the URL (the message names
/// the feed once).
pub(crate) fn error_chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(&error);
    while let Some(current) = cause {
        let text = one_line(&current.to_string());
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        cause = current.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_allow_parameters_and_any_case() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(is_json_content_type("Application/JSON;charset=UTF-8"));
        assert!(!is_json_content_type("text/html"));
        assert!(!is_json_content_type("application/jsonp"));
        assert!(!is_json_content_type("application/problem+json"));
        assert!(!is_json_content_type(""));
    }

    #[test]
    fn only_408_429_and_5xx_are_worth_repeating() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert!(
                is_transient_status(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 410, 422] {
            assert!(
                !is_transient_status(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
    }

    #[test]
    fn json_with_a_non_finite_or_overflowing_number_is_refused() {
        assert_eq!(
            parse_json(b"[1, 2.5, -3, 1e308]").unwrap(),
            serde_json::json!([1, 2.5, -3, 1e308])
        );
        for text in [
            "[NaN]",
            "[Infinity]",
            "[-Infinity]",
            "{\"x\": 1e400}",
            "[-1e400]",
        ] {
            assert!(parse_json(text.as_bytes()).is_err(), "{text} accepted");
        }
        let huge_integer = format!("[{}]", "9".repeat(400));
        assert!(parse_json(huge_integer.as_bytes()).is_err());
        assert!(parse_json(b"[1] x").is_err());
    }

    #[test]
    fn the_walk_passes_finite_numbers_and_the_string_nan() {
        let finite = serde_json::json!({"a": [{"b": 1.5}, null, "NaN", u64::MAX, i64::MIN]});
        assert!(!has_non_finite_number(&finite));
    }

    #[test]
    fn a_gzip_body_is_decoded_and_bounded_after_decoding() {
        let gzip = |bytes: &[u8]| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        };
        let mut sink = BodySink::new(true);
        for chunk in gzip(b"[1,2,3]").chunks(3) {
            assert!(sink.write(chunk).is_ok());
        }
        assert_eq!(sink.finish().ok(), Some(b"[1,2,3]".to_vec()));

        let mut bomb = BodySink::new(true);
        let compressed = gzip(&vec![b' '; MAX_FEED_BYTES as usize + 1]);
        let problem = compressed
            .chunks(4096)
            .map(|chunk| bomb.write(chunk))
            .find_map(Result::err);
        let problem = problem.or_else(|| bomb.finish().err());
        assert!(matches!(problem, Some(SinkProblem::TooLarge)));

        let mut truncated = BodySink::new(true);
        let whole = gzip(b"[1,2,3]");
        assert!(truncated.write(&whole[..whole.len() - 4]).is_ok());
        assert!(matches!(
            truncated.finish(),
            Err(SinkProblem::CorruptGzip(_))
        ));
    }

    #[test]
    fn an_identity_body_of_exactly_the_limit_fits() {
        let mut sink = BodySink::new(false);
        assert!(sink.write(&vec![b' '; MAX_FEED_BYTES as usize]).is_ok());
        assert!(matches!(sink.write(b" "), Err(SinkProblem::TooLarge)));
    }

    #[test]
    fn server_text_is_shown_on_one_bounded_line() {
        assert_eq!(shown(b"  not\nfound\r\n"), "not found");
        assert_eq!(shown(&[b'x'; 500]).chars().count(), SHOWN_CHARS + 1);
        assert_eq!(shown(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn settings_default_to_fifteen_seconds_and_two_short_retries() {
        let settings = FeedSettings::default();
        assert_eq!(settings.timeout, Duration::from_secs(15));
        assert_eq!(
            settings.retry_delays,
            [Duration::from_millis(500), Duration::from_secs(1)]
        );
    }

    #[test]
    fn the_user_agent_names_klaud_and_its_version() {
        assert_eq!(USER_AGENT, format!("klaud/{}", env!("CARGO_PKG_VERSION")));
    }
}
