//! The planner's overlap review (contract §3a): `{"decisions": [{"candidate-id", "decision":
//! "proceed"|"duplicate"|"uncertain", "family", "pull-requests": [int], "reason",
//! "baseline-model"?}]}`, read the same way by `select` and `verify-baselines`.
//!
//! The review comes from an upstream step, so a bad one is not bad input: it defers the whole
//! selection (`invalid-review-output`) and every verification, it is never bypassed. It is valid only with exactly one
//! decision per candidate, no unknown or repeated ids, and every `proceed` keeping the family the
//! candidates file gave. A family with any `duplicate` (else any `uncertain`) decision is held
//! back as a whole, even for candidates of it whose own decision is `proceed`
//! ([`Review::held_back`]). `baseline-model` (optional, a blank one counts as none) is the
//! publisher's display model `verify-baselines` looks a discovered candidate's baseline up with
//! (`core::baseline::resolve`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::core::candidate::Candidate;
use crate::core::text::bounded;

/// The review as the selection uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewInput {
    /// No review: every candidate counts as `proceed`.
    Absent,
    Decisions(Review),
    /// The whole selection is deferred; `message` says what is wrong (bounded).
    Invalid {
        message: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReviewVerdict {
    Proceed,
    Uncertain,
    Duplicate,
}

/// One candidate's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewDecision {
    /// Its place in `decisions`, to name it in a message.
    pub index: usize,
    pub verdict: ReviewVerdict,
    pub pull_requests: Vec<u64>,
    pub reason: String,
    /// The publisher's display model of the candidate's source (`DeepSeek-R1-0528`), if given.
    pub baseline_model: Option<String>,
}

/// Why the review holds a candidate back, and who it judged.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldBack {
    /// The decision that holds it back (its own, or the worst of its family).
    pub verdict: ReviewVerdict,
    /// What the review said, for a reason's message.
    pub message: String,
}

/// A valid review: one decision per candidate id.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    decisions: BTreeMap<String, ReviewDecision>,
}

impl ReviewInput {
    pub fn is_invalid(&self) -> bool {
        matches!(self, ReviewInput::Invalid { .. })
    }
}

/// Reads and validates review text against the candidates.
pub fn read_review(text: &str, candidates: &[Candidate]) -> ReviewInput {
    match parse_review(text, candidates) {
        Ok(review) => ReviewInput::Decisions(review),
        Err(error) => ReviewInput::Invalid {
            message: bounded(&error.to_string(), 300),
        },
    }
}

/// Why a review is invalid; its text is the message of `invalid-review-output`.
#[derive(Debug, thiserror::Error)]
enum ReviewError {
    #[error("the review is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("the review must be an object with a \"decisions\" array")]
    NoDecisions,
    #[error("decisions[{index}]{problem}")]
    Row { index: usize, problem: RowProblem },
    #[error("no decision for {} candidate(s): {}", .missing.len(), .missing.join(", "))]
    Missing { missing: Vec<String> },
}

/// What is wrong with one decision; its text continues `decisions[i]`.
#[derive(Debug, thiserror::Error)]
enum RowProblem {
    #[error(" must be an object")]
    NotAnObject,
    #[error(".{field} must be {expected}")]
    Field {
        field: &'static str,
        expected: &'static str,
    },
    #[error(": unknown candidate '{}'", bounded(.0, 80))]
    UnknownCandidate(String),
    #[error(
        ": proceed for '{candidate}' must keep its family '{}', the review says '{}'",
        bounded(.family, 100),
        bounded(.reviewed.as_deref().unwrap_or("(none)"), 100)
    )]
    FamilyChanged {
        candidate: String,
        family: String,
        reviewed: Option<String>,
    },
    #[error(": a second decision for candidate '{0}'")]
    Repeated(String),
}

fn parse_review(text: &str, candidates: &[Candidate]) -> Result<Review, ReviewError> {
    let document: Value = serde_json::from_str(text).map_err(ReviewError::NotJson)?;
    let Some(Value::Array(rows)) = document.get("decisions") else {
        return Err(ReviewError::NoDecisions);
    };
    let family_of: BTreeMap<&str, &str> = candidates
        .iter()
        .map(|candidate| (candidate.id.as_str(), candidate.family.as_str()))
        .collect();
    let mut decisions = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let in_row = |problem| ReviewError::Row { index, problem };
        let (id, decision) = parse_decision(index, row, &family_of).map_err(in_row)?;
        if decisions.insert(id.to_string(), decision).is_some() {
            return Err(in_row(RowProblem::Repeated(id.to_string())));
        }
    }
    let missing: Vec<String> = candidates
        .iter()
        .map(|candidate| candidate.id.as_str())
        .filter(|id| !decisions.contains_key(*id))
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(ReviewError::Missing { missing });
    }
    Ok(Review { decisions })
}

