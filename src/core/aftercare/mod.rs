//! After-care (contract §12): what the ledger keeps of klaud's validated pull requests while
//! they wait for a maintainer, and the rules every mode reads about them.
//!
//! A `validated` session leaves a ready pull request; `finish` records it here as *watched*
//! (`AftercareRecord`). Until the pull request is merged or closed, `recover` may start
//! after-care sessions on it (a session of kind [`SessionKind::Refresh`] or
//! [`SessionKind::Repair`] on the same candidate, branch and pull request), at most
//! `aftercare.max-sessions` over its life plus what maintainers granted. Its state says whether
//! klaud still looks after it, waits for a maintainer, left it for good (a guard failed) or
//! closes it because a newer candidate of its family was validated.

pub mod evidence;
mod next;
mod supersede;
mod view;

pub use next::{AftercareNext, AftercareWait, next_for};
pub use supersede::{supersede_group, superseded_body, superseded_marker};
pub use view::{AftercareStateName, AftercareView, attach_aftercare};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::github_state::CheckConclusion;
use super::ledger::{Ledger, SessionState};
use super::outcome::Outcome;
use super::policy::AftercareSettings;

/// What a session is for.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SessionKind {
    /// The candidate's first session: propose, test and validate a change.
    #[default]
    Propose,
    /// After-care: bring a validated pull request up to date with its base again.
    Refresh,
    /// After-care: make a validated pull request's failed checks pass again.
    Repair,
}

impl SessionKind {
    /// The kind's one spelling (its serde name).
    pub fn name(self) -> &'static str {
        match self {
            SessionKind::Propose => "propose",
            SessionKind::Refresh => "refresh",
            SessionKind::Repair => "repair",
        }
    }

    /// True for the kinds after-care starts.
    pub fn is_aftercare(self) -> bool {
        self != SessionKind::Propose
    }

    /// True for the default kind, which documents leave out.
    pub fn is_propose(&self) -> bool {
        *self == SessionKind::Propose
    }
}

impl std::fmt::Display for SessionKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What `recover` saw when it started an after-care session: the pull request at its head and,
/// for a `repair`, the checks that failed there. `session` reads the failed jobs' logs from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AftercareWork {
    pub pull_request: u64,
    /// The head the pull request had when the session was started.
    pub head_sha: String,
    /// The failed checks on that head (a `repair` session's evidence), in the health report's
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedJob>,
}

/// One failed check a `repair` session is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FailedJob {
    /// The check run's name, or a commit status's context.
    pub name: String,
    /// The workflow run and job of a GitHub Actions check; none for a commit status.
    pub run_id: Option<u64>,
    pub job_id: Option<u64>,
    pub url: Option<String>,
    /// The check run's conclusion; none for a commit status.
    pub conclusion: Option<CheckConclusion>,
}

/// One validated pull request klaud looks after, from the `finish` that validated it until it
/// is merged or closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AftercareRecord {
    pub pull_request: u64,
    pub candidate: String,
    pub family: String,
    /// The head the last validated session left: a head that moved since, with no after-care
    /// session running, was moved by someone else. None when it could not be read.
    pub validated_head: Option<String>,
    /// When the last session of the pull request ended `validated`.
    pub validated_at: DateTime<Utc>,
    /// After-care sessions started for it over its life, successful ones included.
    #[serde(default)]
    pub sessions_used: u32,
    /// When the last of them was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_started_at: Option<DateTime<Utc>>,
    /// Sessions maintainers granted past `aftercare.max-sessions` (*retry after-care*).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub granted: u32,
    pub state: AftercareState,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// Where klaud stands with one validated pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum AftercareState {
    /// klaud looks after it: an event may start an after-care session.
    Watched,
    /// It waits for a maintainer (`klaud-needs-maintainer`): nothing is started, swept or
    /// closed until a maintainer grants one more session.
    NeedsMaintainer {
        since: DateTime<Utc>,
        because: NeedsMaintainerBecause,
    },
    /// A §5 guard failed: klaud never touches it again.
    Left {
        since: DateTime<Utc>,
        reason: String,
    },
    /// A newer candidate of its family was validated: it is closed with `Superseded by #by`
    /// and its branch deleted, by that candidate's `finish` or by a later `recover`.
    Superseded { since: DateTime<Utc>, by: u64 },
}

/// Why an after-care pull request waits for a maintainer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum NeedsMaintainerBecause {
    /// Its after-care session ended with this outcome (not `validated`).
    Ended(Outcome),
    /// An event needs a session and it has used every session it may have.
    SessionsUsedUp { used: u32 },
}

impl std::fmt::Display for NeedsMaintainerBecause {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NeedsMaintainerBecause::Ended(outcome) => {
                write!(formatter, "its after-care session ended {outcome}")
            }
            NeedsMaintainerBecause::SessionsUsedUp { used } => {
                write!(formatter, "it has used its {used} after-care sessions")
            }
        }
    }
}

impl AftercareRecord {
    /// The after-care sessions it may have in all: the configured ones and the granted ones.
    pub fn sessions_allowed(&self, settings: &AftercareSettings) -> u32 {
        settings.max_sessions.saturating_add(self.granted)
    }

