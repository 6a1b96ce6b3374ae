//! The invariants every klaud pass keeps, checked over the fake GitHub's state (contract §2a, §4,
//! §5, §7): take the state before one or more passes, run them, take the state after, and
//! [`check`] reports every broken promise as a [`Violation`]:
//!
//! - no open pull request with a commit that is not the bot's, with the handoff label, or ready
//!   for review was closed or turned back into a draft;
//! - no branch with a commit that is not the bot's was deleted, nor the branch of a pull request
//!   a maintainer closed (legacy lock refs name a run, not work, and are exempt);
//! - no ref was deleted that pointed elsewhere than it did before the passes (when they checked
//!   it): the fake records the commit every deleted ref pointed at;
//! - the ledger was not lost, parses, validates against the published schema
//!   (`dist/schema/klaud-ledger.schema.json`), keeps live sessions within the cap, holds at most
//!   one claim and one open session per family, and every claim belongs to a session.
//!
//! Between `before` and `after` only klaud may act; maintainer actions belong before `before`.
//! Include it with `#[path = "invariants/mod.rs"] mod invariants;` beside the fake GitHub.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::OnceLock;

use klaud::core::ledger::{Ledger, SessionState};

use super::fake_github::{PullState, RepoState};

/// The published schema of `ledger.json`.
const LEDGER_SCHEMA: &str = include_str!("../../dist/schema/klaud-ledger.schema.json");

/// What the checked passes were configured with.
#[derive(Clone, Debug)]
pub struct Rules {
    pub bot: String,
    pub handoff_label: String,
    /// `max-candidates`: live sessions allowed at once.
    pub cap: usize,
    pub state_branch: String,
    pub ledger_file: String,
    /// Legacy lock refs (`*` = any characters), which point at whatever commit their run saw.
    pub lock_patterns: Vec<String>,
}

impl Rules {
    /// klaud's defaults for `bot` under a cap of `cap`.
    pub fn new(bot: &str, cap: usize) -> Self {
        Rules {
            bot: bot.to_string(),
            handoff_label: "klaud-handoff".into(),
            cap,
            state_branch: "klaud/state".into(),
            ledger_file: "ledger.json".into(),
            lock_patterns: vec!["klaud/recovery-*".into(), "klaud/claim-*".into()],
        }
    }

