//! What `status` and the dashboard show of one after-care pull request (contract §12): its
//! state, the sessions it used and may have, and what klaud does next ([`next_for`], never
//! derived again here).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::{AftercareNext, AftercareRecord, AftercareState, next_for};
use crate::core::health::PullRequestHealth;
use crate::core::ledger::{Ledger, SessionState};
use crate::core::policy::AftercareSettings;

/// An after-care record's state by name, as `status.json` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AftercareStateName {
    Watched,
    NeedsMaintainer,
    Left,
    Superseded,
}

impl AftercareStateName {
    pub fn of(state: &AftercareState) -> Self {
        match state {
            AftercareState::Watched => AftercareStateName::Watched,
            AftercareState::NeedsMaintainer { .. } => AftercareStateName::NeedsMaintainer,
            AftercareState::Left { .. } => AftercareStateName::Left,
            AftercareState::Superseded { .. } => AftercareStateName::Superseded,
        }
    }
}

/// One pull request's after-care in `status.json` (`aftercare`) and on the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct AftercareView {
    pub state: AftercareStateName,
    /// Why it waits for a maintainer, or was left for good; which pull request supersedes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// After-care sessions started for it over its life, successful ones included.
    pub sessions_used: u32,
    /// `aftercare.max-sessions` plus the sessions maintainers granted.
    pub sessions_allowed: u32,
    /// What klaud does next (`next`, with the session's `kind` and the `wait` where they apply).
    #[serde(flatten)]
    pub next: AftercareNext,
}

impl AftercareView {
    /// The view of `record`, whose pull request has `health`, at `now`.
    pub fn of(
        record: &AftercareRecord,
        health: &PullRequestHealth,
        ledger: &Ledger,
        settings: &AftercareSettings,
        now: DateTime<Utc>,
    ) -> Self {
        let session_open = ledger.sessions.iter().any(|session| {
            session.candidate == record.candidate && session.state != SessionState::Finished
        });
        let reason = match &record.state {
            AftercareState::Watched => None,
            AftercareState::NeedsMaintainer { because, .. } => Some(because.to_string()),
            AftercareState::Left { reason, .. } => Some(reason.clone()),
            AftercareState::Superseded { by, .. } => Some(format!("superseded by #{by}")),
        };
        AftercareView {
            state: AftercareStateName::of(&record.state),
            reason,
            sessions_used: record.sessions_used,
            sessions_allowed: record.sessions_allowed(settings),
            next: next_for(record, health, session_open, settings, now),
        }
    }

    /// True when it waits for a maintainer: its dashboard line carries *retry after-care*.
    pub fn needs_maintainer(&self) -> bool {
        self.state == AftercareStateName::NeedsMaintainer
    }
}

impl AftercareStateName {
    pub fn name(self) -> &'static str {
        match self {
            AftercareStateName::Watched => "watched",
            AftercareStateName::NeedsMaintainer => "needs-maintainer",
            AftercareStateName::Left => "left",
            AftercareStateName::Superseded => "superseded",
        }
    }
}

/// One line for people, e.g. `watched, 1/2 sessions: starts a refresh session`.
impl std::fmt::Display for AftercareView {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{}, {}/{} sessions",
            self.state.name(),
            self.sessions_used,
            self.sessions_allowed
        )?;
        // A superseded one's reason is what comes next: said once.
        if let (false, Some(reason)) = (self.state == AftercareStateName::Superseded, &self.reason)
        {
            write!(formatter, " ({reason})")?;
        }
        write!(formatter, ": {}", self.next)
    }
}

/// Each pull request's after-care from the ledger: its record's view, or none when it is not
/// in after-care (no record of that pull request and candidate).
pub fn attach_aftercare(
    rows: &mut [PullRequestHealth],
    ledger: &Ledger,
    settings: &AftercareSettings,
    now: DateTime<Utc>,
) {
    for row in rows {
        row.aftercare = ledger
            .aftercare_of(row.number)
            .filter(|record| record.candidate == row.candidate)
            .map(|record| AftercareView::of(record, row, ledger, settings, now));
    }
}
