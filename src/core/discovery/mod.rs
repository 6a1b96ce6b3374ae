//! `discover`'s decision (contract §11): from the families the repository's generator rendered,
//! the public catalog's rows and what the ledger and GitHub say is taken, the candidates a
//! planner run proposes — and the fate of every family and every row, with its reason.
//!
//! In steps: each family's entries become observation keys spelled as published
//! ([`observation`]); the catalog's rows are read ([`catalog`]), the capacity gate keeps those
//! whose hardware has an eligible target, and the rest go newest first (ties: the larger hash of
//! the row first). For each row, each family (ascending) whose key equals the row's takes it
//! unless it took a newer one; a family that takes a row is left out when it is occupied (a live
//! or parked session, an open klaud pull request, an existing branch), claimed, cooling down or
//! held, else it is a candidate with the reference system's id ([`identity`]). The candidates
//! are shuffled with the planner run as the seed and cut to the review batch.

pub mod catalog;
pub mod identity;
pub mod observation;
pub mod pattern;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use self::catalog::{Catalog, CatalogRow};
use self::identity::{candidate_id, family_id, family_id_of_candidate, identity};
use self::observation::{ObservationKey, PublishedSpellings, key_of_entry};
use super::cooldown::{CooldownScope, running_cooldowns};
use super::ledger::{Ledger, SessionState};
use super::policy::Policy;
use super::select::capacity::CapacityGate;
use super::select::{GitHubFacts, OpenPullRequest};

/// The smallest and largest review batch (`discovery.review-batch-size`).
pub const REVIEW_BATCH_LIMITS: (usize, usize) = (1, 256);
/// The review batch when the config does not set it.
pub const DEFAULT_REVIEW_BATCH_SIZE: usize = 64;

/// One family (`<path>:<key>`) and what the generator made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    pub rendering: Rendering,
}

/// A family's rendering.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendering {
    /// The observation keys of its entries.
    Keys(BTreeSet<ObservationKey>),
    /// The generator refused the key, or its output could not be read: why, in one line.
    Unrenderable { reason: String },
}

/// The observation keys of a family's entries, or why they cannot be read.
pub fn render_keys(entries: &Value, spellings: &PublishedSpellings) -> Rendering {
    let Value::Array(entries) = entries else {
        return Rendering::Unrenderable {
            reason: "the generator printed something other than a JSON array of entries".into(),
        };
    };
    let mut keys = BTreeSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let Value::Object(fields) = entry else {
            return Rendering::Unrenderable {
                reason: format!("entry {index} is not an object"),
            };
        };
        match key_of_entry(fields, spellings) {
            Ok(key) => {
                keys.insert(key);
            }
            Err(unreadable) => {
                return Rendering::Unrenderable {
                    reason: format!(
                        "entry {index} lacks or mistypes {}",
                        unreadable.fields.join(", ")
                    ),
                };
            }
        }
    }
    Rendering::Keys(keys)
}

/// What the decision reads, from one snapshot.
#[derive(Debug, Clone, Copy)]
pub struct DiscoverySnapshot<'a> {
    pub families: &'a [Family],
    pub catalog: &'a Catalog,
    pub ledger: &'a Ledger,
    /// klaud's open pull requests and its branches, under the prefix and the legacy prefixes;
    /// both complete (the shell stops before deciding on an incomplete listing).
    pub github: &'a GitHubFacts,
    pub capacity: &'a CapacityGate,
}

/// The settings and the run the decision is made for.
#[derive(Debug, Clone)]
pub struct DiscoveryRun<'a> {
    pub policy: &'a Policy,
    /// Earlier branch prefixes whose branches and pull requests still count (`klaude/auto-`).
    pub legacy_branch_prefixes: &'a [String],
    /// The checkout's HEAD commit: every candidate's `base`.
    pub base: &'a str,
    /// The planner run: the shuffle's seed.
    pub run_id: u64,
    pub review_batch_size: usize,
    pub now: DateTime<Utc>,
}

