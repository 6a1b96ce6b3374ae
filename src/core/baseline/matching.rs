//! Baseline matching, InferenceX profile (contract §6).
//!
//! A published row and a producer entry are projected onto the same [`WorkloadIdentity`]: model
//! prefix, hardware, framework, precision, spec-decoding, disaggregation, ISL/OSL, concurrency and
//! per role tp/ep/dp-attention/workers. The image is compared next to it (registry `/` and enroot
//! `#` spellings are one image) whenever the row was published with one. Public GPU counts are
//! never read: they are not physical (a single-node `num_prefill_gpu` is tp×ep).
//!
//! The publisher's ETL renames some of the generator's values, so an entry's model prefix,
//! hardware, framework, precision and spec-decoding are first spelled as published
//! ([`PublishedSpellings`], config `discovery.published-as`: a `sglang-disagg` entry is a
//! `mori-sglang` row), and an entry without its own `disagg` is disaggregated when its published
//! framework has one of the configured prefixes (`mori-`).
//!
//! How the publisher encodes an entry:
//! - single-node: both role columns carry the engine's tp/ep/dp-attention, workers 0/0;
//! - multi-node disaggregated: each role as the producer wrote it;
//! - multi-node aggregate (not disaggregated, or 0 decode workers): the engine is mirrored into
//!   both role columns, so decode equals prefill, workers included;
//! - a one-worker aggregate may also appear as a single-node row (workers 0/0) — accepted only
//!   for one-worker aggregates.
//!
//! A row must match exactly one entry; a row matching none belongs to a sibling workload and is
//! ignored; a candidate with no matched row, an ambiguous row, or a row that matches an entry in
//! everything but its image is deferred.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Deferral, DeferralCode};
use crate::core::discovery::observation::PublishedSpellings;

/// One role's parallelism as the publisher's columns show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoleShape {
    pub tensor_parallel: u64,
    pub expert_parallel: u64,
    pub data_parallel_attention: bool,
    pub workers: u64,
}

/// What a published row and a producer entry are compared on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadIdentity {
    pub model_prefix: String,
    pub hardware: String,
    pub framework: String,
    pub precision: String,
    pub spec_decoding: String,
    pub disaggregated: bool,
    /// `None` for workloads without fixed sequence lengths (agentic traces).
    pub input_length: Option<u64>,
    pub output_length: Option<u64>,
    pub concurrency: u64,
    pub prefill: RoleShape,
    pub decode: RoleShape,
}

/// A published row, projected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedPoint {
    pub identity: WorkloadIdentity,
    /// The normalised image, when the row was published with one.
    pub image: Option<String>,
}

/// A producer entry, projected: one identity per concurrency value and encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectedEntry {
    pub identities: Vec<WorkloadIdentity>,
    pub image: Option<String>,
}

/// A field that is missing or has the wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionError {
    pub field: String,
}

fn missing(field: impl Into<String>) -> ProjectionError {
    ProjectionError {
        field: field.into(),
    }
}

/// The hardware a runner label stands for: `cluster:b200-dgxc` and `b200-nscale` are `b200`.
pub fn hardware_of_runner(runner: &str) -> String {
    let label = runner.strip_prefix("cluster:").unwrap_or(runner);
    label
        .split('-')
        .next()
        .unwrap_or(label)
        .to_ascii_lowercase()
}

/// One spelling per image: enroot's `nvcr.io#nvidia/x` is the registry's `nvcr.io/nvidia/x`.
pub fn normalize_image(image: &str) -> String {
    image.trim().replacen('#', "/", 1)
}

fn text(fields: &Map<String, Value>, name: &str) -> Result<String, ProjectionError> {
    match fields.get(name) {
        Some(Value::String(text)) => Ok(text.trim().to_string()),
        _ => Err(missing(name)),
    }
}

fn whole_number(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|number| number.fract() == 0.0 && *number >= 0.0)
            .map(|number| number as u64)
    })
}

fn number(fields: &Map<String, Value>, name: &str) -> Result<u64, ProjectionError> {
    fields
        .get(name)
        .and_then(whole_number)
        .ok_or_else(|| missing(name))
}

