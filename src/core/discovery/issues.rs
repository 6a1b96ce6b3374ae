//! `discover`'s decision for `discovery.source: issues` (contract §13): from the open issues
//! carrying the label, with their label events, and the permission of each label's actor, the
//! candidates a planner run proposes — and the fate of every issue, with its reason.
//!
//! In steps: an issue counts only when the label's latest application (its newest
//! `LabeledEvent` of that label) was made by an account with write, maintain or admin
//! permission (`unauthorized` names the actor), and its conversation is not locked; its family is
//! the alphabetically first label matching `discovery.issues.family-labels`, else
//! `issue-<number>`; the issues go in order (the earliest priority label first, then the oldest,
//! ties by number); what holds a family ([`super::taken`]: occupied, claimed, cooling down, held)
//! leaves the issue out, and a family takes the first issue in the order (the others `queued`,
//! naming it); the candidates are cut to the review batch in that order ([`super::batch`]).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::batch::{count, cut_to_batch};
use super::pattern::segment_matches;
use super::taken::{FamilyNames, Taken};
use super::{CandidateOrigin, DiscoveredCandidate, DiscoveryRun, FamilyFate};
use crate::core::github_state::RepositoryPermission;
use crate::core::ledger::Ledger;
use crate::core::select::GitHubFacts;
use crate::core::snapshot::Read;

/// The most characters of an issue's body a candidate carries.
pub const TASK_BODY_LIMIT: usize = 65_536;

/// One change of an issue's labels, as its timeline records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelEvent {
    /// `true` for a `LabeledEvent`, `false` for an `UnlabeledEvent`.
    pub labeled: bool,
    pub label: String,
    /// `None` when GitHub names no account (a deleted one).
    pub actor: Option<String>,
    pub at: DateTime<Utc>,
}

/// An open issue carrying the label, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledIssue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub url: String,
    /// `None` when GitHub names no account.
    pub author: Option<String>,
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub locked: bool,
    /// Its label events, oldest first; the newest application of the label among them.
    pub label_events: Vec<LabelEvent>,
}

/// `discovery.issues`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueSettings {
    /// The label maintainers put on an issue to hand it to the agent.
    pub label: String,
    /// A glob (`*` any run of characters, `?` one) of the labels that name a family.
    pub family_labels: String,
    /// Labels that put an issue first, earlier first; compared without case.
    pub priority_labels: Vec<String>,
}

/// What the decision reads, from one snapshot.
#[derive(Debug, Clone, Copy)]
pub struct IssueSnapshot<'a> {
    pub issues: &'a [LabelledIssue],
    /// The permission of each label actor, read once this pass (`Err` keeps the read's error).
    pub permissions: &'a BTreeMap<String, Read<RepositoryPermission>>,
    pub ledger: &'a Ledger,
    /// klaud's open pull requests and branches, complete.
    pub github: &'a GitHubFacts,
}

/// What became of an issue, the first that applies in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueFate {
    Candidate,
    /// The label's latest application was not made by a writer.
    Unauthorized,
    /// The issue's conversation is locked.
    Locked,
    Occupied,
    Claimed,
    CoolingDown,
    Held,
    /// Its family is taken by an issue earlier in the order.
    Queued,
    /// Left out by the review batch size.
    Cut,
}

impl IssueFate {
    fn of_family(fate: FamilyFate) -> IssueFate {
        match fate {
            FamilyFate::Occupied => IssueFate::Occupied,
            FamilyFate::Claimed => IssueFate::Claimed,
            FamilyFate::CoolingDown => IssueFate::CoolingDown,
            FamilyFate::Held => IssueFate::Held,
            FamilyFate::Cut => IssueFate::Cut,
            FamilyFate::Candidate | FamilyFate::Unrenderable | FamilyFate::NoPublishedRow => {
                IssueFate::Candidate
            }
        }
    }
}

/// The issue a candidate comes from, as its record carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct IssueRecord {
    pub number: u64,
    pub title: String,
    pub url: String,
    pub labels: Vec<String>,
    pub author: Option<String>,
    /// Who applied the label last: the maintainer who handed the issue over.
    pub label_actor: String,
}

/// What the maintainers asked for: the issue's title and body, the body cut to
/// [`TASK_BODY_LIMIT`] characters with the cut said at its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Task {
    pub title: String,
    pub body: String,
}

