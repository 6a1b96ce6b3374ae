//! The planner's overlap review (contract §3a): `{"decisions": [{"candidate-id", "decision":
//! "proceed"|"duplicate"|"uncertain", "family", "pull-requests": [int], "reason"}]}`.
//!
//! The review comes from an upstream step, so a bad one is not bad input: it defers the whole
//! selection (`invalid-review-output`), it is never bypassed. It is valid only with exactly one
//! decision per candidate, no unknown or repeated ids, and every `proceed` keeping the family the
//! candidates file gave. A family with any `duplicate` (else any `uncertain`) decision is held
//! back as a whole, even for candidates of it whose own decision is `proceed`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Decision;
use super::obstacles::Obstacle;
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
    pub verdict: ReviewVerdict,
    pub pull_requests: Vec<u64>,
    pub reason: String,
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
        Err(message) => ReviewInput::Invalid {
            message: bounded(&message, 300),
        },
    }
}

fn parse_review(text: &str, candidates: &[Candidate]) -> Result<Review, String> {
    let document: Value =
        serde_json::from_str(text).map_err(|error| format!("the review is not JSON: {error}"))?;
    let Some(Value::Array(rows)) = document.get("decisions") else {
        return Err("the review must be an object with a \"decisions\" array".into());
    };
    let family_of: BTreeMap<&str, &str> = candidates
        .iter()
        .map(|candidate| (candidate.id.as_str(), candidate.family.as_str()))
        .collect();
    let mut decisions = BTreeMap::new();
    for (index, row) in rows.iter().enumerate() {
        let here = format!("decisions[{index}]");
        let Value::Object(fields) = row else {
            return Err(format!("{here} must be an object"));
        };
        let id = match fields.get("candidate-id") {
            Some(Value::String(id)) => id.as_str(),
            _ => return Err(format!("{here}.candidate-id must be a string")),
        };
        let Some(family) = family_of.get(id) else {
            return Err(format!("{here}: unknown candidate '{}'", bounded(id, 80)));
        };
        let verdict = match fields.get("decision").and_then(Value::as_str) {
            Some("proceed") => ReviewVerdict::Proceed,
            Some("duplicate") => ReviewVerdict::Duplicate,
            Some("uncertain") => ReviewVerdict::Uncertain,
            _ => {
                return Err(format!(
                    "{here}.decision must be proceed, duplicate or uncertain"
                ));
            }
        };
        let reviewed_family = match fields.get("family") {
            None | Some(Value::Null) => None,
            Some(Value::String(family)) => Some(family.as_str()),
            Some(_) => return Err(format!("{here}.family must be a string")),
        };
        if verdict == ReviewVerdict::Proceed && reviewed_family != Some(family) {
            return Err(format!(
                "{here}: proceed for '{id}' must keep its family '{}', the review says '{}'",
                bounded(family, 100),
                bounded(reviewed_family.unwrap_or("(none)"), 100)
            ));
        }
        let pull_requests = match fields.get("pull-requests") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(numbers)) => numbers
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| format!("{here}.pull-requests must be pull request numbers"))?,
            Some(_) => return Err(format!("{here}.pull-requests must be an array")),
        };
        let reason = match fields.get("reason") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(reason)) => reason.clone(),
            Some(_) => return Err(format!("{here}.reason must be a string")),
        };
        let decision = ReviewDecision {
            verdict,
            pull_requests,
            reason,
        };
        if decisions.insert(id.to_string(), decision).is_some() {
            return Err(format!("{here}: a second decision for candidate '{id}'"));
        }
    }
    let missing: Vec<&str> = candidates
        .iter()
        .map(|candidate| candidate.id.as_str())
        .filter(|id| !decisions.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no decision for {} candidate(s): {}",
            missing.len(),
            missing.join(", ")
        ));
    }
    Ok(Review { decisions })
}

impl Review {
    pub fn decision(&self, candidate: &str) -> Option<&ReviewDecision> {
        self.decisions.get(candidate)
    }

    /// The review's obstacle for each candidate it holds back: its own duplicate/uncertain
    /// decision, else the worst decision of another candidate of its family.
    pub(super) fn obstacles(&self, candidates: &[Candidate]) -> BTreeMap<String, Obstacle> {
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
        let mut obstacles = BTreeMap::new();
        for candidate in candidates {
            let own = self.decisions.get(&candidate.id);
            let (decision, decided_for) = match own {
                Some(own) if own.verdict != ReviewVerdict::Proceed => (own, candidate.id.as_str()),
                _ => match worst_of_family.get(candidate.family.as_str()) {
                    Some(&(worst, id)) if worst.verdict != ReviewVerdict::Proceed => (worst, id),
                    _ => continue,
                },
            };
            obstacles.insert(
                candidate.id.clone(),
                review_obstacle(decision, decided_for, &candidate.id),
            );
        }
        obstacles
    }
}

fn review_obstacle(decision: &ReviewDecision, decided_for: &str, candidate: &str) -> Obstacle {
    let (code, judged) = match decision.verdict {
        ReviewVerdict::Duplicate => (Decision::ReviewDuplicate, "a duplicate"),
        _ => (Decision::ReviewUncertain, "uncertain"),
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
    Obstacle::new(code, message)
}
