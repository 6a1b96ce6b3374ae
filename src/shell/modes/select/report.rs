//! How a selection is reported: the plan in the log, `selection.json` (contract §3a), one
//! `candidate.json` per candidate, and the step summary.
//!
//! `selection.json`: `{"deferred-reason", "selected", "candidates": [{"id", "family",
//! "decision", "reason", "until", …passed-through fields}]}`, every candidate exactly once in
//! file order. `candidates/<id>/candidate.json`: the candidate as given (known and passed-through
//! fields) plus `branch`, `decision`, `reason` and `until`; klaud's four fields replace
//! passed-through fields of the same name. The ids `.` and `..` name their directory `%2E` and
//! `%2E%2E`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::SecondsFormat;
use serde_json::{Map, Value, json};

use crate::core::candidate::Candidate;
use crate::core::policy::Policy;
use crate::core::select::{CandidateDecision, Decision, SelectionPlan};
use crate::shell::error::StepError;
use crate::shell::github::RequestReport;
use crate::shell::outputs::{Reporter, markdown_table};

/// The fields klaud adds to a candidate's record.
const KLAUD_FIELDS: [&str; 4] = ["branch", "decision", "reason", "until"];

/// What the pass did with the ledger, for the log and summary.
#[derive(Debug, Clone, Copy)]
pub struct ClaimReport {
    pub dry_run: bool,
    /// The ledger was written (claims or a newer attempt recorded).
    pub wrote: bool,
    /// Compare-and-swap conflicts met before the decision held.
    pub conflicts: u32,
}

impl ClaimReport {
    /// The candidates this pass holds claims for: none in a dry run, which claims nothing.
    pub fn claimed_ids(&self, plan: &SelectionPlan) -> Vec<String> {
        if self.dry_run {
            Vec::new()
        } else {
            plan.selected_ids()
        }
    }
}

/// The plan, one line per candidate.
pub fn log_plan(reporter: &Reporter, plan: &SelectionPlan, claims: ClaimReport) {
    reporter.info(&format!(
        "select plan for run {} attempt {}: {} candidate(s); cap {}, {} live session(s), room for {}",
        plan.run.run_id,
        plan.run.attempt,
        plan.decisions.len(),
        plan.cap.max_candidates,
        plan.cap.live_sessions,
        plan.cap.room
    ));
    for decision in &plan.decisions {
        let why = decision
            .reason
            .as_ref()
            .map_or_else(String::new, |reason| format!(": {}", reason.message));
        reporter.info(&format!(
            "  {} ({}): {}{why}",
            decision.id, decision.family, decision.decision
        ));
    }
    reporter.info(&claim_sentence(plan, claims));
}

fn claim_sentence(plan: &SelectionPlan, claims: ClaimReport) -> String {
    let selected = plan.selected().count();
    if claims.dry_run {
        return format!(
            "dry run: {selected} candidate(s) would be claimed; nothing was written to GitHub and the outputs select nothing"
        );
    }
    let retries = match claims.conflicts {
        0 => String::new(),
        conflicts => format!(" after {conflicts} compare-and-swap conflict(s)"),
    };
    match (selected, claims.wrote) {
        (0, _) => format!("nothing claimed{retries}"),
        (_, true) => format!("claimed {selected} candidate(s) in the ledger{retries}"),
        (_, false) => format!("{selected} candidate(s) were already claimed by this run{retries}"),
    }
}

/// `selection.json`.
pub fn selection_document(plan: &SelectionPlan, candidates: &[Candidate]) -> Value {
    let records: Vec<Value> = plan
        .decisions
        .iter()
        .zip(candidates)
        .map(|(decision, candidate)| {
            let mut record = Map::new();
            record.insert("id".into(), json!(decision.id));
            record.insert("family".into(), json!(decision.family));
            insert_decision(&mut record, decision);
            for (key, value) in &candidate.passthrough {
                record.entry(key.clone()).or_insert_with(|| value.clone());
            }
            Value::Object(record)
        })
        .collect();
    json!({
        "deferred-reason": plan.deferred_reason,
        "selected": plan.selected_ids(),
        "candidates": records,
    })
}

/// One candidate's `candidate.json`.
pub fn candidate_document(
    candidate: &Candidate,
    decision: &CandidateDecision,
    policy: &Policy,
) -> Value {
    let mut record = match serde_json::to_value(candidate) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    for key in KLAUD_FIELDS {
        record.shift_remove(key);
    }
    record.insert(
        "branch".into(),
        json!(policy.candidate_branch(&candidate.id)),
    );
    insert_decision(&mut record, decision);
    Value::Object(record)
}

fn insert_decision(record: &mut Map<String, Value>, decision: &CandidateDecision) {
    record.insert("decision".into(), json!(decision.decision));
    record.insert("reason".into(), json!(decision.reason));
    record.insert(
        "until".into(),
        json!(
            decision
                .until
                .map(|until| until.to_rfc3339_opts(SecondsFormat::Secs, true))
        ),
    );
}

/// The directory of a candidate's `candidate.json` under `<directory>/candidates/`.
pub fn candidate_directory(directory: &Path, id: &str) -> PathBuf {
    let name = match id {
        "." => "%2E",
        ".." => "%2E%2E",
        other => other,
    };
    directory.join("candidates").join(name)
}