    fn is_lock(&self, branch: &str) -> bool {
        self.lock_patterns
            .iter()
            .any(|pattern| glob(pattern, branch))
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A protected pull request (`why`: a maintainer's commit, handed off, ready) was closed.
    ProtectedPullClosed {
        number: u64,
        why: String,
    },
    /// A protected pull request was turned back into a draft.
    ProtectedPullRedrafted {
        number: u64,
        why: String,
    },
    /// A branch holding a commit that is not the bot's was deleted.
    ForeignBranchDeleted {
        branch: String,
        commit: String,
    },
    /// The branch of a pull request a maintainer closed was deleted.
    MaintainerClosedBranchDeleted {
        branch: String,
        number: u64,
    },
    /// A ref was deleted while it pointed elsewhere than when it was checked.
    MovedRefDeleted {
        name: String,
        checked: Option<String>,
        deleted: String,
    },
    /// The ledger existed before and is gone.
    LedgerLost,
    LedgerUnreadable(String),
    LedgerSchema(Vec<String>),
    OverCap {
        live: usize,
        cap: usize,
    },
    /// A claim with no session of its candidate, family and parent run.
    OrphanClaim {
        candidate: String,
        family: String,
        parent_run: u64,
    },
    DoubleClaim {
        family: String,
    },
    TwoOpenSessions {
        family: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::ProtectedPullClosed { number, why } => {
                write!(f, "pull request #{number} ({why}) was closed")
            }
            Violation::ProtectedPullRedrafted { number, why } => {
                write!(f, "pull request #{number} ({why}) was turned into a draft")
            }
            Violation::ForeignBranchDeleted { branch, commit } => {
                write!(
                    f,
                    "branch {branch} with commit {commit} not the bot's was deleted"
                )
            }
            Violation::MaintainerClosedBranchDeleted { branch, number } => write!(
                f,
                "branch {branch} of #{number}, closed by a maintainer, was deleted"
            ),
            Violation::MovedRefDeleted {
                name,
                checked,
                deleted,
            } => write!(
                f,
                "{name} was deleted at {deleted} but pointed at {checked:?} when checked"
            ),
            Violation::LedgerLost => write!(f, "the ledger is gone"),
            Violation::LedgerUnreadable(error) => write!(f, "the ledger does not parse: {error}"),
            Violation::LedgerSchema(errors) => {
                write!(f, "the ledger breaks its schema: {}", errors.join("; "))
            }
            Violation::OverCap { live, cap } => {
                write!(f, "{live} live sessions over the cap of {cap}")
            }
            Violation::OrphanClaim {
                candidate,
                family,
                parent_run,
            } => write!(
                f,
                "the claim of {family} for {candidate} by run {parent_run} has no session"
            ),
            Violation::DoubleClaim { family } => write!(f, "{family} is claimed twice"),
            Violation::TwoOpenSessions { family } => {
                write!(f, "{family} has two open sessions")
            }
        }
    }
}

/// Every invariant broken between `before` and `after`.
pub fn check(rules: &Rules, before: &RepoState, after: &RepoState) -> Vec<Violation> {
    let mut violations = Vec::new();
    check_pulls(rules, before, after, &mut violations);
    check_refs(rules, before, after, &mut violations);
    let had_ledger = before
        .read_file(&rules.state_branch, &rules.ledger_file)
        .is_some();
    match after.read_file(&rules.state_branch, &rules.ledger_file) {
        Some(text) => {
            let live_before = before
                .read_file(&rules.state_branch, &rules.ledger_file)
                .and_then(|text| Ledger::from_json(&text).ok())
                .map_or(0, |ledger| ledger.live_sessions().count());
            // A ledger seeded over the cap may stay there, never grow.
            let cap = rules.cap.max(live_before);
            violations.extend(check_ledger_text(&text, cap));
        }
        None if had_ledger => violations.push(Violation::LedgerLost),
        None => {}
    }
    violations
}

/// Panics with every violation and `context` (the seed or trial to replay) when any.
pub fn assert_none(context: &str, violations: &[Violation]) {
    if violations.is_empty() {
        return;
    }
    let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
    panic!(
        "{context}: {} invariant violation(s):\n  {}",
        violations.len(),
        listed.join("\n  ")
    );
}

/// Why an open pull request must stay open and ready, if it must.
fn protection(rules: &Rules, state: &RepoState, number: u64) -> Option<String> {
    let pull = &state.pulls[&number];
    if pull.state != PullState::Open {
        return None;
    }
    if pull.labels.contains(&rules.handoff_label) {
        return Some("handed off".into());
    }
    if let Some(commit) = foreign_commit(rules, state, &pull.base_ref, &pull.head_sha) {
        return Some(format!("commit {commit} not the bot's"));
    }
    if !pull.draft {
        return Some("ready".into());
    }
    None
}

/// The first commit between the base branch and `head` that the bot did not author and commit.
fn foreign_commit(rules: &Rules, state: &RepoState, base: &str, head: &str) -> Option<String> {
    let base_sha = state.branch_sha(base).map(str::to_string);
    let (commits, _) = state.commits_between(base_sha.as_deref(), head);
    commits
        .iter()
        .find(|commit| {
            commit.author_login.as_deref() != Some(rules.bot.as_str())
                || commit.committer_login.as_deref() != Some(rules.bot.as_str())
        })
        .map(|commit| commit.sha.clone())
}

fn check_pulls(rules: &Rules, before: &RepoState, after: &RepoState, out: &mut Vec<Violation>) {
    for number in before.pulls.keys() {
        let Some(why) = protection(rules, before, *number) else {
            continue;
        };
        let Some(now) = after.pulls.get(number) else {
            continue;
        };
        if now.state == PullState::Closed {
            out.push(Violation::ProtectedPullClosed {
                number: *number,
                why: why.clone(),
            });
        }
        if now.draft && !before.pulls[number].draft {
            out.push(Violation::ProtectedPullRedrafted {
                number: *number,
                why,
            });
        }
    }
}

fn check_refs(rules: &Rules, before: &RepoState, after: &RepoState, out: &mut Vec<Violation>) {
    // Where each deleted ref pointed when it went: the fake's record, else its last known sha.
    let mut deleted: BTreeMap<String, String> = BTreeMap::new();
    for record in after.deleted_refs.iter().skip(before.deleted_refs.len()) {
        let checked = before.refs.get(&record.name).cloned();
        if checked.as_deref() != Some(record.sha.as_str()) {
            out.push(Violation::MovedRefDeleted {
                name: record.name.clone(),
                checked,
                deleted: record.sha.clone(),
            });
        }
        deleted.insert(record.name.clone(), record.sha.clone());
    }
    for (name, sha) in &before.refs {
        if !after.refs.contains_key(name) {
            deleted.entry(name.clone()).or_insert_with(|| sha.clone());
        }
    }
    for (name, sha) in &deleted {
        let Some(branch) = name.strip_prefix("refs/heads/") else {
            continue;
        };
        // The state branch's loss is the ledger's (`LedgerLost`).
        if after.refs.contains_key(name) || rules.is_lock(branch) || branch == rules.state_branch {
            continue;
        }
        if let Some(commit) = foreign_commit(rules, after, &before.default_branch, sha) {
            out.push(Violation::ForeignBranchDeleted {
                branch: branch.to_string(),
                commit,
            });
        }
        // Closed by someone else before the pass, or while it ran (a maintainer closing it as
        // the bot's own close arrived: that close succeeds and leaves it the maintainer's).
        let closed_by_someone_else = |state: &RepoState| {
            state
                .pulls
                .values()
                .filter(|pull| pull.head_ref == branch)
                .max_by_key(|pull| pull.number)
                .filter(|pull| {
                    pull.state == PullState::Closed
                        && pull.closed_by.as_deref() != Some(rules.bot.as_str())
                })
                .map(|pull| pull.number)
        };
        if let Some(number) =
            closed_by_someone_else(before).or_else(|| closed_by_someone_else(after))
        {
            out.push(Violation::MaintainerClosedBranchDeleted {
                branch: branch.to_string(),
                number,
            });
        }
    }
}

/// The invariants of one stored ledger text under a cap of `cap` live sessions.
pub fn check_ledger_text(text: &str, cap: usize) -> Vec<Violation> {
    let mut out = Vec::new();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(document) => {
            let errors: Vec<String> = schema()
                .iter_errors(&document)
                .map(|error| format!("{} at {}", error, error.instance_path()))
                .collect();
            if !errors.is_empty() {
                out.push(Violation::LedgerSchema(errors));
            }
        }
        Err(error) => {
            out.push(Violation::LedgerUnreadable(error.to_string()));
            return out;
        }
    }
    let ledger = match Ledger::from_json(text) {
        Ok(ledger) => ledger,
        Err(error) => {
            out.push(Violation::LedgerUnreadable(error.to_string()));
            return out;
        }
    };
    out.extend(check_ledger(&ledger, cap));
    out
}