fn optional_number(
    fields: &Map<String, Value>,
    name: &str,
) -> Result<Option<u64>, ProjectionError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => whole_number(value).map(Some).ok_or_else(|| missing(name)),
    }
}

fn flag(fields: &Map<String, Value>, name: &str) -> Result<bool, ProjectionError> {
    match fields.get(name) {
        Some(Value::Bool(value)) => Ok(*value),
        Some(Value::String(text)) if text == "true" => Ok(true),
        Some(Value::String(text)) if text == "false" => Ok(false),
        _ => Err(missing(name)),
    }
}

fn flag_or(
    fields: &Map<String, Value>,
    name: &str,
    default: bool,
) -> Result<bool, ProjectionError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => flag(fields, name),
    }
}

fn number_or(
    fields: &Map<String, Value>,
    name: &str,
    default: u64,
) -> Result<u64, ProjectionError> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => number(fields, name),
    }
}

/// Projects a published row (`/api/v1/benchmarks` shape).
pub fn project_published_point(
    row: &Map<String, Value>,
) -> Result<PublishedPoint, ProjectionError> {
    let role = |prefix: &str| -> Result<RoleShape, ProjectionError> {
        Ok(RoleShape {
            tensor_parallel: number(row, &format!("{prefix}_tp"))?,
            expert_parallel: number(row, &format!("{prefix}_ep"))?,
            data_parallel_attention: flag(row, &format!("{prefix}_dp_attention"))?,
            workers: number(row, &format!("{prefix}_num_workers"))?,
        })
    };
    let identity = WorkloadIdentity {
        model_prefix: text(row, "model")?,
        hardware: text(row, "hardware")?.to_ascii_lowercase(),
        framework: text(row, "framework")?,
        precision: text(row, "precision")?,
        spec_decoding: text(row, "spec_method")?,
        disaggregated: flag(row, "disagg")?,
        input_length: optional_number(row, "isl")?,
        output_length: optional_number(row, "osl")?,
        concurrency: number(row, "conc")?,
        prefill: role("prefill")?,
        decode: role("decode")?,
    };
    let image = match row.get("image") {
        Some(Value::String(image)) => Some(normalize_image(image)),
        None | Some(Value::Null) => None,
        Some(_) => return Err(missing("image")),
    };
    Ok(PublishedPoint { identity, image })
}

/// Projects a producer matrix entry (single-node or multi-node), its values spelled as published.
pub fn project_producer_entry(
    entry: &Value,
    spellings: &PublishedSpellings,
) -> Result<ProjectedEntry, ProjectionError> {
    let Value::Object(fields) = entry else {
        return Err(missing("entry"));
    };
    let concurrencies = entry_concurrencies(fields)?;
    let spec_decoding = match fields.get("spec-decoding") {
        None | Some(Value::Null) => String::new(),
        Some(_) => text(fields, "spec-decoding")?,
    };
    // A spec method no spelling names is published as `none`, as it always was.
    let spec_decoding = Some(spellings.spell("spec_method", &spec_decoding))
        .filter(|spelled| !spelled.is_empty())
        .unwrap_or_else(|| "none".to_string());
    let framework = spellings.spell("framework", &text(fields, "framework")?);
    let declared_disaggregated = match fields.get("disagg") {
        None | Some(Value::Null) => spellings
            .disagg_framework_prefixes
            .iter()
            .any(|prefix| framework.starts_with(prefix.as_str())),
        Some(_) => flag(fields, "disagg")?,
    };
    let base = |disaggregated: bool, prefill: RoleShape, decode: RoleShape| {
        Ok::<_, ProjectionError>(WorkloadIdentity {
            model_prefix: spellings.spell("model", &text(fields, "model-prefix")?),
            hardware: spellings.spell("hardware", &hardware_of_runner(&text(fields, "runner")?)),
            framework: framework.clone(),
            precision: spellings.spell("precision", &text(fields, "precision")?),
            spec_decoding: spec_decoding.clone(),
            disaggregated,
            input_length: optional_number(fields, "isl")?,
            output_length: optional_number(fields, "osl")?,
            concurrency: 0,
            prefill,
            decode,
        })
    };
    let encodings: Vec<WorkloadIdentity> = entry_shapes(fields, declared_disaggregated)?
        .into_iter()
        .map(|(disaggregated, prefill, decode)| base(disaggregated, prefill, decode))
        .collect::<Result<_, _>>()?;
    let identities = concurrencies
        .iter()
        .flat_map(|concurrency| {
            encodings.iter().map(move |encoding| WorkloadIdentity {
                concurrency: *concurrency,
                ..encoding.clone()
            })
        })
        .collect();
    let image = match fields.get("image") {
        Some(Value::String(image)) => Some(normalize_image(image)),
        _ => None,
    };
    Ok(ProjectedEntry { identities, image })
}