/// Writes `selection.json` and every `candidate.json`.
pub fn write_selection_files(
    directory: &Path,
    plan: &SelectionPlan,
    candidates: &[Candidate],
    policy: &Policy,
) -> Result<PathBuf, StepError> {
    let selection = directory.join("selection.json");
    write_json(&selection, &selection_document(plan, candidates))?;
    for (candidate, decision) in candidates.iter().zip(&plan.decisions) {
        let path = candidate_directory(directory, &candidate.id).join("candidate.json");
        write_json(&path, &candidate_document(candidate, decision, policy))?;
    }
    Ok(selection)
}

fn write_json(path: &Path, value: &Value) -> Result<(), StepError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| {
            StepError::failed(format!("cannot create {}: {error}", parent.display()))
        })?;
    }
    let text = serde_json::to_string_pretty(value).expect("JSON serializes") + "\n";
    std::fs::write(path, text)
        .map_err(|error| StepError::failed(format!("cannot write {}: {error}", path.display())))
}

/// The step summary: headline, deferral, counts per decision, the table, the request line.
pub fn summary(plan: &SelectionPlan, claims: ClaimReport, requests: &RequestReport) -> String {
    let selected = plan.selected().count();
    let mut text = format!(
        "### klaud select: {selected} of {} candidate(s) selected\n\n\
         Run {} attempt {}; cap {} concurrent sessions, {} live before this pass, room for {}. {}.\n\n",
        plan.decisions.len(),
        plan.run.run_id,
        plan.run.attempt,
        plan.cap.max_candidates,
        plan.cap.live_sessions,
        plan.cap.room,
        claim_sentence(plan, claims)
    );
    if let Some(deferral) = plan.deferred_reason {
        let example = plan
            .decisions
            .iter()
            .find(|decision| decision.decision == deferral.decision())
            .and_then(|decision| decision.reason.as_ref())
            .map_or_else(String::new, |reason| format!(": {}", reason.message));
        text.push_str(&format!("**Deferred (`{deferral}`)**{example}\n\n"));
    }
    let counts: BTreeMap<Decision, usize> = plan.counts();
    let rows: Vec<Vec<String>> = counts
        .iter()
        .map(|(decision, count)| vec![format!("`{decision}`"), count.to_string()])
        .collect();
    text.push_str(&markdown_table(&["decision", "candidates"], &rows));
    text.push('\n');
    let rows: Vec<Vec<String>> = plan
        .decisions
        .iter()
        .map(|decision| {
            vec![
                decision.id.clone(),
                format!("`{}`", decision.family),
                format!("`{}`", decision.decision),
                decision
                    .reason
                    .as_ref()
                    .map_or_else(String::new, |reason| reason.message.clone()),
            ]
        })
        .collect();
    text.push_str(&markdown_table(
        &["candidate", "family", "decision", "reason"],
        &rows,
    ));
    text.push('\n');
    text.push_str(&requests.summary_line());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::candidate::parse_candidates;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::select::{CapAccount, Reason, SelectingRun};
    use chrono::{DateTime, Utc};

    fn plan() -> (SelectionPlan, Vec<Candidate>) {
        let candidates = parse_candidates(
            r#"[{"id": "a", "family": "f", "base": "main", "owner": "perf-team", "decision": "mine"},
                {"id": "b", "family": "g"}]"#,
        )
        .unwrap();
        let until = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let plan = SelectionPlan {
            run: SelectingRun {
                run_id: 7,
                attempt: 1,
            },
            now: until,
            deferred_reason: None,
            decisions: vec![
                CandidateDecision {
                    id: "a".into(),
                    family: "f".into(),
                    decision: Decision::Selected,
                    reason: None,
                    until: None,
                },
                CandidateDecision {
                    id: "b".into(),
                    family: "g".into(),
                    decision: Decision::CoolingDown,
                    reason: Some(Reason::new(Decision::CoolingDown, "`failed` earns 1 day")),
                    until: Some(until),
                },
            ],
            cap: CapAccount {
                max_candidates: 5,
                live_sessions: 0,
                room: 5,
            },
        };
        (plan, candidates)
    }

    #[test]
    fn selection_json_has_the_contract_shape_with_passed_through_fields() {
        let (plan, candidates) = plan();
        let document = selection_document(&plan, &candidates);
        assert_eq!(
            document,
            json!({
                "deferred-reason": null,
                "selected": ["a"],
                "candidates": [
                    {"id": "a", "family": "f", "decision": "selected", "reason": null,
                     "until": null, "owner": "perf-team"},
                    {"id": "b", "family": "g", "decision": "cooling-down",
                     "reason": {"code": "cooling-down", "message": "`failed` earns 1 day"},
                     "until": "2026-12-01T00:00:00Z"}
                ]
            })
        );
    }

    #[test]
    fn candidate_json_is_the_candidate_as_given_plus_branch_and_decision() {
        let (plan, candidates) = plan();
        let document = candidate_document(&candidates[0], &plan.decisions[0], &inferencex_policy());
        assert_eq!(
            document,
            json!({"id": "a", "family": "f", "base": "main", "owner": "perf-team",
                   "branch": "klaud/auto-a", "decision": "selected", "reason": null, "until": null})
        );
    }

    #[test]
    fn dot_ids_get_a_directory_of_their_own() {
        let directory = Path::new("/w");
        assert_eq!(
            candidate_directory(directory, "a.b"),
            Path::new("/w/candidates/a.b")
        );
        assert_eq!(
            candidate_directory(directory, ".."),
            Path::new("/w/candidates/%2E%2E")
        );
        assert_eq!(
            candidate_directory(directory, "."),
            Path::new("/w/candidates/%2E")
        );
    }
}