/// The invariants of one ledger document under a cap of `cap` live sessions.
pub fn check_ledger(ledger: &Ledger, cap: usize) -> Vec<Violation> {
    let mut out = Vec::new();
    let live = ledger.live_sessions().count();
    if live > cap {
        out.push(Violation::OverCap { live, cap });
    }
    let mut claimed = BTreeSet::new();
    for claim in &ledger.claims {
        if !claimed.insert(claim.family.as_str()) {
            out.push(Violation::DoubleClaim {
                family: claim.family.clone(),
            });
        }
        let owned = ledger.sessions.iter().any(|session| {
            session.candidate == claim.candidate
                && session.family == claim.family
                && session.parent_run == claim.parent_run
        });
        if !owned {
            out.push(Violation::OrphanClaim {
                candidate: claim.candidate.clone(),
                family: claim.family.clone(),
                parent_run: claim.parent_run,
            });
        }
    }
    let mut open = BTreeSet::new();
    for session in &ledger.sessions {
        if session.state != SessionState::Finished && !open.insert(session.family.as_str()) {
            out.push(Violation::TwoOpenSessions {
                family: session.family.clone(),
            });
        }
    }
    out
}

fn schema() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(LEDGER_SCHEMA).expect("the published ledger schema is JSON");
        jsonschema::validator_for(&schema).expect("the published ledger schema compiles")
    })
}

/// `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    klaud::core::policy::glob_matches(pattern, text)
}
