//! The dashboard's reads and its one write, shared by `status --dashboard` and
//! `recover --dashboard` (contract §10); every decision between them is `core::dashboard`'s.
//!
//! Reads, in order, each only when the step before needs it: the issues with the dashboard
//! label (one listing); when klaud's issue has boxes a person changed and the pass acts on
//! ticks (`recover`), its edit history (one GraphQL request) and the permission of each editor
//! named (one request each, up to 8 at a time). The write goes through the one executor as a
//! [`Action::WriteDashboard`] group, which re-reads the issue and leaves it alone if its body
//! changed since it was read.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;

use crate::adapters::github::GitHubClient;
use crate::core::dashboard::attribution::{Edit, EditHistory, attribute};
use crate::core::dashboard::checkbox::changed_boxes;
use crate::core::dashboard::issue::{DashboardTarget, IssueChoice, SeenIssue, choose_issue};
use crate::core::dashboard::render::{DashboardView, render};
use crate::core::dashboard::ticks::{
    JudgedTick, TickVerdict, accounts_to_check, all_waiting, judge_ticks,
};
use crate::core::dashboard::{SteeringChanges, dashboard_write};
use crate::core::ledger::Ledger;
use crate::core::plan::{ActionGroup, LedgerExpectation};
use crate::core::policy::Policy;
use crate::core::snapshot::{Listed, PullRequestFact, ReadFailure};
use crate::core::status::{KlaudPullRequest, StatusReport};
use crate::shell::execute::{Clearance, ExecuteSettings, GroupRecord, execute};
use crate::shell::github::GitHubConnection;

/// How many editors' permissions are read concurrently (usually there are one or two editors).
const PERMISSION_READS_AT_ONCE: usize = 8;

/// Whether a pass acts on the ticks it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickReading {
    /// `recover`: attribute, check permissions, judge.
    Act,
    /// `status`: act on none, keep every tick for the next recovery pass.
    Keep,
}

/// The dashboard as read at the start of a pass.
#[derive(Debug, Clone)]
pub struct DashboardRead {
    pub choice: IssueChoice,
    pub ticks: Vec<JudgedTick>,
}

impl DashboardRead {
    /// What the ticks change in the ledger (nothing for a status pass).
    pub fn changes(&self) -> SteeringChanges {
        SteeringChanges::from_ticks(&self.ticks)
    }

    /// The ticks this pass could not act on after all (the lease was held by another pass, or
    /// the ledger write failed): kept for a later pass instead of cleared.
    pub fn not_acted_on(&mut self, why: &str) {
        for tick in &mut self.ticks {
            if let TickVerdict::Accepted(accepted) = &tick.verdict {
                tick.verdict = TickVerdict::Waiting {
                    request: accepted.request.clone(),
                    why: why.to_string(),
                };
            }
        }
    }
}

/// What the dashboard part of a pass did, for the mode's JSON file and summary.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DashboardReport {
    /// The dashboard issue, when there is one.
    pub issue: Option<u64>,
    /// Why the dashboard was left as it is, when it was.
    pub left_alone: Option<String>,
    /// Issues with the label that someone else wrote.
    pub others: Vec<u64>,
    /// One line per changed box: what became of it.
    pub ticks: Vec<String>,
    /// The rewrite, when one was needed.
    pub write: Option<GroupRecord>,
    /// The rendering equals the body: nothing written.
    pub unchanged: bool,
}

/// Reads the dashboard: the listing, and for a pass that acts, who changed which box.
pub async fn read_dashboard(
    client: &GitHubClient,
    policy: &Policy,
    ledger: &Ledger,
    reading: TickReading,
) -> DashboardRead {
    let listed = match client.issues_with_label(&policy.dashboard.label).await {
        Ok(listed) => listed.map(|issue| SeenIssue {
            number: issue.number,
            author: issue.author,
            state: issue.state,
            body: issue.body,
        }),
        Err(error) => Listed::failed(format!(
            "the dashboard's issues could not be listed: {error}"
        )),
    };
    let choice = choose_issue(&listed, &policy.bot, policy.dashboard.reopen);
    let changed = choice
        .target
        .steering_body()
        .map(changed_boxes)
        .unwrap_or_default();
    let ticks = match (&choice.target, reading) {
        _ if changed.is_empty() => Vec::new(),
        (_, TickReading::Keep) => all_waiting(
            &changed,
            "the next recovery pass acts on it (status acts on no tick)",
        ),
        (DashboardTarget::Rewrite { number, .. }, TickReading::Act) => {
            judge(client, policy, ledger, *number, &changed).await
        }
        _ => Vec::new(),
    };
    DashboardRead { choice, ticks }
}