impl Task {
    fn of(issue: &LabelledIssue) -> Task {
        let length = issue.body.chars().count();
        let body = if length > TASK_BODY_LIMIT {
            let kept: String = issue.body.chars().take(TASK_BODY_LIMIT).collect();
            format!(
                "{kept}\n\n[klaud cut the issue's body here: it has {length} characters, a task carries the first {TASK_BODY_LIMIT}]"
            )
        } else {
            issue.body.clone()
        };
        Task {
            title: issue.title.clone(),
            body,
        }
    }
}

/// One issue's fate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct IssueReport {
    pub issue: u64,
    pub candidate: String,
    pub family: String,
    pub fate: IssueFate,
    /// Who applied the label last, when an event names the account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_actor: Option<String>,
    pub reason: String,
}

/// The decision: the candidates in the run's order, and every issue with its fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct IssueDiscovery {
    pub candidates: Vec<DiscoveredCandidate>,
    pub issues: Vec<IssueReport>,
    pub issue_counts: BTreeMap<IssueFate, usize>,
}

impl IssueDiscovery {
    pub fn candidate_ids(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.id.clone()).collect()
    }
}

/// The candidate id of issue `number`.
pub fn issue_candidate_id(number: u64) -> String {
    format!("issue-{number}")
}

/// The newest application of `label` (compared without case) among the issue's events.
pub fn latest_application<'i>(issue: &'i LabelledIssue, label: &str) -> Option<&'i LabelEvent> {
    issue
        .label_events
        .iter()
        .filter(|event| event.labeled && event.label.eq_ignore_ascii_case(label))
        .max_by_key(|event| event.at)
}

/// The accounts whose permission the decision needs: every label actor, once.
pub fn label_actors(issues: &[LabelledIssue], label: &str) -> BTreeSet<String> {
    issues
        .iter()
        .filter_map(|issue| latest_application(issue, label)?.actor.clone())
        .collect()
}

/// The family of an issue: the alphabetically first of its labels matching the pattern, else
/// the issue itself.
pub fn family_of(issue: &LabelledIssue, family_labels: &str) -> String {
    issue
        .labels
        .iter()
        .filter(|label| segment_matches(family_labels, label))
        .min()
        .cloned()
        .unwrap_or_else(|| issue_candidate_id(issue.number))
}

/// The issues in the run's order: the earliest priority label first (none last), then the
/// oldest, ties by number.
fn in_order<'i>(issues: &'i [LabelledIssue], settings: &IssueSettings) -> Vec<&'i LabelledIssue> {
    let priority = |issue: &LabelledIssue| {
        settings
            .priority_labels
            .iter()
            .position(|wanted| {
                issue
                    .labels
                    .iter()
                    .any(|label| label.eq_ignore_ascii_case(wanted))
            })
            .unwrap_or(usize::MAX)
    };
    let mut ordered: Vec<&LabelledIssue> = issues.iter().collect();
    ordered.sort_by_key(|issue| (priority(issue), issue.created_at, issue.number));
    ordered
}

/// Why the label on an issue does not count, if it does not: the label's latest application by
/// an account that may not steer (or none named, or a permission that could not be read).
fn unauthorized(
    issue: &LabelledIssue,
    settings: &IssueSettings,
    permissions: &BTreeMap<String, Read<RepositoryPermission>>,
) -> Option<String> {
    let label = &settings.label;
    let Some(event) = latest_application(issue, label) else {
        return Some(format!(
            "no event of the issue's timeline shows who applied '{label}'"
        ));
    };
    let Some(actor) = &event.actor else {
        return Some(format!(
            "'{label}' was last applied by an account GitHub no longer names"
        ));
    };
    match permissions.get(actor) {
        Some(Ok(permission)) if permission.can_steer() => None,
        Some(Ok(permission)) => Some(format!(
            "'{label}' was last applied by {actor}, whose permission is {}: only write, maintain or admin hands work to the agent",
            permission.as_str()
        )),
        Some(Err(failure)) => Some(format!(
            "'{label}' was last applied by {actor}, whose permission could not be read ({failure})"
        )),
        None => Some(format!(
            "'{label}' was last applied by {actor}, whose permission was not read"
        )),
    }
}

/// What the issues decided so far: the first issue of each family, and the candidates in order.
#[derive(Default)]
struct Taking {
    first_of_family: BTreeMap<String, u64>,
    candidates: Vec<DiscoveredCandidate>,
}

