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

pub mod batch;
pub mod catalog;
pub mod identity;
pub mod issues;
pub mod observation;
pub mod pattern;
pub mod taken;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use self::batch::{CutItem, count, cut_to_batch, shuffle};
use self::catalog::{Catalog, CatalogRow};
use self::identity::{candidate_id, identity};
use self::observation::{ObservationKey, PublishedSpellings, key_of_entry};
use self::taken::{FamilyNames, Taken};
use super::ledger::Ledger;
use super::policy::Policy;
use super::select::GitHubFacts;
use super::select::capacity::CapacityGate;

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
    /// Where it comes from: a catalog row, or an issue.
    #[serde(flatten)]
    pub origin: CandidateOrigin,
    pub branch: String,
}

/// Where a discovered candidate comes from, as its record carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CandidateOrigin {
    /// A row of the public catalog (contract §11).
    Catalog {
        /// The eligible targets the row's hardware matched, when a capacity gate is configured.
        #[serde(skip_serializing_if = "Option::is_none")]
        targets: Option<Vec<String>>,
        /// The catalog row exactly as published.
        source: Map<String, Value>,
    },
    /// A labelled issue (contract §13).
    Issue {
        issue: issues::IssueRecord,
        task: issues::Task,
    },
}

impl DiscoveredCandidate {
    /// The catalog row it comes from, if it does.
    pub fn source(&self) -> Option<&Map<String, Value>> {
        match &self.origin {
            CandidateOrigin::Catalog { source, .. } => Some(source),
            CandidateOrigin::Issue { .. } => None,
        }
    }

    /// The eligible targets of its row, when a capacity gate is configured.
    pub fn targets(&self) -> Option<&[String]> {
        match &self.origin {
            CandidateOrigin::Catalog { targets, .. } => targets.as_deref(),
            CandidateOrigin::Issue { .. } => None,
        }
    }
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

/// How the family is named by what is recorded elsewhere: its name, the family part of its
/// discovered ids and the reference system's coarse ids of its keys.
fn names_of(family: &Family) -> FamilyNames {
    let coarse = match &family.rendering {
        Rendering::Keys(keys) => keys
            .iter()
            .map(|key| identity(&key.coarse())[..16].to_string())
            .collect(),
        Rendering::Unrenderable { .. } => BTreeSet::new(),
    };
    FamilyNames::new(&family.name, coarse, BTreeSet::new())
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

/// The families of each observation key, ascending by name.
fn families_of_key(families: &[Family]) -> BTreeMap<&ObservationKey, Vec<&Family>> {
    let mut of_key: BTreeMap<&ObservationKey, Vec<&Family>> = BTreeMap::new();
    for family in families {
        if let Rendering::Keys(keys) = &family.rendering {
            for key in keys {
                of_key.entry(key).or_default().push(family);
            }
        }
    }
    for families in of_key.values_mut() {
        families.sort_by(|a, b| a.name.cmp(&b.name));
    }
    of_key
}

/// The catalog's rows newest first (ties: the larger hash of the row first).
fn newest_first(catalog: &Catalog) -> Vec<&CatalogRow> {
    let mut rows: Vec<&CatalogRow> = catalog.rows.iter().collect();
    rows.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| b.hash.cmp(&a.hash)));
    rows
}

/// The reports of the catalog's invalid rows.
fn invalid_rows(catalog: &Catalog) -> impl Iterator<Item = RowReport> + '_ {
    catalog.invalid.iter().map(|invalid| RowReport {
        index: invalid.index,
        fate: RowFate::Invalid,
        candidates: Vec::new(),
        families: Vec::new(),
        fields: invalid.fields.clone(),
        reason: format!(
            "missing or of the wrong type: {}",
            invalid.fields.join(", ")
        ),
    })
}

/// What the rows decided so far: each family's fate once it took a row, and the candidates in
/// the order they were found with the row that made each.
#[derive(Default)]
struct Found<'f> {
    families: BTreeMap<&'f str, FamilyReport>,
    eligible: Vec<(DiscoveredCandidate, usize)>,
}

/// A family that fits a row and took no newer one takes it: a candidate unless something holds
/// the family.
fn family_takes_row(
    family: &Family,
    row: &CatalogRow,
    targets: &Option<Vec<String>>,
    taken: &Taken<'_>,
    base: &str,
) -> (FamilyReport, Option<DiscoveredCandidate>) {
    let id = candidate_id(&family.name, &row.key.image);
    let obstacle = taken.obstacle(&names_of(family), &id);
    let report = |fate: FamilyFate, reason: String| FamilyReport {
        family: family.name.clone(),
        fate,
        candidate: Some(id.clone()),
        row: Some(row.index),
        reason,
    };
    match obstacle {
        Some(obstacle) => (report(obstacle.fate, obstacle.reason), None),
        None => (
            report(FamilyFate::Candidate, format!("newest row {}", row.index)),
            Some(DiscoveredCandidate {
                branch: format!("{}{id}", taken.policy().branch_prefix),
                id: id.clone(),
                family: family.name.clone(),
                base: base.to_string(),
                origin: CandidateOrigin::Catalog {
                    targets: targets.clone(),
                    source: row.published.clone(),
                },
            }),
        ),
    }
}

