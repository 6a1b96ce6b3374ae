//! `adapters::feeds` against loopback servers this file starts and stops: each server answers its
//! connections from a script of raw HTTP replies (well-formed, malformed, cut off or silent) and
//! records every request it received.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use klaud::adapters::feeds::{FeedError, FeedReader, FeedSettings, FeedSource, MAX_FEED_BYTES};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// What the server does with one connection, in the order connections arrive.
enum Reply {
    /// These bytes, then the connection closed.
    Raw(Vec<u8>),
    /// A chunked 200 of `count` chunks of `size` spaces.
    Chunked { count: usize, size: usize },
    /// The request read, then the connection closed without an answer.
    Close,
    /// The request read, then the connection reset.
    Reset,
    /// The request read and never answered.
    Silent,
}

struct Server {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            // Dropped with this task when the server stops, aborting the connections it holds.
            let mut connections = JoinSet::new();
            let mut replies = replies.into_iter();
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::Raw(answer(
                        "500 Internal Server Error",
                        &[],
                        b"unexpected request",
                    ))
                });
                connections.spawn(serve(stream, reply, seen.clone()));
            }
        });
        Server {
            address,
            requests,
            task,
        }
    }

    fn url(&self, path: &str) -> FeedSource {
        FeedSource::parse(&format!("http://{}{path}", self.address)).unwrap()
    }

    /// The request line and headers of every request received, lowercased.
    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// The request target of every request received.
    fn targets(&self) -> Vec<String> {
        let requests = self.requests();
        let target = |head: &String| head.split(' ').nth(1).unwrap_or_default().to_string();
        requests.iter().map(target).collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, reply: Reply, seen: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    // The target keeps its case (the query's escapes are checked); the headers are lowercased.
    let (line, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    seen.lock()
        .unwrap()
        .push(format!("{line}\r\n{}", headers.to_lowercase()));
    match reply {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Chunked { count, size } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                        transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut chunk = format!("{size:x}\r\n").into_bytes();
            chunk.extend(std::iter::repeat_n(b' ', size));
            chunk.extend_from_slice(b"\r\n");
            for _ in 0..count {
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
        }
        Reply::Close => {}
        Reply::Reset => {
            let _ = stream.set_zero_linger();
        }
        Reply::Silent => std::future::pending().await,
    }
}

/// A whole HTTP/1.1 answer that closes its connection.
fn answer(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut text = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn json_answer(body: &[u8]) -> Reply {
    Reply::Raw(answer(
        "200 OK",
        &[("content-type", "application/json; charset=utf-8")],
        body,
    ))
}

fn status_answer(status: &str, body: &str) -> Reply {
    Reply::Raw(answer(
        status,
        &[("content-type", "text/plain")],
        body.as_bytes(),
    ))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// Short pauses between attempts and a generous deadline: tests stay fast and nothing times out
/// by accident.
fn reader() -> FeedReader {
    FeedReader::new(FeedSettings {
        retry_delays: vec![Duration::from_millis(10), Duration::from_millis(20)],
        timeout: Duration::from_secs(10),
    })
}

#[tokio::test]
async fn a_json_array_is_read_with_klauds_user_agent_and_gzip_accepted() {
    let server = Server::start(vec![json_answer(br#"[{"image": "vllm:0.9"}, 1.5, null]"#)]).await;
    let reader = reader();

    let value = reader
        .get_json(&server.url("/api/v1/latest-images"), &[])
        .await
        .unwrap();

    assert_eq!(value, json!([{"image": "vllm:0.9"}, 1.5, null]));
    assert_eq!(reader.requests(), 1);
    let request = &server.requests()[0];
    assert!(
        request.starts_with("GET /api/v1/latest-images HTTP/1.1\r\n"),
        "{request}"
    );
    let user_agent = format!("user-agent: klaud/{}\r\n", env!("CARGO_PKG_VERSION"));
    assert!(request.contains(&user_agent), "{request}");
    assert!(request.contains("accept-encoding: gzip\r\n"), "{request}");
    assert!(
        request.contains("accept: application/json\r\n"),
        "{request}"
    );
}

#[tokio::test]
async fn a_gzip_encoded_body_is_decoded() {
    let body = gzip(br#"{"runs": [1, 2, 3]}"#);
    let headers = [
        ("content-type", "application/json"),
        ("content-encoding", "gzip"),
    ];
    let server = Server::start(vec![Reply::Raw(answer("200 OK", &headers, &body))]).await;

    let value = reader().get_json(&server.url("/feed"), &[]).await.unwrap();

    assert_eq!(value, json!({"runs": [1, 2, 3]}));
}

#[tokio::test]
async fn a_corrupt_gzip_body_or_an_unknown_encoding_is_refused() {
    let mut body = gzip(b"[1, 2, 3]");
    body.truncate(body.len() - 3);
    let corrupt = [
        ("content-type", "application/json"),
        ("content-encoding", "gzip"),
    ];
    let brotli = [
        ("content-type", "application/json"),
        ("content-encoding", "br"),
    ];
    let server = Server::start(vec![
        Reply::Raw(answer("200 OK", &corrupt, &body)),
        Reply::Raw(answer("200 OK", &brotli, b"[1]")),
    ])
    .await;
    let reader = reader();

    let corrupt = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();
    let brotli = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(corrupt, FeedError::Encoding { .. }), "{corrupt}");
    assert!(
        corrupt.to_string().contains("corrupt gzip body"),
        "{corrupt}"
    );
    assert!(
        brotli
            .to_string()
            .contains("unsupported content encoding br"),
        "{brotli}"
    );
    assert_eq!(reader.requests(), 2);
}

#[tokio::test]
async fn a_redirect_is_refused_and_never_followed() {
    let target = Server::start(vec![json_answer(b"[]")]).await;
    let target_url = target.url("/target").to_string();
    let location = [("location", target_url.as_str())];
    let server = Server::start(vec![Reply::Raw(answer("302 Found", &location, b""))]).await;
    let reader = reader();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    match &error {
        FeedError::Redirect {
            status, location, ..
        } => {
            assert_eq!(*status, 302);
            assert_eq!(location, &target_url);
        }
        other => panic!("not a refused redirect: {other}"),
    }
    assert_eq!(server.targets(), ["/feed"]);
    assert!(target.requests().is_empty(), "the redirect was followed");
    assert_eq!(reader.requests(), 1);
}

#[tokio::test]
async fn a_redirect_on_the_same_server_is_not_followed_either() {
    let location = [("location", "/elsewhere")];
    let server = Server::start(vec![
        Reply::Raw(answer("301 Moved Permanently", &location, b"")),
        json_answer(b"[]"),
    ])
    .await;

    let error = reader()
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "feed {}: redirect refused: HTTP 301 to /elsewhere",
            server.url("/feed")
        )
    );
    assert_eq!(server.targets(), ["/feed"]);
}

#[tokio::test]
async fn a_body_that_is_not_application_json_is_refused_naming_its_type() {
    let html = answer(
        "200 OK",
        &[("content-type", "text/html; charset=utf-8")],
        b"[1]",
    );
    let untyped = answer("200 OK", &[], b"[1]");
    let server = Server::start(vec![Reply::Raw(html), Reply::Raw(untyped)]).await;
    let reader = reader();

    let html = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();
    let untyped = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(html, FeedError::ContentType { .. }), "{html}");
    assert!(
        html.to_string()
            .contains("content type text/html; charset=utf-8, not application/json"),
        "{html}"
    );
    assert!(
        untyped.to_string().contains("content type missing"),
        "{untyped}"
    );
    assert_eq!(reader.requests(), 2, "a wrong type is not worth repeating");
}

#[tokio::test]
async fn a_content_length_over_the_limit_fails_before_the_body_is_read() {
    let length = (MAX_FEED_BYTES + 1).to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n["
    );
    let server = Server::start(vec![Reply::Raw(head.into_bytes())]).await;

    let error = reader()
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(error, FeedError::TooLarge { .. }), "{error}");
    assert!(
        error
            .to_string()
            .ends_with(&format!("Content-Length {length}")),
        "{error}"
    );
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_fails_while_streaming() {
    let size = 64 * 1024;
    let count = (MAX_FEED_BYTES as usize / size) + 1;
    let server = Server::start(vec![Reply::Chunked { count, size }]).await;
    let reader = reader();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(error, FeedError::TooLarge { .. }), "{error}");
    assert!(
        error.to_string().ends_with("received while streaming"),
        "{error}"
    );
    assert_eq!(reader.requests(), 1);
}

#[tokio::test]
async fn a_chunked_body_within_the_limit_is_read() {
    let server = Server::start(vec![Reply::Chunked {
        count: 4,
        size: 1024,
    }])
    .await;

    // Spaces alone are no JSON: the body was read whole and reached the parser.
    let error = reader()
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(error, FeedError::NotJson { .. }), "{error}");
}

#[tokio::test]
async fn a_gzip_bomb_fails_once_its_decoded_size_passes_the_limit() {
    let body = gzip(&vec![b' '; MAX_FEED_BYTES as usize + 1024]);
    assert!(
        body.len() < 1024 * 1024,
        "the bomb is small: {} bytes",
        body.len()
    );
    let headers = [
        ("content-type", "application/json"),
        ("content-encoding", "gzip"),
    ];
    let server = Server::start(vec![Reply::Raw(answer("200 OK", &headers, &body))]).await;

    let error = reader()
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(error, FeedError::TooLarge { .. }), "{error}");
    assert!(
        error.to_string().ends_with("after gzip decoding"),
        "{error}"
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused() {
    let server = Server::start(vec![json_answer(b"<html>sorry</html>")]).await;

    let error = reader()
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(matches!(error, FeedError::NotJson { .. }), "{error}");
    assert!(error.to_string().contains(": not JSON: "), "{error}");
}

#[tokio::test]
async fn nan_infinity_and_an_overflowing_number_are_refused() {
    let bodies: [&[u8]; 4] = [
        b"[NaN]",
        b"{\"x\": Infinity}",
        b"[-Infinity]",
        b"{\"throughput\": 1e400}",
    ];
    let server = Server::start(bodies.iter().map(|body| json_answer(body)).collect()).await;
    let reader = reader();

    for body in bodies {
        let error = reader
            .get_json(&server.url("/feed"), &[])
            .await
            .unwrap_err();
        let body = String::from_utf8_lossy(body);
        assert!(
            matches!(error, FeedError::NotJson { .. }),
            "{body}: {error}"
        );
    }
    assert_eq!(reader.requests(), 4, "a bad body is not worth repeating");
}

#[tokio::test]
async fn a_503_is_retried_and_both_requests_counted() {
    let server = Server::start(vec![
        status_answer("503 Service Unavailable", "busy"),
        json_answer(b"[]"),
    ])
    .await;
    let reader = reader();

    let value = reader.get_json(&server.url("/feed"), &[]).await.unwrap();

    assert_eq!(value, json!([]));
    assert_eq!(reader.requests(), 2);
    assert_eq!(server.targets(), ["/feed", "/feed"]);
}

#[tokio::test]
async fn a_429_three_times_fails_after_three_requests_and_the_pauses_between() {
    let too_many = || status_answer("429 Too Many Requests", "slow down");
    let server = Server::start(vec![too_many(), too_many(), too_many(), json_answer(b"[]")]).await;
    let reader = FeedReader::new(FeedSettings {
        retry_delays: vec![Duration::from_millis(50), Duration::from_millis(100)],
        timeout: Duration::from_secs(10),
    });
    let started = Instant::now();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(
        error,
        FeedError::Status {
            feed: server.url("/feed").to_string(),
            status: 429,
            requests: 3,
            body: "slow down".into()
        }
    );
    assert_eq!(reader.requests(), 3);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_404_fails_at_once_showing_the_start_of_its_body() {
    let server = Server::start(vec![
        status_answer("404 Not Found", "no such\nmodel"),
        json_answer(b"[]"),
    ])
    .await;
    let reader = reader();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "feed {}: HTTP 404 after 1 request(s): no such model",
            server.url("/feed")
        )
    );
    assert_eq!(reader.requests(), 1);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_connection_closed_without_an_answer_is_retried() {
    let server = Server::start(vec![Reply::Close, Reply::Reset, json_answer(b"{}")]).await;
    let reader = reader();

    let value = reader.get_json(&server.url("/feed"), &[]).await.unwrap();

    assert_eq!(value, json!({}));
    assert_eq!(reader.requests(), 3);
}

#[tokio::test]
async fn connections_reset_every_time_fail_as_a_network_error_after_three_requests() {
    let server = Server::start(vec![
        Reply::Reset,
        Reply::Reset,
        Reply::Reset,
        json_answer(b"{}"),
    ])
    .await;
    let reader = reader();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    match &error {
        FeedError::Network { requests, .. } => assert_eq!(*requests, 3),
        other => panic!("not a network error: {other}"),
    }
    assert!(!error.to_string().contains('\n'), "{error}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let feed =
        FeedSource::parse(&format!("http://{}/feed", listener.local_addr().unwrap())).unwrap();
    drop(listener);
    let reader = reader();

    let error = reader.get_json(&feed, &[]).await.unwrap_err();

    assert!(
        matches!(error, FeedError::Network { requests: 3, .. }),
        "{error}"
    );
    assert_eq!(reader.requests(), 3);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_on_every_attempt() {
    let server = Server::start(vec![Reply::Silent, Reply::Silent, Reply::Silent]).await;
    let timeout = Duration::from_millis(300);
    let reader = FeedReader::new(FeedSettings {
        retry_delays: vec![Duration::from_millis(10); 2],
        timeout,
    });
    let started = Instant::now();

    let error = reader
        .get_json(&server.url("/feed"), &[])
        .await
        .unwrap_err();

    assert_eq!(
        error,
        FeedError::Timeout {
            feed: server.url("/feed").to_string(),
            requests: 3,
            timeout
        }
    );
    assert!(started.elapsed() >= timeout * 3);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn query_parameters_are_appended_percent_encoded() {
    let server = Server::start(vec![
        json_answer(b"[]"),
        json_answer(b"[]"),
        json_answer(b"[]"),
    ])
    .await;
    let reader = reader();
    let benchmarks = server.url("/api/v1/benchmarks");
    let query = [
        ("model", "DeepSeek-R1-0528"),
        ("date", "2026-05-05"),
        ("exact", "true"),
    ];

    reader.get_json(&benchmarks, &query).await.unwrap();
    reader
        .get_json(&benchmarks, &[("model", "a b&c=d/é")])
        .await
        .unwrap();
    let with_query = FeedSource::parse(&format!("http://{}/x?v=1", server.address)).unwrap();
    reader
        .get_json(&with_query, &[("date", "2026-05-05")])
        .await
        .unwrap();

    let targets = server.targets();
    assert_eq!(
        targets[0],
        "/api/v1/benchmarks?model=DeepSeek-R1-0528&date=2026-05-05&exact=true"
    );
    assert_eq!(targets[1], "/api/v1/benchmarks?model=a+b%26c%3Dd%2F%C3%A9");
    let query = targets[1].split_once('?').unwrap().1;
    let decoded: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(decoded, [("model".to_string(), "a b&c=d/é".to_string())]);
    assert_eq!(targets[2], "/x?v=1&date=2026-05-05");
}

#[tokio::test]
async fn an_error_names_the_whole_url_requested_on_one_line() {
    let server = Server::start(vec![status_answer("400 Bad Request", "bad date")]).await;
    let feed = server.url("/api/v1/workflow-info");

    let error = reader()
        .get_json(&feed, &[("date", "2026-13-01")])
        .await
        .unwrap_err();

    let expected = format!(
        "feed http://{}/api/v1/workflow-info?date=2026-13-01: HTTP 400 after 1 request(s): bad date",
        server.address
    );
    assert_eq!(error.to_string(), expected);
}

#[tokio::test]
async fn requests_add_up_over_several_reads() {
    let server = Server::start(vec![
        status_answer("502 Bad Gateway", ""),
        json_answer(b"[]"),
        json_answer(b"[]"),
    ])
    .await;
    let reader = reader();

    reader.get_json(&server.url("/a"), &[]).await.unwrap();
    reader.get_json(&server.url("/b"), &[]).await.unwrap();

    assert_eq!(reader.requests(), 3);
    assert_eq!(server.targets(), ["/a", "/a", "/b"]);
}

#[tokio::test]
async fn a_local_file_is_read_with_the_same_json_rules_and_no_request() {
    let directory = tempfile::tempdir().unwrap();
    let good = directory.path().join("latest-images.json");
    std::fs::write(&good, br#"[{"image": "sglang:0.5"}]"#).unwrap();
    let nan = directory.path().join("nan.json");
    std::fs::write(&nan, b"[NaN]").unwrap();
    let overflow = directory.path().join("overflow.json");
    std::fs::write(&overflow, b"[1e400]").unwrap();
    let reader = reader();

    let parse = |path: &std::path::Path| FeedSource::parse(path.to_str().unwrap()).unwrap();
    let value = reader
        .get_json(&parse(&good), &[("ignored", "for a file")])
        .await
        .unwrap();
    let nan = reader.get_json(&parse(&nan), &[]).await.unwrap_err();
    let overflow = reader.get_json(&parse(&overflow), &[]).await.unwrap_err();

    assert_eq!(value, json!([{"image": "sglang:0.5"}]));
    assert!(matches!(nan, FeedError::NotJson { .. }), "{nan}");
    assert!(matches!(overflow, FeedError::NotJson { .. }), "{overflow}");
    assert!(overflow.to_string().starts_with(&format!(
        "feed {}: not JSON",
        directory.path().join("overflow.json").display()
    )));
    assert_eq!(reader.requests(), 0);
}

#[tokio::test]
async fn a_local_file_may_hold_the_limit_and_not_a_byte_more() {
    let directory = tempfile::tempdir().unwrap();
    let mut body = b"[1]".to_vec();
    body.resize(MAX_FEED_BYTES as usize, b' ');
    let at_limit = directory.path().join("at-limit.json");
    std::fs::write(&at_limit, &body).unwrap();
    body.push(b' ');
    let over = directory.path().join("over.json");
    std::fs::write(&over, &body).unwrap();
    let reader = reader();

    let parse = |path: &std::path::Path| FeedSource::parse(path.to_str().unwrap()).unwrap();
    let value = reader.get_json(&parse(&at_limit), &[]).await.unwrap();
    let error = reader.get_json(&parse(&over), &[]).await.unwrap_err();

    assert_eq!(value, json!([1]));
    assert!(matches!(error, FeedError::TooLarge { .. }), "{error}");
    assert!(
        error
            .to_string()
            .ends_with(&format!("a file of {} bytes", MAX_FEED_BYTES + 1)),
        "{error}"
    );
}

#[test]
fn feed_sources_are_https_loopback_http_or_an_existing_file() {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("feed.json");
    std::fs::write(&file, b"[]").unwrap();
    let file = file.to_str().unwrap();
    let missing = directory.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    let directory = directory.path().to_str().unwrap();

    let https = "https://inferencex.semianalysis.com/api/v1/latest-images";
    assert_eq!(FeedSource::parse(https).unwrap().to_string(), https);
    let loopback = FeedSource::parse("http://127.0.0.1:8080/x").unwrap();
    assert_eq!(loopback.to_string(), "http://127.0.0.1:8080/x");
    assert_eq!(FeedSource::parse(file), Ok(FeedSource::File(file.into())));

    let refused = |text: &str| FeedSource::parse(text).unwrap_err();
    assert!(refused("http://example.com/x").starts_with("not https://"));
    assert!(refused("http://localhost:8080/x").starts_with("not https://"));
    assert!(refused("http://127.0.0.2/x").starts_with("not https://"));
    assert_eq!(
        refused("ftp://example.com/feed.json"),
        "not https:// (ftp://)"
    );
    assert_eq!(refused("file:///etc/passwd"), "not https:// (file://)");
    assert!(refused("https://user:secret@example.com/x").contains("user name or password"));
    assert!(refused("https://").starts_with("not a URL"));
    assert!(refused(missing).starts_with("no such file"));
    assert!(
        refused("inferencex.semianalysis.com/api/v1/latest-images").starts_with("no such file")
    );
    assert_eq!(refused(directory), "not a file");
    assert_eq!(refused(""), "empty");
}

#[test]
fn a_sibling_endpoint_keeps_the_origin_and_a_file_has_none() {
    let latest =
        FeedSource::parse("https://inferencex.semianalysis.com/api/v1/latest-images").unwrap();
    let benchmarks = latest.on_origin("/api/v1/benchmarks").unwrap();
    assert_eq!(
        benchmarks.to_string(),
        "https://inferencex.semianalysis.com/api/v1/benchmarks"
    );

    let loopback = FeedSource::parse("http://127.0.0.1:8080/api/v1/latest-images?x=1#top").unwrap();
    let workflow = loopback.on_origin("/api/v1/workflow-info").unwrap();
    assert_eq!(
        workflow.to_string(),
        "http://127.0.0.1:8080/api/v1/workflow-info"
    );

    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("latest-images.json");
    std::fs::write(&file, b"[]").unwrap();
    let file = FeedSource::parse(file.to_str().unwrap()).unwrap();
    assert_eq!(file.on_origin("/api/v1/benchmarks"), None);
}