/// One issue's fate, the first that applies: unauthorized, locked, what holds its family,
/// queued behind an earlier issue of the family, else a candidate.
fn issue_fate(
    issue: &LabelledIssue,
    family: &FamilyNames,
    snapshot: &IssueSnapshot<'_>,
    settings: &IssueSettings,
    taken: &Taken<'_>,
    taking: &Taking,
) -> Option<(IssueFate, String)> {
    if let Some(reason) = unauthorized(issue, settings, snapshot.permissions) {
        return Some((IssueFate::Unauthorized, reason));
    }
    if issue.locked {
        return Some((
            IssueFate::Locked,
            "the issue's conversation is locked".into(),
        ));
    }
    let id = issue_candidate_id(issue.number);
    if let Some(obstacle) = taken.obstacle(family, &id) {
        return Some((IssueFate::of_family(obstacle.fate), obstacle.reason));
    }
    taking.first_of_family.get(family.name()).map(|first| {
        (
            IssueFate::Queued,
            format!(
                "family {} is taken by issue #{first}, earlier in the order",
                family.name()
            ),
        )
    })
}

/// The candidate an issue makes.
fn candidate_of(
    issue: &LabelledIssue,
    family: &str,
    settings: &IssueSettings,
    run: &DiscoveryRun<'_>,
) -> DiscoveredCandidate {
    let id = issue_candidate_id(issue.number);
    let actor = latest_application(issue, &settings.label)
        .and_then(|event| event.actor.clone())
        .unwrap_or_default();
    DiscoveredCandidate {
        branch: format!("{}{id}", run.policy.branch_prefix),
        id,
        family: family.to_string(),
        base: run.base.to_string(),
        origin: CandidateOrigin::Issue {
            issue: IssueRecord {
                number: issue.number,
                title: issue.title.clone(),
                url: issue.url.clone(),
                labels: issue.labels.clone(),
                author: issue.author.clone(),
                label_actor: actor,
            },
            task: Task::of(issue),
        },
    }
}

/// The names of each family: its name and the candidates of every issue in it, so that a
/// branch, pull request or record of any of them holds the family.
fn families(issues: &[LabelledIssue], family_labels: &str) -> BTreeMap<String, FamilyNames> {
    let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for issue in issues {
        members
            .entry(family_of(issue, family_labels))
            .or_default()
            .insert(issue_candidate_id(issue.number));
    }
    members
        .into_iter()
        .map(|(name, ids)| {
            let names = FamilyNames::new(&name, BTreeSet::new(), ids);
            (name, names)
        })
        .collect()
}

/// The decision, in steps: the families of the issues; each issue in the run's order and its
/// fate; the batch cut; the reports with their counts.
pub fn discover_issues(
    snapshot: IssueSnapshot<'_>,
    settings: &IssueSettings,
    run: &DiscoveryRun<'_>,
) -> IssueDiscovery {
    let taken = Taken::new(
        snapshot.ledger,
        snapshot.github,
        run.policy,
        run.legacy_branch_prefixes,
        run.now,
    );
    let families = families(snapshot.issues, &settings.family_labels);
    let mut taking = Taking::default();
    let mut reports: Vec<IssueReport> = Vec::new();
    for issue in in_order(snapshot.issues, settings) {
        let family = &families[&family_of(issue, &settings.family_labels)];
        let fate = issue_fate(issue, family, &snapshot, settings, &taken, &taking);
        let (fate, reason) = fate.unwrap_or_else(|| {
            taking
                .first_of_family
                .insert(family.name().to_string(), issue.number);
            taking
                .candidates
                .push(candidate_of(issue, family.name(), settings, run));
            (IssueFate::Candidate, "labelled by a writer".to_string())
        });
        reports.push(IssueReport {
            issue: issue.number,
            candidate: issue_candidate_id(issue.number),
            family: family.name().to_string(),
            fate,
            label_actor: latest_application(issue, &settings.label)
                .and_then(|event| event.actor.clone()),
            reason,
        });
    }
    let (candidates, cut) = cut_to_batch(taking.candidates, run.review_batch_size);
    for cut in cut {
        if let Some(report) = reports
            .iter_mut()
            .find(|report| report.candidate == cut.item.id)
        {
            report.fate = IssueFate::Cut;
            report.reason = cut.reason;
        }
    }
    reports.sort_by_key(|report| report.issue);
    IssueDiscovery {
        candidates,
        issue_counts: count(reports.iter().map(|report| report.fate)),
        issues: reports,
    }
}

#[cfg(test)]
#[path = "issues_tests.rs"]
mod tests;
