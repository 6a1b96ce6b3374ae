//! Reading `baselines.json`, written by `verify-baselines` (contract §3a), for `select
//! --baselines`: per candidate id, verified or deferred with its reason. Only `id`, `status` and
//! `reason` are read; the rest of the document (producer, points, producer runs) is not
//! `select`'s business.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Reason;
use crate::core::baseline::DeferralCode;

/// What verification said about one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineVerdict {
    Verified,
    Deferred(Reason),
    /// The candidate needs no baseline (a labelled issue's task): nothing holds it back.
    NotNeeded,
}

/// The code of a `baseline-deferred` reason: the verification's, as `baselines.json` records it,
/// or select's own when the file says nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineCode {
    /// A code `verify-baselines` writes.
    Deferred(DeferralCode),
    /// A code this version does not know (another version wrote the file), kept as written.
    Unknown(String),
    /// The candidate is deferred without a reason: `unverified`.
    Unverified,
    /// `baselines.json` has no record of the candidate: `not-verified`.
    NotVerified,
}

impl BaselineCode {
    pub fn code(&self) -> &str {
        match self {
            BaselineCode::Deferred(code) => code.as_str(),
            BaselineCode::Unknown(code) => code,
            BaselineCode::Unverified => "unverified",
            BaselineCode::NotVerified => "not-verified",
        }
    }

    /// The code as `baselines.json` spells it; every spelling reads back as what wrote it.
    pub fn read(code: String) -> Self {
        let known = DeferralCode::ALL
            .into_iter()
            .map(BaselineCode::Deferred)
            .chain([BaselineCode::Unverified, BaselineCode::NotVerified])
            .find(|known| known.code() == code);
        known.unwrap_or(BaselineCode::Unknown(code))
    }
}

/// `baselines.json` as verdicts per candidate id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BaselineVerdicts {
    by_candidate: BTreeMap<String, BaselineVerdict>,
}

/// Why `baselines.json` is bad input; `field` is e.g. `baselines.candidates[2].status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BaselinesError {
    pub field: String,
    pub message: String,
}

#[derive(Deserialize)]
struct Document {
    candidates: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Verified,
    Deferred,
    NotNeeded,
}

#[derive(Deserialize)]
struct Record {
    id: String,
    status: Status,
    #[serde(default)]
    reason: Option<RecordedReason>,
}

#[derive(Deserialize)]
struct RecordedReason {
    code: String,
    message: String,
}

impl BaselineVerdicts {
    pub fn verdict(&self, candidate: &str) -> Option<&BaselineVerdict> {
        self.by_candidate.get(candidate)
    }

    pub fn len(&self) -> usize {
        self.by_candidate.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_candidate.is_empty()
    }
}

/// Parses the text of `baselines.json`.
pub fn parse_baselines(text: &str) -> Result<BaselineVerdicts, BaselinesError> {
    let document: Document = serde_json::from_str(text).map_err(|error| BaselinesError {
        field: "baselines".into(),
        message: format!("not a baselines.json document: {error}"),
    })?;
    let mut by_candidate = BTreeMap::new();
    for (index, value) in document.candidates.into_iter().enumerate() {
        let field = format!("baselines.candidates[{index}]");
        let record: Record = serde_json::from_value(value).map_err(|error| BaselinesError {
            field: field.clone(),
            message: error.to_string(),
        })?;
        let verdict = match (record.status, record.reason) {
            (Status::Verified, _) => BaselineVerdict::Verified,
            (Status::NotNeeded, _) => BaselineVerdict::NotNeeded,
            (Status::Deferred, Some(reason)) => BaselineVerdict::Deferred(Reason::new(
                BaselineCode::read(reason.code),
                reason.message,
            )),
            (Status::Deferred, None) => BaselineVerdict::Deferred(Reason::new(
                BaselineCode::Unverified,
                "verify-baselines deferred this candidate without a reason",
            )),
        };
        if by_candidate.insert(record.id.clone(), verdict).is_some() {
            return Err(BaselinesError {
                field: format!("{field}.id"),
                message: format!("'{}' appears twice", record.id),
            });
        }
    }
    Ok(BaselineVerdicts { by_candidate })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_and_deferred_candidates_are_read_with_their_reasons() {
        let verdicts = parse_baselines(
            r#"{"candidates": [
                {"id": "a", "status": "verified", "reason": null, "producer": null, "points": []},
                {"id": "b", "status": "deferred",
                 "reason": {"code": "unmatched-baseline", "message": "no point matched"},
                 "producer": null, "points": []}],
              "producer-runs": []}"#,
        )
        .unwrap();
        assert_eq!(verdicts.verdict("a"), Some(&BaselineVerdict::Verified));
        let issues = parse_baselines(
            r#"{"candidates": [{"id": "issue-7", "status": "not-needed", "reason": null}]}"#,
        )
        .unwrap();
        assert_eq!(issues.verdict("issue-7"), Some(&BaselineVerdict::NotNeeded));
        assert_eq!(
            verdicts.verdict("b"),
            Some(&BaselineVerdict::Deferred(Reason::new(
                BaselineCode::Deferred(DeferralCode::UnmatchedBaseline),
                "no point matched"
            )))
        );
        assert_eq!(verdicts.verdict("c"), None);
        assert_eq!(verdicts.len(), 2);
    }

    #[test]
    fn a_malformed_document_names_the_field() {
        assert_eq!(parse_baselines("[]").unwrap_err().field, "baselines");
        assert_eq!(
            parse_baselines(r#"{"candidates": [{"id": "a", "status": "fine"}]}"#)
                .unwrap_err()
                .field,
            "baselines.candidates[0]"
        );
        assert_eq!(
            parse_baselines(
                r#"{"candidates": [{"id": "a", "status": "verified"},
                                   {"id": "a", "status": "verified"}]}"#
            )
            .unwrap_err()
            .field,
            "baselines.candidates[1].id"
        );
    }
}
