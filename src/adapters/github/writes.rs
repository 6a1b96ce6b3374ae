//! Writes as GitHub receives them, for a dry run: a client made with
//! [`GitHubClient::recording_writes`](super::GitHubClient::recording_writes) records each write
//! here (method, path, body) instead of sending it, so a dry run goes through exactly the code a
//! real pass runs and can say, request by request, what that pass would send.

use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

use super::transport::{ApiRequest, ApiResponse};

/// What became of a write: GitHub's answer, or nothing because it was only recorded.
#[derive(Debug)]
pub enum Sent {
    Response(ApiResponse),
    Recorded,
}

/// One write a dry run would have sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RecordedWrite {
    pub method: String,
    /// The REST path (`/repos/owner/name/...`), or `/graphql` for a mutation.
    pub path: String,
    pub body: Option<Value>,
}

/// The writes of a dry run, in the order the pass would have sent them.
#[derive(Debug, Default)]
pub struct WriteRecorder {
    writes: Mutex<Vec<RecordedWrite>>,
}

impl WriteRecorder {
    pub(super) fn record(&self, request: &ApiRequest) {
        let path = if request.graphql {
            "/graphql".to_string()
        } else {
            request.path_and_query.clone()
        };
        self.writes
            .lock()
            .expect("recorder lock")
            .push(RecordedWrite {
                method: request.method.to_string(),
                path,
                body: request.body.clone(),
            });
    }

    /// Every write recorded so far.
    pub fn writes(&self) -> Vec<RecordedWrite> {
        self.writes.lock().expect("recorder lock").clone()
    }
}