/// An entry's concurrencies: `conc`, one number or a list of them.
fn entry_concurrencies(fields: &Map<String, Value>) -> Result<Vec<u64>, ProjectionError> {
    match fields.get("conc") {
        Some(Value::Array(values)) => values
            .iter()
            .map(|value| whole_number(value).ok_or_else(|| missing("conc")))
            .collect(),
        Some(value) => Ok(vec![whole_number(value).ok_or_else(|| missing("conc"))?]),
        None => Err(missing("conc")),
    }
}

/// The shapes an entry may be published as, each (disaggregated, prefill, decode): a single-node
/// entry's one engine; a multi-node entry disaggregated, or aggregated (and, with one prefill
/// worker, also as the single-node shape it is published as).
fn entry_shapes(
    fields: &Map<String, Value>,
    declared_disaggregated: bool,
) -> Result<Vec<(bool, RoleShape, RoleShape)>, ProjectionError> {
    if fields.contains_key("tp") {
        let engine = RoleShape {
            tensor_parallel: number(fields, "tp")?,
            expert_parallel: number_or(fields, "ep", 1)?,
            data_parallel_attention: flag_or(fields, "dp-attn", false)?,
            workers: 0,
        };
        return Ok(vec![(declared_disaggregated, engine, engine)]);
    }
    let prefill = role_of_entry(fields, "prefill")?;
    let decode = role_of_entry(fields, "decode")?;
    if declared_disaggregated && decode.workers != 0 {
        return Ok(vec![(true, prefill, decode)]);
    }
    let mut shapes = vec![(false, prefill, prefill)];
    if prefill.workers == 1 {
        let single_node = RoleShape {
            workers: 0,
            ..prefill
        };
        shapes.push((false, single_node, single_node));
    }
    Ok(shapes)
}

fn role_of_entry(fields: &Map<String, Value>, role: &str) -> Result<RoleShape, ProjectionError> {
    let Some(Value::Object(shape)) = fields.get(role) else {
        return Err(missing(format!("tp or {role}")));
    };
    let inner = |field: &str| format!("{role}.{field}");
    Ok(RoleShape {
        tensor_parallel: number(shape, "tp").map_err(|_| missing(inner("tp")))?,
        expert_parallel: number_or(shape, "ep", 1).map_err(|_| missing(inner("ep")))?,
        data_parallel_attention: flag_or(shape, "dp-attn", false)
            .map_err(|_| missing(inner("dp-attn")))?,
        workers: number(shape, "num-worker").map_err(|_| missing(inner("num-worker")))?,
    })
}

/// How one published row fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointVerdict {
    /// Exactly one entry has the row's identity and image.
    Matched(usize),
    /// No entry has the row's identity: a sibling workload, ignored.
    Unmatched,
    /// Several entries have the row's identity and image.
    Ambiguous(Vec<usize>),
    /// Entries have the row's identity, none its image.
    ImageMismatch(Vec<usize>),
}

/// Producer entries indexed by identity. Entry numbers are the caller's (e.g. positions in the
/// candidate's share of the producer output).
#[derive(Debug, Default)]
pub struct EntryIndex {
    by_identity: HashMap<WorkloadIdentity, Vec<usize>>,
    images: HashMap<usize, Option<String>>,
}

/// A producer entry that could not be projected: the output is not what the matching expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableEntry {
    pub entry: usize,
    pub field: String,
}