/// A row's fate: ineligible hardware, else what the families it fits made of it (candidates,
/// the first family's reason it was left out, every family older, or no family at all).
fn row_fate<'f>(
    row: &CatalogRow,
    fits: &[&'f Family],
    snapshot: &DiscoverySnapshot<'_>,
    taken: &Taken<'_>,
    base: &str,
    found: &mut Found<'f>,
) -> RowReport {
    let mut report = RowReport {
        index: row.index,
        fate: RowFate::NoFamily,
        candidates: Vec::new(),
        families: fits.iter().map(|family| family.name.clone()).collect(),
        fields: Vec::new(),
        reason: "no family's observation key equals the row's".into(),
    };
    let targets = eligible_targets(snapshot.capacity, &row.key.hardware);
    if targets.as_ref().is_some_and(Vec::is_empty) {
        report.fate = RowFate::HardwareIneligible;
        report.reason = match snapshot.capacity {
            CapacityGate::Unavailable { message } => {
                format!("the capacity gate could not answer: {message}")
            }
            _ => format!("no eligible target runs hardware {}", row.key.hardware),
        };
        return report;
    }
    let mut left_out: Option<(FamilyFate, String)> = None;
    let mut older = 0;
    for family in fits {
        if found.families.contains_key(family.name.as_str()) {
            older += 1;
            continue;
        }
        let (family_report, candidate) = family_takes_row(family, row, &targets, taken, base);
        match candidate {
            Some(candidate) => {
                report.candidates.push(candidate.id.clone());
                found.eligible.push((candidate, row.index));
            }
            None if left_out.is_none() => {
                left_out = Some((
                    family_report.fate,
                    format!("{}: {}", family.name, family_report.reason),
                ));
            }
            None => {}
        }
        found.families.insert(&family.name, family_report);
    }
    if !report.candidates.is_empty() {
        report.fate = RowFate::Candidate;
        report.reason = format!("candidate(s) {}", report.candidates.join(", "));
    } else if let Some((fate, reason)) = left_out {
        report.fate = RowFate::of_family(fate);
        report.reason = reason;
    } else if older > 0 {
        report.fate = RowFate::OlderThan;
        report.reason = "every family it fits took a newer row".into();
    }
    report
}

/// The candidates in the run's order cut to the review batch; the families and rows of those
/// cut say so (a row only once none of its candidates is left).
fn cut_batch(
    found: &mut Found<'_>,
    rows: &mut [RowReport],
    run: &DiscoveryRun<'_>,
) -> Vec<DiscoveredCandidate> {
    let mut ordered = std::mem::take(&mut found.eligible);
    shuffle(&mut ordered, run.run_id);
    let (kept, cut) = cut_to_batch(ordered, run.review_batch_size);
    for CutItem {
        item: (candidate, row),
        reason,
    } in cut
    {
        if let Some(report) = found.families.get_mut(candidate.family.as_str()) {
            report.fate = FamilyFate::Cut;
            report.reason = reason.clone();
        }
        if let Some(report) = rows.iter_mut().find(|report| report.index == row) {
            report.candidates.retain(|id| *id != candidate.id);
            if report.candidates.is_empty() {
                report.fate = RowFate::Cut;
                report.reason = reason;
            }
        }
    }
    kept.into_iter().map(|(candidate, _)| candidate).collect()
}

/// The report of a family that took no row: unrenderable, or without a published row.
fn family_without_row(family: &Family) -> FamilyReport {
    let (fate, reason) = match &family.rendering {
        Rendering::Unrenderable { reason } => (FamilyFate::Unrenderable, reason.clone()),
        Rendering::Keys(_) => (
            FamilyFate::NoPublishedRow,
            "no catalog row has one of its observation keys".to_string(),
        ),
    };
    FamilyReport {
        family: family.name.clone(),
        fate,
        candidate: None,
        row: None,
        reason,
    }
}

/// The decision, in steps: the families of each key; each row, newest first, and its fate; the
/// batch cut; the reports of every family and row, with their counts.
pub fn discover(snapshot: DiscoverySnapshot<'_>, run: &DiscoveryRun<'_>) -> Discovery {
    let taken = Taken::new(
        snapshot.ledger,
        snapshot.github,
        run.policy,
        run.legacy_branch_prefixes,
        run.now,
    );
    let of_key = families_of_key(snapshot.families);
    let mut found = Found::default();
    let mut rows: Vec<RowReport> = invalid_rows(snapshot.catalog).collect();
    for row in newest_first(snapshot.catalog) {
        let fits = of_key.get(&row.key).map(Vec::as_slice).unwrap_or_default();
        rows.push(row_fate(row, fits, &snapshot, &taken, run.base, &mut found));
    }
    let candidates = cut_batch(&mut found, &mut rows, run);
    for family in snapshot.families {
        if !found.families.contains_key(family.name.as_str()) {
            found
                .families
                .insert(&family.name, family_without_row(family));
        }
    }
    rows.sort_by_key(|report| report.index);
    let families: Vec<FamilyReport> = found.families.into_values().collect();
    Discovery {
        candidates,
        family_counts: count(families.iter().map(|report| report.fate)),
        row_counts: count(rows.iter().map(|report| report.fate)),
        families,
        rows,
    }
}

#[cfg(test)]
mod tests;