async fn judge(
    client: &GitHubClient,
    policy: &Policy,
    ledger: &Ledger,
    number: u64,
    changed: &[crate::core::dashboard::checkbox::ReadBox],
) -> Vec<JudgedTick> {
    let history = match client.issue_edit_history(number).await {
        Ok(history) => EditHistory {
            total: history.total,
            edits: history
                .edits
                .into_iter()
                .map(|edit| Edit {
                    editor: edit.editor,
                    edited_at: edit.edited_at,
                    body: edit.body,
                })
                .collect(),
        },
        Err(error) => {
            return all_waiting(
                changed,
                &format!("the issue's edit history could not be read: {error}"),
            );
        }
    };
    let attributions = attribute(changed, &history, &policy.bot);
    let permissions: BTreeMap<_, _> = futures::stream::iter(accounts_to_check(&attributions))
        .map(|account| async move {
            let permission = client
                .collaborator_permission(&account)
                .await
                .map_err(|error| ReadFailure::new(error.to_string()));
            (account, permission)
        })
        .buffer_unordered(PERMISSION_READS_AT_ONCE)
        .collect()
        .await;
    judge_ticks(changed, &attributions, &permissions, &ledger.steering)
}

/// klaud's open pull requests among a recovery pass's listing, as the status report shows them.
pub fn klaud_pull_requests(
    open: &Listed<PullRequestFact>,
    policy: &Policy,
) -> Listed<KlaudPullRequest> {
    Listed {
        items: open
            .items
            .iter()
            .filter(|pull| pull.open && pull.from_this_repository)
            .filter_map(|pull| {
                Some(KlaudPullRequest {
                    number: pull.number,
                    candidate: policy.candidate_of_branch(&pull.head_branch)?.to_string(),
                    draft: pull.draft,
                    labels: pull.labels.clone(),
                })
            })
            .collect(),
        gap: open.gap.clone(),
    }
}

/// Renders the dashboard from `ledger` and `report` and writes it when it changed, through the
/// executor (a dry run records the write).
pub async fn write_dashboard(
    connection: &GitHubConnection,
    policy: &Policy,
    read: &DashboardRead,
    ledger: &Ledger,
    report: &StatusReport,
    repository_url: &str,
    now: DateTime<Utc>,
) -> DashboardReport {
    let mut outcome = DashboardReport {
        others: read
            .choice
            .others
            .iter()
            .map(|(number, _)| *number)
            .collect(),
        ticks: read
            .ticks
            .iter()
            .map(|tick| tick.verdict.describe())
            .collect(),
        ..DashboardReport::default()
    };
    match &read.choice.target {
        DashboardTarget::Rewrite { number, .. } => outcome.issue = Some(*number),
        DashboardTarget::Leave { why } => {
            outcome.left_alone = Some(why.clone());
            return outcome;
        }
        DashboardTarget::Create => {}
    }
    let body = render(&DashboardView {
        report,
        ledger,
        repository_url,
        ticks: &read.ticks,
        others: &read.choice.others,
    });
    let Some(action) = dashboard_write(&read.choice.target, body, &policy.dashboard) else {
        outcome.unchanged = true;
        return outcome;
    };
    let group = ActionGroup {
        subject: "dashboard".to_string(),
        candidate: None,
        pull_request_check: None,
        destructive: false,
        ledger_expectation: LedgerExpectation::Nothing,
        independent: false,
        actions: vec![action],
    };
    let execution = execute(
        connection,
        &ExecuteSettings {
            bot: policy.bot.clone(),
            now,
            cancel_wait: std::time::Duration::ZERO,
            reserve: 0,
        },
        std::slice::from_ref(&group),
        &[Clearance::Cleared],
    )
    .await;
    outcome.write = execution.groups.into_iter().next();
    outcome
}

impl DashboardReport {
    /// One line for logs and summaries.
    pub fn describe(&self) -> String {
        let issue = self.issue.map_or("the dashboard".to_string(), |number| {
            format!("dashboard #{number}")
        });
        if let Some(why) = &self.left_alone {
            return format!("dashboard left alone: {why}");
        }
        if self.unchanged {
            return format!("{issue}: unchanged, nothing written");
        }
        match self.write.as_ref().and_then(|group| group.actions.first()) {
            Some(record) => format!("{}: {}", record.description, record.result.describe()),
            None => format!("{issue}: not written"),
        }
    }
}