impl EntryIndex {
    /// Indexes `(entry number, entry)` pairs, each spelled as published.
    pub fn build<'a>(
        entries: impl IntoIterator<Item = (usize, &'a Value)>,
        spellings: &PublishedSpellings,
    ) -> Result<Self, UnreadableEntry> {
        let mut index = EntryIndex::default();
        for (number, entry) in entries {
            let projected =
                project_producer_entry(entry, spellings).map_err(|error| UnreadableEntry {
                    entry: number,
                    field: error.field,
                })?;
            for identity in projected.identities {
                let numbers = index.by_identity.entry(identity).or_default();
                if !numbers.contains(&number) {
                    numbers.push(number);
                }
            }
            index.images.insert(number, projected.image);
        }
        Ok(index)
    }

    /// Entries with the point's workload identity, image not considered.
    pub fn workload_matches(&self, point: &PublishedPoint) -> Vec<usize> {
        self.by_identity
            .get(&point.identity)
            .cloned()
            .unwrap_or_default()
    }

    pub fn match_point(&self, point: &PublishedPoint) -> PointVerdict {
        let workload = self.workload_matches(point);
        if workload.is_empty() {
            return PointVerdict::Unmatched;
        }
        let same_image: Vec<usize> = match &point.image {
            None => workload.clone(),
            Some(image) => workload
                .iter()
                .copied()
                .filter(|number| self.images.get(number).and_then(Option::as_ref) == Some(image))
                .collect(),
        };
        match same_image.as_slice() {
            [] => PointVerdict::ImageMismatch(workload),
            [only] => PointVerdict::Matched(*only),
            _ => PointVerdict::Ambiguous(same_image),
        }
    }
}

/// A published row and the entry it matched, as `baselines.json` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MatchedPoint {
    pub row: usize,
    pub entry: usize,
}

/// The verdict on one candidate's baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineVerification {
    /// `None` when verified.
    pub deferral: Option<Deferral>,
    pub matched: Vec<MatchedPoint>,
    /// Per published row, in order (empty when a row could not be read).
    pub verdicts: Vec<PointVerdict>,
}

/// Matches every published row against the producer entries `(entry number, entry)`, the
/// entries spelled as published.
pub fn verify_baseline<'a>(
    points: &[Map<String, Value>],
    entries: impl IntoIterator<Item = (usize, &'a Value)>,
    spellings: &PublishedSpellings,
) -> BaselineVerification {
    let deferred = |deferral: Deferral| BaselineVerification {
        deferral: Some(deferral),
        matched: Vec::new(),
        verdicts: Vec::new(),
    };
    let index = match EntryIndex::build(entries, spellings) {
        Ok(index) => index,
        Err(unreadable) => {
            return deferred(Deferral::with_detail(
                DeferralCode::ProducerOutputInvalid,
                &format!(
                    "producer entry {} lacks a readable {}",
                    unreadable.entry, unreadable.field
                ),
            ));
        }
    };
    let mut projected = Vec::with_capacity(points.len());
    for (row, point) in points.iter().enumerate() {
        match project_published_point(point) {
            Ok(point) => projected.push(point),
            Err(error) => {
                return deferred(Deferral::with_detail(
                    DeferralCode::InvalidBaselinePoint,
                    &format!("published point {row} lacks a readable {}", error.field),
                ));
            }
        }
    }
    let verdicts: Vec<PointVerdict> = projected
        .iter()
        .map(|point| index.match_point(point))
        .collect();
    let matched: Vec<MatchedPoint> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(row, verdict)| match verdict {
            PointVerdict::Matched(entry) => Some(MatchedPoint { row, entry: *entry }),
            _ => None,
        })
        .collect();
    let any = |wanted: fn(&PointVerdict) -> bool| verdicts.iter().any(wanted);
    let deferral = if any(|verdict| matches!(verdict, PointVerdict::Ambiguous(_))) {
        Some(DeferralCode::AmbiguousBaseline)
    } else if any(|verdict| matches!(verdict, PointVerdict::ImageMismatch(_))) {
        Some(DeferralCode::ImageMismatch)
    } else if matched.is_empty() {
        Some(DeferralCode::UnmatchedBaseline)
    } else {
        None
    };
    BaselineVerification {
        deferral: deferral.map(Deferral::fixed),
        matched,
        verdicts,
    }
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
