//! Writes told apart by what matters about them, so that the writes a dry run lists can be
//! compared with the writes a real pass sends: method, path and the fields of the body that say
//! what changes. A ledger write is its path, branch and commit message (its content carries the
//! pass's clock and its `sha` the blob a dry run never learns); an `updateRefs` mutation is the
//! refs it deletes and the shas they must still be at; every other write is its whole body.

#![allow(dead_code)] // each including file uses part of it

use klaud::adapters::github::writes::RecordedWrite;
use serde_json::Value;

use super::fake_github::LoggedRequest;

/// One write as compared.
pub fn described(method: &str, path: &str, body: Option<&Value>) -> String {
    let body = body.cloned().unwrap_or(Value::Null);
    if path.contains("/contents/") {
        return format!(
            "{method} {path} branch={} message={}",
            body["branch"], body["message"]
        );
    }
    if path == "/graphql" {
        let query = body["query"].as_str().unwrap_or_default();
        let input = &body["variables"]["input"];
        if query.contains("updateRefs") {
            let mut refs: Vec<String> = input["refUpdates"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|update| {
                    format!(
                        "{}@{}->{} force={}",
                        update["name"], update["beforeOid"], update["afterOid"], update["force"]
                    )
                })
                .collect();
            refs.sort();
            return format!("{method} {path} updateRefs {}", refs.join(" "));
        }
        let field = ["markPullRequestReadyForReview", "convertPullRequestToDraft"]
            .into_iter()
            .find(|field| query.contains(field))
            .unwrap_or("unknown mutation");
        return format!("{method} {path} {field} {}", body["variables"]);
    }
    format!("{method} {path} {body}")
}

/// The writes a dry run recorded, described and sorted (concurrent groups send in any order).
pub fn recorded(writes: &[RecordedWrite]) -> Vec<String> {
    let mut described: Vec<String> = writes
        .iter()
        .map(|write| described(&write.method, &write.path, write.body.as_ref()))
        .collect();
    described.sort();
    described
}

/// The same for `dry-run-writes` of a `recover.json` or `finish.json`.
pub fn recorded_in_file(record: &Value) -> Vec<String> {
    let writes: Vec<RecordedWrite> = record["dry-run-writes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|write| RecordedWrite {
            method: write["method"].as_str().unwrap_or_default().to_string(),
            path: write["path"].as_str().unwrap_or_default().to_string(),
            body: write.get("body").filter(|body| !body.is_null()).cloned(),
        })
        .collect();
    recorded(&writes)
}

/// The writes the fake GitHub received, described and sorted.
pub fn sent(log: &[LoggedRequest]) -> Vec<String> {
    let mut described: Vec<String> = log
        .iter()
        .filter(|request| request.is_write())
        .map(|request| {
            let body: Option<Value> = serde_json::from_str(&request.body).ok();
            described(&request.method, &request.path, body.as_ref())
        })
        .collect();
    described.sort();
    described
}

/// Fails with the writes only one side has, each cut to 300 characters.
pub fn assert_same(listed: &[String], sent: &[String]) {
    if let Some(difference) = difference(listed, sent) {
        panic!("{difference}");
    }
}

/// The writes only one side has, or `None` when both hold the same.
pub fn difference(listed: &[String], sent: &[String]) -> Option<String> {
    if listed == sent {
        return None;
    }
    let cut = |write: &String| write.chars().take(300).collect::<String>();
    let only = |these: &[String], those: &[String]| -> Vec<String> {
        these
            .iter()
            .filter(|write| !those.contains(write))
            .map(cut)
            .collect()
    };
    Some(format!(
        "{} writes listed by the dry run, {} sent by the real pass\nonly listed:\n  {}\nonly sent:\n  {}",
        listed.len(),
        sent.len(),
        only(listed, sent).join("\n  "),
        only(sent, listed).join("\n  ")
    ))
}