/// What became of a family, the first that applies in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FamilyFate {
    Candidate,
    /// A live or parked session, an open klaud pull request or an existing branch.
    Occupied,
    /// A ledger claim alone.
    Claimed,
    /// A cooldown of the candidate its newest row makes.
    CoolingDown,
    /// A cooldown that holds the whole family.
    Held,
    /// Left out by the review batch size.
    Cut,
    Unrenderable,
    NoPublishedRow,
}

/// What became of a catalog row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowFate {
    Candidate,
    /// Every family it fits took a newer row.
    OlderThan,
    Occupied,
    Claimed,
    CoolingDown,
    Held,
    Cut,
    NoFamily,
    HardwareIneligible,
    Invalid,
}

impl RowFate {
    fn of_family(fate: FamilyFate) -> RowFate {
        match fate {
            FamilyFate::Candidate => RowFate::Candidate,
            FamilyFate::Occupied => RowFate::Occupied,
            FamilyFate::Claimed => RowFate::Claimed,
            FamilyFate::CoolingDown => RowFate::CoolingDown,
            FamilyFate::Held => RowFate::Held,
            FamilyFate::Cut => RowFate::Cut,
            // A family without a rendering or a row never takes one.
            FamilyFate::Unrenderable | FamilyFate::NoPublishedRow => RowFate::NoFamily,
        }
    }
}

/// A discovered candidate, as the candidates file holds it (contract §3a).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiscoveredCandidate {
    pub id: String,
    pub family: String,
    pub base: String,
    /// The eligible targets the row's hardware matched, when a capacity gate is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// The catalog row exactly as published.
    pub source: Map<String, Value>,
    pub branch: String,
}

/// One family's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FamilyReport {
    pub family: String,
    pub fate: FamilyFate,
    /// The candidate its newest row makes, when it took one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// The catalog index of the row it took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<usize>,
    pub reason: String,
}

/// One row's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RowReport {
    pub index: usize,
    pub fate: RowFate,
    /// The candidates it made.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// The families whose key equals it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<String>,
    /// The fields at fault of an invalid row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    pub reason: String,
}

/// The decision: the candidates in the run's order, and every family and row with its fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Discovery {
    pub candidates: Vec<DiscoveredCandidate>,
    pub families: Vec<FamilyReport>,
    pub rows: Vec<RowReport>,
    pub family_counts: BTreeMap<FamilyFate, usize>,
    pub row_counts: BTreeMap<RowFate, usize>,
}

impl Discovery {
    pub fn candidate_ids(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.id.clone()).collect()
    }
}

/// How one family is named by what is recorded elsewhere: its name, the family part of the
/// ids discovered for it, and the reference system's coarse ids of its keys.
struct FamilyNames {
    id16: String,
    coarse: BTreeSet<String>,
}

impl FamilyNames {
    fn new(family: &Family) -> Self {
        let coarse = match &family.rendering {
            Rendering::Keys(keys) => keys
                .iter()
                .map(|key| identity(&key.coarse())[..16].to_string())
                .collect(),
            Rendering::Unrenderable { .. } => BTreeSet::new(),
        };
        FamilyNames {
            id16: family_id(&family.name),
            coarse,
        }
    }

    /// True when a record of `candidate` (whose family the record names as `family`, if it
    /// does) is one of this family's: the family part of a discovered id, or the reference
    /// system's coarse id, alone or followed by `-` and more (its branches are
    /// `klaude/auto-<coarse id>-<image hash>`).
    fn names(&self, name: &str, candidate: &str, family: Option<&str>) -> bool {
        family == Some(name)
            || family_id_of_candidate(candidate) == Some(self.id16.as_str())
            || self.is_coarse(candidate)
    }

    /// A candidate part that is one of the coarse ids, or starts with one and `-`.
    fn is_coarse(&self, candidate: &str) -> bool {
        let head = candidate
            .split_once('-')
            .map_or(candidate, |(head, _)| head);
        self.coarse.contains(head)
    }
}

