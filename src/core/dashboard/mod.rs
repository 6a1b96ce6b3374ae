//! The dashboard issue (contract §10): one issue klaud's account wrote, carrying the dashboard
//! label, whose body is rendered from the ledger and whose checkboxes steer klaud.
//!
//! A pass goes in steps, each a pure function here, with the reads between them done by the
//! shell:
//! 1. [`issue::choose_issue`]: which listed issue is the dashboard (or none to create, or one
//!    to leave alone).
//! 2. [`checkbox::changed_boxes`]: the boxes of its body a person changed from how klaud drew
//!    them (the hidden markers say how). None changed: no more reads.
//! 3. [`attribution::attribute`] over the issue's edit history: who changed each box.
//! 4. [`ticks::judge_ticks`] given those accounts' permissions: acted on, already acted on,
//!    ignored (named), or waiting.
//! 5. [`SteeringChanges`] applied to the ledger (by `recover`, which holds the lease; `status`
//!    acts on nothing and leaves every tick waiting).
//! 6. [`render::render`] from the ledger as written, and [`dashboard_write`]: the one write,
//!    or none when the body is already what it would write.

pub mod attribution;
pub mod checkbox;
pub mod issue;
pub mod render;
pub mod ticks;

use chrono::{DateTime, Utc};
use serde::Serialize;

use self::issue::DashboardTarget;
use self::ticks::{JudgedTick, TickVerdict};
use super::ledger::Ledger;
use super::plan::Action;
use super::policy::DashboardSettings;
use super::steering::{AcceptedRequest, IgnoredTick, Request};

/// What a recovery pass changes in the ledger's steering: the requests it acts on and the ticks
/// it ignores (remembered to be named).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SteeringChanges {
    pub accepted: Vec<AcceptedRequest>,
    pub ignored: Vec<IgnoredTick>,
}

impl SteeringChanges {
    /// The changes this pass's verdicts make.
    pub fn from_ticks(ticks: &[JudgedTick]) -> Self {
        let mut changes = SteeringChanges::default();
        for tick in ticks {
            match &tick.verdict {
                TickVerdict::Accepted(accepted) => changes.accepted.push(accepted.clone()),
                TickVerdict::Ignored(ignored) => changes.ignored.push(ignored.clone()),
                TickVerdict::AlreadyActed(_) | TickVerdict::Waiting { .. } => {}
            }
        }
        changes
    }

    pub fn is_empty(&self) -> bool {
        self.accepted.is_empty() && self.ignored.is_empty()
    }

    /// Applies the changes to `ledger` (idempotent: a request acted on before, or an ignored
    /// tick already remembered, changes nothing); returns what changed, for the commit message.
    pub fn apply(&self, ledger: &mut Ledger, run: u64, now: DateTime<Utc>) -> Vec<String> {
        let mut said = Vec::new();
        for accepted in &self.accepted {
            if !ledger.steering.apply(accepted, run, now) {
                continue;
            }
            let mut line = format!("{} (asked by {})", accepted.request, accepted.by);
            // The audit entry just made is what keeps a second reading of the tick from
            // granting again.
            if let Request::RetryAftercare(number) = accepted.request
                && !ledger.grant_aftercare_session(number)
            {
                line.push_str(&format!(
                    ": #{number} waits for no maintainer, nothing granted"
                ));
            }
            said.push(line);
        }
        for ignored in &self.ignored {
            if ledger.steering.remember_ignored(ignored.clone()) {
                said.push(format!(
                    "ignored {} ticked by {} ({})",
                    ignored.request, ignored.by, ignored.permission
                ));
            }
        }
        said
    }
}

/// The write that makes the dashboard `body`: create the issue, or rewrite (and reopen) it
/// while it still holds the body this pass read; `None` when the body is already `body` or the
/// dashboard is left alone.
pub fn dashboard_write(
    target: &DashboardTarget,
    body: String,
    settings: &DashboardSettings,
) -> Option<Action> {
    match target {
        DashboardTarget::Create => Some(Action::WriteDashboard {
            issue: None,
            title: settings.title.clone(),
            label: settings.label.clone(),
            body,
            reopen: false,
            expected_body: None,
        }),
        DashboardTarget::Rewrite {
            number,
            body: current,
            reopen,
        } => (*reopen || *current != body).then(|| Action::WriteDashboard {
            issue: Some(*number),
            title: settings.title.clone(),
            label: settings.label.clone(),
            body,
            reopen: *reopen,
            expected_body: Some(current.clone()),
        }),
        DashboardTarget::Leave { .. } => None,
    }
}

#[cfg(test)]
mod tests;
