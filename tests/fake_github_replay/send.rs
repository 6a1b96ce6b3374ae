//! Sending a recorded request to the fake as the recorder sent it to GitHub: its method, its path
//! and body with the recording's shas replaced by the fake's objects, its `Accept` header and
//! token; and reading the answer back as status, headers and body.

use std::collections::BTreeMap;

use reqwest::Method;

use super::compare::{Answer, AnswerBody, Shas};
use super::recording::Exchange;

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("{request}: the method is not one HTTP knows")]
    Method { request: String },
    #[error("{request}: the fake did not answer: {source}")]
    Unanswered {
        request: String,
        source: reqwest::Error,
    },
}

/// Sends `exchange`'s request to the fake at `base` and returns its answer.
pub async fn send(
    client: &reqwest::Client,
    base: &str,
    exchange: &Exchange,
    shas: &Shas,
) -> Result<Answer, SendError> {
    let method =
        Method::from_bytes(exchange.method.to_ascii_uppercase().as_bytes()).map_err(|_| {
            SendError::Method {
                request: exchange.title(),
            }
        })?;
    let url = format!("{base}{}", shas.translate(&exchange.path));
    let mut request = client.request(method, url);
    for name in ["accept", "authorization"] {
        if let Some(value) = exchange.request_header(name) {
            request = request.header(name, value);
        }
    }
    request = match exchange.request_body() {
        Some(body) => request
            .header("content-type", "application/json; charset=utf-8")
            .body(shas.translate(&body.to_string())),
        // An empty PUT still says so, as GitHub asks (`Content-Length: 0`).
        None => request.body(""),
    };
    let unanswered = |source| SendError::Unanswered {
        request: exchange.title(),
        source,
    };
    let response = request.send().await.map_err(unanswered)?;
    let status = response.status().as_u16();
    let headers: BTreeMap<String, String> = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = response.bytes().await.map_err(unanswered)?;
    let is_json = headers
        .get("content-type")
        .is_some_and(|content_type| content_type.starts_with("application/json"));
    let body = if bytes.is_empty() {
        AnswerBody::Empty
    } else {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        match serde_json::from_str(&text) {
            Ok(json) if is_json => AnswerBody::Json(json),
            _ => AnswerBody::Text(text),
        }
    };
    Ok(Answer {
        status,
        headers,
        body,
    })
}