/// Who holds what, read once from the snapshot.
struct Taken<'a> {
    snapshot: DiscoverySnapshot<'a>,
    run: &'a DiscoveryRun<'a>,
    /// Candidates of klaud's open pull requests: (number, candidate).
    pull_requests: Vec<(u64, String)>,
    /// Candidates whose branch exists, with the branch.
    branches: Vec<(String, String)>,
    /// The family the ledger records for a candidate.
    family_of_candidate: BTreeMap<&'a str, &'a str>,
}

impl<'a> Taken<'a> {
    fn new(snapshot: DiscoverySnapshot<'a>, run: &'a DiscoveryRun<'a>) -> Self {
        let prefixes: Vec<&str> = std::iter::once(run.policy.branch_prefix.as_str())
            .chain(run.legacy_branch_prefixes.iter().map(String::as_str))
            .collect();
        let candidate_of = |branch: &str| -> Option<String> {
            prefixes
                .iter()
                .find_map(|prefix| branch.strip_prefix(prefix))
                .filter(|id| !id.is_empty())
                .map(str::to_string)
        };
        let pull_requests = snapshot
            .github
            .open_pull_requests
            .items
            .iter()
            .filter(|pull| own_head(pull, &snapshot.github.repository))
            .filter_map(|pull| candidate_of(&pull.head_branch).map(|id| (pull.number, id)))
            .collect();
        let branches = snapshot
            .github
            .candidate_branches
            .items
            .iter()
            .filter_map(|branch| candidate_of(branch).map(|id| (id, branch.clone())))
            .collect();
        let mut family_of_candidate = BTreeMap::new();
        for session in &snapshot.ledger.sessions {
            family_of_candidate.insert(session.candidate.as_str(), session.family.as_str());
        }
        for claim in &snapshot.ledger.claims {
            family_of_candidate.insert(claim.candidate.as_str(), claim.family.as_str());
        }
        Taken {
            snapshot,
            run,
            pull_requests,
            branches,
            family_of_candidate,
        }
    }

