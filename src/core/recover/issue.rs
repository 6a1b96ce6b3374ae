//! The issue an `issue-<n>` candidate came from (contract §13). An issue closed by anything but
//! the merge of the candidate's pull request ends the candidate `retired`: a live session whose
//! job died (`reconcile.rs`), a parked session instead of being resumed, and an abandoned draft
//! of it (`candidates.rs`), each cleaned up per `retired` behind the §5 guards. The rule is this
//! one function; an issue that could not be read is never taken as closed.

use std::ops::ControlFlow::{Break, Continue};

use super::candidates::{Step, waiting};
use super::{Facts, Seen};
use crate::core::snapshot::CandidateIssue;

/// The number of the issue candidate `id` came from, when that issue is closed; `None` for a
/// candidate of another source, an issue that is open or one that could not be read. Waits
/// (`Break`) while the issue is not read yet. `number` is the pull request the decision is
/// about, for the report.
pub(super) fn closed_issue(facts: &Facts<'_>, id: &str, number: Option<u64>) -> Step<Option<u64>> {
    if !id.starts_with("issue-") {
        return Continue(None);
    }
    match facts.candidate_issue(id) {
        Seen::Unread => Break(waiting(number, "the issue it came from")),
        Seen::Known(CandidateIssue::Closed(issue)) => Continue(Some(*issue)),
        Seen::Known(CandidateIssue::Open(_) | CandidateIssue::NoIssue) | Seen::Failed(_) => {
            Continue(None)
        }
    }
}

/// Why a candidate whose issue `issue` was closed ends `retired`.
pub(super) fn retired_because(issue: u64) -> String {
    format!("its issue #{issue} was closed, not by the merge of its pull request")
}