/// One row of `decisions`: the candidate it is for and its decision.
fn parse_decision<'r>(
    index: usize,
    row: &'r Value,
    family_of: &BTreeMap<&str, &str>,
) -> Result<(&'r str, ReviewDecision), RowProblem> {
    let Value::Object(fields) = row else {
        return Err(RowProblem::NotAnObject);
    };
    let id = match fields.get("candidate-id") {
        Some(Value::String(id)) => id.as_str(),
        _ => return Err(field("candidate-id", "a string")),
    };
    let Some(family) = family_of.get(id) else {
        return Err(RowProblem::UnknownCandidate(id.to_string()));
    };
    let verdict = match fields.get("decision").and_then(Value::as_str) {
        Some("proceed") => ReviewVerdict::Proceed,
        Some("duplicate") => ReviewVerdict::Duplicate,
        Some("uncertain") => ReviewVerdict::Uncertain,
        _ => return Err(field("decision", "proceed, duplicate or uncertain")),
    };
    let reviewed_family = optional_string(fields, "family")?;
    if verdict == ReviewVerdict::Proceed && reviewed_family != Some(family) {
        return Err(RowProblem::FamilyChanged {
            candidate: id.to_string(),
            family: family.to_string(),
            reviewed: reviewed_family.map(str::to_string),
        });
    }
    let pull_requests = match fields.get("pull-requests") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(numbers)) => numbers
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| field("pull-requests", "pull request numbers"))?,
        Some(_) => return Err(field("pull-requests", "an array")),
    };
    let reason = optional_string(fields, "reason")?.unwrap_or_default();
    let baseline_model = optional_string(fields, "baseline-model")?
        .map(str::trim)
        .filter(|model| !model.is_empty())
        .map(str::to_string);
    let decision = ReviewDecision {
        index,
        verdict,
        pull_requests,
        reason: reason.to_string(),
        baseline_model,
    };
    Ok((id, decision))
}

/// A string field that may be missing or `null`.
fn optional_string<'r>(
    fields: &'r serde_json::Map<String, Value>,
    name: &'static str,
) -> Result<Option<&'r str>, RowProblem> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(_) => Err(field(name, "a string")),
    }
}

fn field(field: &'static str, expected: &'static str) -> RowProblem {
    RowProblem::Field { field, expected }
}

impl Review {
    pub fn decision(&self, candidate: &str) -> Option<&ReviewDecision> {
        self.decisions.get(candidate)
    }

    /// Every candidate the review does not let through, by id: its own duplicate/uncertain
    /// decision, else the worst decision of another candidate of its family. The others proceed.
    pub fn held_back(&self, candidates: &[Candidate]) -> BTreeMap<String, HeldBack> {
        let mut worst_of_family: BTreeMap<&str, (&ReviewDecision, &str)> = BTreeMap::new();
        for candidate in candidates {
            let Some(decision) = self.decisions.get(&candidate.id) else {
                continue;
            };
            let worst = worst_of_family
                .entry(&candidate.family)
                .or_insert((decision, &candidate.id));
            if decision.verdict > worst.0.verdict {
                *worst = (decision, &candidate.id);
            }
        }
        let mut held_back = BTreeMap::new();
        for candidate in candidates {
            let own = self.decisions.get(&candidate.id);
            let (decision, decided_for) = match own {
                Some(own) if own.verdict != ReviewVerdict::Proceed => (own, candidate.id.as_str()),
                _ => match worst_of_family.get(candidate.family.as_str()) {
                    Some(&(worst, id)) if worst.verdict != ReviewVerdict::Proceed => (worst, id),
                    _ => continue,
                },
            };
            held_back.insert(
                candidate.id.clone(),
                HeldBack {
                    verdict: decision.verdict,
                    message: review_message(decision, decided_for, &candidate.id),
                },
            );
        }
        held_back
    }
}

fn review_message(decision: &ReviewDecision, decided_for: &str, candidate: &str) -> String {
    let judged = match decision.verdict {
        ReviewVerdict::Duplicate => "a duplicate",
        _ => "uncertain",
    };
    let subject = if decided_for == candidate {
        "the review judged it".to_string()
    } else {
        format!("the review judged candidate {decided_for} of the same family")
    };
    let mut message = format!("{subject} {judged}");
    if !decision.pull_requests.is_empty() {
        let numbers: Vec<String> = decision
            .pull_requests
            .iter()
            .map(|number| format!("#{number}"))
            .collect();
        message.push_str(&format!(" (pull requests {})", numbers.join(", ")));
    }
    if !decision.reason.trim().is_empty() {
        message.push_str(&format!(": {}", decision.reason.trim()));
    }
    message
}