    /// Why the family is left out, if it is, for the candidate `id` its newest row makes.
    fn obstacle(
        &self,
        family: &Family,
        names: &FamilyNames,
        id: &str,
    ) -> Option<(FamilyFate, String)> {
        let ledger = self.snapshot.ledger;
        let recorded = |candidate: &str| self.family_of_candidate.get(candidate).copied();
        if let Some(session) = ledger.sessions.iter().find(|session| {
            session.state != SessionState::Finished
                && names.names(&family.name, &session.candidate, Some(&session.family))
        }) {
            let state = if session.state == SessionState::Parked {
                "parked"
            } else {
                "live"
            };
            return Some((
                FamilyFate::Occupied,
                format!(
                    "a {state} session of candidate {} (run {}) holds the family",
                    session.candidate, session.parent_run
                ),
            ));
        }
        if let Some((number, candidate)) = self
            .pull_requests
            .iter()
            .find(|(_, candidate)| names.names(&family.name, candidate, recorded(candidate)))
        {
            return Some((
                FamilyFate::Occupied,
                format!("klaud pull request #{number} of candidate {candidate} is open"),
            ));
        }
        if let Some((_, branch)) = self
            .branches
            .iter()
            .find(|(candidate, _)| names.names(&family.name, candidate, recorded(candidate)))
        {
            return Some((
                FamilyFate::Occupied,
                format!("branch {branch} still exists"),
            ));
        }
        if let Some(claim) = ledger
            .claims
            .iter()
            .find(|claim| names.names(&family.name, &claim.candidate, Some(&claim.family)))
        {
            return Some((
                FamilyFate::Claimed,
                format!(
                    "the family is claimed for candidate {} by run {}",
                    claim.candidate, claim.parent_run
                ),
            ));
        }
        let cooldowns = running_cooldowns(ledger, self.run.policy, self.run.now);
        let longest = |scope: CooldownScope| {
            cooldowns
                .iter()
                .filter(|cooldown| cooldown.scope == scope)
                .filter(|cooldown| match scope {
                    CooldownScope::Candidate => cooldown.session.candidate == id,
                    CooldownScope::Family => names.names(
                        &family.name,
                        &cooldown.session.candidate,
                        Some(&cooldown.session.family),
                    ),
                })
                .max_by_key(|cooldown| cooldown.until)
        };
        if let Some(cooldown) = longest(CooldownScope::Candidate) {
            return Some((
                FamilyFate::CoolingDown,
                format!(
                    "`{}` of candidate {} earns a cooldown until {}",
                    cooldown.outcome,
                    id,
                    cooldown
                        .until
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            ));
        }
        if let Some(cooldown) = longest(CooldownScope::Family) {
            return Some((
                FamilyFate::Held,
                format!(
                    "`{}` of candidate {} holds the whole family until {}",
                    cooldown.outcome,
                    cooldown.session.candidate,
                    cooldown
                        .until
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            ));
        }
        None
    }
}

/// A pull request whose head is in this repository (a fork's is never klaud's).
fn own_head(pull: &OpenPullRequest, repository: &str) -> bool {
    pull.head_repository
        .as_deref()
        .is_some_and(|head| head.eq_ignore_ascii_case(repository))
}

/// The targets of the gate's answer that run a row's hardware: equal to it or starting with
/// `<hardware>-`. `None` when no gate is configured.
fn eligible_targets(capacity: &CapacityGate, hardware: &str) -> Option<Vec<String>> {
    match capacity {
        CapacityGate::Open => None,
        CapacityGate::Unavailable { .. } => Some(Vec::new()),
        CapacityGate::Eligible(targets) => Some(
            targets
                .iter()
                .filter(|target| {
                    target.as_str() == hardware
                        || target
                            .strip_prefix(hardware)
                            .is_some_and(|rest| rest.starts_with('-'))
                })
                .cloned()
                .collect(),
        ),
    }
}

/// Every hardware of the catalog's rows, sorted and once: the targets the capacity gate is
/// asked about.
pub fn hardware_targets(catalog: &Catalog) -> Vec<String> {
    let hardware: BTreeSet<&str> = catalog
        .rows
        .iter()
        .map(|row| row.key.hardware.as_str())
        .collect();
    hardware.into_iter().map(str::to_string).collect()
}

/// The decision.
pub fn discover(snapshot: DiscoverySnapshot<'_>, run: &DiscoveryRun<'_>) -> Discovery {
    let taken = Taken::new(snapshot, run);
    let mut families_of_key: BTreeMap<&ObservationKey, Vec<&Family>> = BTreeMap::new();
    for family in snapshot.families {
        if let Rendering::Keys(keys) = &family.rendering {
            for key in keys {
                families_of_key.entry(key).or_default().push(family);
            }
        }
    }
    for families in families_of_key.values_mut() {
        families.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let mut family_reports: BTreeMap<&str, FamilyReport> = BTreeMap::new();
    let mut row_reports: Vec<RowReport> = Vec::new();
    for invalid in &snapshot.catalog.invalid {
        row_reports.push(RowReport {
            index: invalid.index,
            fate: RowFate::Invalid,
            candidates: Vec::new(),
            families: Vec::new(),
            fields: invalid.fields.clone(),
            reason: format!(
                "missing or of the wrong type: {}",
                invalid.fields.join(", ")
            ),
        });
    }
    let mut rows: Vec<&CatalogRow> = snapshot.catalog.rows.iter().collect();
    rows.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| b.hash.cmp(&a.hash)));
    // The candidates in the order they were found, with their targets.
    let mut eligible: Vec<(DiscoveredCandidate, usize)> = Vec::new();
    for row in rows {
        let targets = eligible_targets(snapshot.capacity, &row.key.hardware);
        let fits: Vec<&Family> = families_of_key.get(&row.key).cloned().unwrap_or_default();
        let family_names: Vec<String> = fits.iter().map(|f| f.name.clone()).collect();
        let mut report = RowReport {
            index: row.index,
            fate: RowFate::NoFamily,
            candidates: Vec::new(),
            families: family_names,
            fields: Vec::new(),
            reason: "no family's observation key equals the row's".into(),
        };
        if targets.as_ref().is_some_and(Vec::is_empty) {
            report.fate = RowFate::HardwareIneligible;
            report.reason = match snapshot.capacity {
                CapacityGate::Unavailable { message } => {
                    format!("the capacity gate could not answer: {message}")
                }
                _ => format!("no eligible target runs hardware {}", row.key.hardware),
            };
            row_reports.push(report);
            continue;
        }
        let mut left_out: Option<FamilyFate> = None;
        let mut older = 0;
        for family in &fits {
            if family_reports.contains_key(family.name.as_str()) {
                older += 1;
                continue;
            }
            let id = candidate_id(&family.name, &row.key.image);
            let names = FamilyNames::new(family);
            let (fate, reason) = match taken.obstacle(family, &names, &id) {
                Some(obstacle) => obstacle,
                None => (FamilyFate::Candidate, format!("newest row {}", row.index)),
            };
            if fate == FamilyFate::Candidate {
                report.candidates.push(id.clone());
                eligible.push((
                    DiscoveredCandidate {
                        branch: format!("{}{id}", run.policy.branch_prefix),
                        id: id.clone(),
                        family: family.name.clone(),
                        base: run.base.to_string(),
                        targets: targets.clone(),
                        source: row.published.clone(),
                    },
                    row.index,
                ));
            } else if left_out.is_none() {
                left_out = Some(fate);
                report.reason = format!("{}: {reason}", family.name);
            }
            family_reports.insert(
                &family.name,
                FamilyReport {
                    family: family.name.clone(),
                    fate,
                    candidate: Some(id),
                    row: Some(row.index),
                    reason,
                },
            );
        }
        if !report.candidates.is_empty() {
            report.fate = RowFate::Candidate;
            report.reason = format!("candidate(s) {}", report.candidates.join(", "));
        } else if let Some(fate) = left_out {
            report.fate = RowFate::of_family(fate);
        } else if older > 0 {
            report.fate = RowFate::OlderThan;
            report.reason = "every family it fits took a newer row".into();
        }
        row_reports.push(report);
    }
    shuffle(&mut eligible, run.run_id);
    let mut candidates = Vec::new();
    for (position, (candidate, row)) in eligible.into_iter().enumerate() {
        if position < run.review_batch_size {
            candidates.push(candidate);
            continue;
        }
        let reason = format!(
            "cut by the review batch size {} (position {} of the run's order)",
            run.review_batch_size,
            position + 1
        );
        if let Some(report) = family_reports.get_mut(candidate.family.as_str()) {
            report.fate = FamilyFate::Cut;
            report.reason = reason.clone();
        }
        if let Some(report) = row_reports.iter_mut().find(|report| report.index == row) {
            report.candidates.retain(|id| *id != candidate.id);
            if report.candidates.is_empty() {
                report.fate = RowFate::Cut;
                report.reason = reason;
            }
        }
    }
    for family in snapshot.families {
        if family_reports.contains_key(family.name.as_str()) {
            continue;
        }
        let (fate, reason) = match &family.rendering {
            Rendering::Unrenderable { reason } => (FamilyFate::Unrenderable, reason.clone()),
            Rendering::Keys(_) => (
                FamilyFate::NoPublishedRow,
                "no catalog row has one of its observation keys".to_string(),
            ),
        };
        family_reports.insert(
            &family.name,
            FamilyReport {
                family: family.name.clone(),
                fate,
                candidate: None,
                row: None,
                reason,
            },
        );
    }
    row_reports.sort_by_key(|report| report.index);
    let families: Vec<FamilyReport> = family_reports.into_values().collect();
    let mut family_counts = BTreeMap::new();
    for report in &families {
        *family_counts.entry(report.fate).or_insert(0) += 1;
    }
    let mut row_counts = BTreeMap::new();
    for report in &row_reports {
        *row_counts.entry(report.fate).or_insert(0) += 1;
    }
    Discovery {
        candidates,
        families,
        rows: row_reports,
        family_counts,
        row_counts,
    }
}

/// Shuffles `items` with `seed` (Fisher–Yates over SplitMix64): the same seed, the same order.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for index in (1..items.len()).rev() {
        let other = (next() % (index as u64 + 1)) as usize;
        items.swap(index, other);
    }
}

#[cfg(test)]
mod tests;