    /// True while klaud may still act on it (watched or to be closed as superseded).
    pub fn in_aftercare(&self) -> bool {
        matches!(
            self.state,
            AftercareState::Watched | AftercareState::Superseded { .. }
        )
    }
}

impl Ledger {
    /// The after-care record of pull request `number`.
    pub fn aftercare_of(&self, number: u64) -> Option<&AftercareRecord> {
        self.aftercare
            .iter()
            .find(|record| record.pull_request == number)
    }

    /// The after-care record of `candidate`'s pull request, if it has one.
    pub fn aftercare_of_candidate(&self, candidate: &str) -> Option<&AftercareRecord> {
        self.aftercare
            .iter()
            .find(|record| record.candidate == candidate)
    }

    /// Records that `candidate`'s pull request `number` ended validated at `head`: a new record
    /// is watched; a known one is watched again at the new head, keeping the sessions it used
    /// and was granted (one left for good or superseded keeps that state). Returns false when
    /// nothing changed.
    pub fn record_validated(
        &mut self,
        candidate: &str,
        family: &str,
        number: u64,
        head: Option<&str>,
        now: DateTime<Utc>,
    ) -> bool {
        let validated = AftercareRecord {
            pull_request: number,
            candidate: candidate.to_string(),
            family: family.to_string(),
            validated_head: head.map(str::to_string),
            validated_at: now,
            sessions_used: 0,
            last_started_at: None,
            granted: 0,
            state: AftercareState::Watched,
        };
        match self
            .aftercare
            .iter_mut()
            .find(|record| record.pull_request == number)
        {
            Some(record) => {
                let before = record.clone();
                record.candidate = validated.candidate;
                record.family = validated.family;
                record.validated_head = validated.validated_head;
                record.validated_at = now;
                // Left for good stays left; a superseded one is still closed.
                if !matches!(
                    record.state,
                    AftercareState::Left { .. } | AftercareState::Superseded { .. }
                ) {
                    record.state = AftercareState::Watched;
                }
                *record != before
            }
            None => {
                self.aftercare.push(validated);
                true
            }
        }
    }

    /// Records that the after-care session of pull request `number` ended with `outcome`, not
    /// `validated` (or used up its jobs): the pull request stays open with its branch and waits
    /// for a maintainer (contract §12). `finish` and `recover`'s reconcile both record it here. A
    /// record left for good or superseded keeps its state. Returns false when nothing changed.
    pub fn record_aftercare_ended(
        &mut self,
        number: u64,
        outcome: Outcome,
        now: DateTime<Utc>,
    ) -> bool {
        let Some(record) = self
            .aftercare
            .iter_mut()
            .find(|record| record.pull_request == number)
        else {
            return false;
        };
        let because = NeedsMaintainerBecause::Ended(outcome);
        match &record.state {
            AftercareState::Left { .. } | AftercareState::Superseded { .. } => false,
            AftercareState::NeedsMaintainer {
                because: earlier, ..
            } if *earlier == because => false,
            AftercareState::Watched | AftercareState::NeedsMaintainer { .. } => {
                record.state = AftercareState::NeedsMaintainer {
                    since: now,
                    because,
                };
                true
            }
        }
    }

    /// Grants pull request `number`, which waits for a maintainer, one more after-care session
    /// (*retry after-care*): it is watched again. False when it waits for no maintainer (no
    /// record, or another state), and nothing changes.
    pub fn grant_aftercare_session(&mut self, number: u64) -> bool {
        let Some(record) = self.aftercare.iter_mut().find(|record| {
            record.pull_request == number
                && matches!(record.state, AftercareState::NeedsMaintainer { .. })
        }) else {
            return false;
        };
        record.granted = record.granted.saturating_add(1);
        record.state = AftercareState::Watched;
        true
    }

    /// Marks the other watched or waiting after-care pull requests of `family` superseded by
    /// pull request `by`, which ended validated: the numbers marked (contract §12). Nothing is
    /// marked when `supersede` is off.
    pub fn mark_superseded(
        &mut self,
        family: &str,
        by: u64,
        supersede: bool,
        now: DateTime<Utc>,
    ) -> Vec<u64> {
        if !supersede {
            return Vec::new();
        }
        let mut marked = Vec::new();
        for record in self.aftercare.iter_mut().filter(|record| {
            record.family == family
                && record.pull_request != by
                && matches!(
                    record.state,
                    AftercareState::Watched | AftercareState::NeedsMaintainer { .. }
                )
        }) {
            record.state = AftercareState::Superseded { since: now, by };
            marked.push(record.pull_request);
        }
        marked
    }
}

/// Whether `candidate`'s pull request waits in after-care without a live or parked session of
/// its own: it then does not occupy its family for a candidate with another id (contract §12),
/// when `supersede` is on.
pub fn waits_in_aftercare(ledger: &Ledger, candidate: &str, settings: &AftercareSettings) -> bool {
    if !settings.supersede {
        return false;
    }
    let Some(record) = ledger.aftercare_of_candidate(candidate) else {
        return false;
    };
    let session_open = ledger
        .sessions
        .iter()
        .any(|session| session.candidate == candidate && session.state != SessionState::Finished);
    !session_open && !matches!(record.state, AftercareState::Left { .. })
}

#[cfg(test)]
mod tests;
