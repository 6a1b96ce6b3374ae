//! The observation key (contract §11): the ten fields by which a generator entry and a published
//! catalog row are the same observation — model, hardware, framework, precision, spec method,
//! disaggregation, benchmark type, input and output lengths, and the normalised image — and the
//! published spellings that turn an entry's values into the row's.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

/// The benchmark type of an agentic entry (`scenario-type: agentic-coding`).
pub const AGENTIC_TRACES: &str = "agentic_traces";
/// The benchmark type of every other entry.
pub const SINGLE_TURN: &str = "single_turn";

/// The ten fields compared exactly (JSON `false` is not `0`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObservationKey {
    pub model: String,
    pub hardware: String,
    pub framework: String,
    pub precision: String,
    pub spec_method: String,
    pub disagg: bool,
    pub benchmark_type: String,
    /// `None` for agentic rows.
    pub isl: Option<u64>,
    pub osl: Option<u64>,
    /// The normalised image ([`normalise_image`]).
    pub image: String,
}

impl ObservationKey {
    /// The reference system's coarse family fields, whose identity was its candidate id.
    pub fn coarse(&self) -> Value {
        serde_json::json!({
            "model": self.model,
            "hardware": self.hardware,
            "framework": self.framework,
            "precision": self.precision,
            "spec_method": self.spec_method,
            "disagg": self.disagg,
        })
    }
}

/// An image whose part before its first `#` contains a `.` or a `:` and has something after the
/// `#` has that `#` replaced by `/` (enroot's `nvcr.io#nvidia/x:1` is `nvcr.io/nvidia/x:1`);
/// any other image is left as it is (`lmsysorg#sglang:1`).
pub fn normalise_image(image: &str) -> String {
    match image.split_once('#') {
        Some((registry, rest))
            if !rest.is_empty() && (registry.contains('.') || registry.contains(':')) =>
        {
            format!("{registry}/{rest}")
        }
        _ => image.to_string(),
    }
}

/// The hardware of a runner label: without a `cluster:` prefix, up to the first `-`
/// (`cluster:b200-dgxc` → `b200`, `mi355x-disagg` → `mi355x`).
pub fn hardware_of_runner(runner: &str) -> &str {
    let label = runner.strip_prefix("cluster:").unwrap_or(runner);
    label.split('-').next().unwrap_or(label)
}

/// How the publisher spells a generator's values (config `discovery.published-as`): per field, a
/// generator value and its published value; and the frameworks whose published name marks an
/// entry without its own `disagg` as disaggregated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PublishedSpellings {
    /// Field (`model`, `framework`, `precision`, `spec_method`, `hardware`) → value → published
    /// value. A null `spec_method` is looked up as the empty string.
    pub fields: BTreeMap<String, BTreeMap<String, String>>,
    /// A framework published with one of these prefixes is disaggregated when the entry does
    /// not say.
    pub disagg_framework_prefixes: Vec<String>,
}

impl PublishedSpellings {
    /// `value` of `field` as the publisher spells it (itself when no spelling is configured).
    pub fn spell(&self, field: &str, value: &str) -> String {
        self.fields
            .get(field)
            .and_then(|spellings| spellings.get(value))
            .cloned()
            .unwrap_or_else(|| value.to_string())
    }
}

/// Why an entry gives no observation key: the fields missing or of the wrong type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableEntry {
    pub fields: Vec<String>,
}

/// The observation key of one generator entry, spelled as published.
pub fn key_of_entry(
    entry: &Map<String, Value>,
    spellings: &PublishedSpellings,
) -> Result<ObservationKey, UnreadableEntry> {
    let mut missing = Vec::new();
    let mut text = |field: &str| match entry.get(field) {
        Some(Value::String(value)) => value.clone(),
        _ => {
            missing.push(field.to_string());
            String::new()
        }
    };
    let model = text("model-prefix");
    let runner = text("runner");
    let framework = text("framework");
    let precision = text("precision");
    let image = text("image");
    let spec_method = match entry.get("spec-decoding") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(value)) => value.clone(),
        Some(_) => {
            missing.push("spec-decoding".to_string());
            String::new()
        }
    };
    let agentic = entry.get("scenario-type").and_then(Value::as_str) == Some("agentic-coding");
    let mut length = |field: &str| -> Option<u64> {
        if agentic {
            return None;
        }
        let value = entry.get(field).and_then(Value::as_u64);
        if value.is_none() {
            missing.push(field.to_string());
        }
        value
    };
    let isl = length("isl");
    let osl = length("osl");
    let own_disagg = match entry.get("disagg") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(value)) => Some(*value),
        Some(_) => {
            missing.push("disagg".to_string());
            None
        }
    };
    if !missing.is_empty() {
        return Err(UnreadableEntry { fields: missing });
    }
    let framework = spellings.spell("framework", &framework);
    let disagg = own_disagg.unwrap_or_else(|| {
        spellings
            .disagg_framework_prefixes
            .iter()
            .any(|prefix| framework.starts_with(prefix.as_str()))
    });
    Ok(ObservationKey {
        model: spellings.spell("model", &model),
        hardware: spellings.spell("hardware", hardware_of_runner(&runner)),
        framework,
        precision: spellings.spell("precision", &precision),
        spec_method: spellings.spell("spec_method", &spec_method),
        disagg,
        benchmark_type: if agentic { AGENTIC_TRACES } else { SINGLE_TURN }.to_string(),
        isl,
        osl,
        image: normalise_image(&image),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn inferencex_spellings() -> PublishedSpellings {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(from, to)| (from.to_string(), to.to_string()))
                .collect()
        };
        PublishedSpellings {
            fields: BTreeMap::from([
                (
                    "framework".to_string(),
                    map(&[("sglang-disagg", "mori-sglang"), ("trtllm", "trt")]),
                ),
                ("precision".to_string(), map(&[("nvfp4", "fp4")])),
                ("spec_method".to_string(), map(&[("", "none")])),
            ]),
            disagg_framework_prefixes: vec!["mori-".to_string()],
        }
    }

    fn entry(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(fields) => fields,
            _ => unreachable!(),
        }
    }

    #[test]
    fn images_are_normalised_only_when_the_part_before_the_hash_is_a_registry() {
        assert_eq!(normalise_image("nvcr.io#nvidia/x:1"), "nvcr.io/nvidia/x:1");
        assert_eq!(normalise_image("localhost:5000#x:1"), "localhost:5000/x:1");
        assert_eq!(normalise_image("lmsysorg#sglang:1"), "lmsysorg#sglang:1");
        assert_eq!(normalise_image("nvcr.io#"), "nvcr.io#");
        assert_eq!(
            normalise_image("vllm/vllm-openai:v1"),
            "vllm/vllm-openai:v1"
        );
        assert_eq!(normalise_image("a.b#c#d"), "a.b/c#d");
    }

    #[test]
    fn the_hardware_is_the_runner_label_up_to_its_first_dash() {
        assert_eq!(hardware_of_runner("cluster:b200-dgxc"), "b200");
        assert_eq!(hardware_of_runner("mi355x-disagg"), "mi355x");
        assert_eq!(hardware_of_runner("gb200"), "gb200");
    }

    #[test]
    fn an_entry_is_spelled_as_published() {
        let key = key_of_entry(
            &entry(json!({
                "model-prefix": "dsr1", "runner": "mi355x-disagg", "framework": "sglang-disagg",
                "precision": "nvfp4", "spec-decoding": null, "isl": 1024, "osl": 8192,
                "image": "lmsysorg#sglang:1"
            })),
            &inferencex_spellings(),
        )
        .unwrap();
        assert_eq!(key.framework, "mori-sglang");
        assert!(key.disagg, "a mori- framework without its own disagg");
        assert_eq!(key.precision, "fp4");
        assert_eq!(key.spec_method, "none");
        assert_eq!(key.hardware, "mi355x");
        assert_eq!(key.benchmark_type, SINGLE_TURN);
        assert_eq!((key.isl, key.osl), (Some(1024), Some(8192)));
        assert_eq!(key.image, "lmsysorg#sglang:1");
    }

    #[test]
    fn an_entrys_own_disagg_wins_and_agentic_entries_have_no_lengths() {
        let key = key_of_entry(
            &entry(json!({
                "model-prefix": "dsv4", "runner": "h200", "framework": "sglang-disagg",
                "precision": "fp8", "spec-decoding": "mtp", "disagg": false,
                "scenario-type": "agentic-coding", "image": "nvcr.io#nvidia/x:1"
            })),
            &inferencex_spellings(),
        )
        .unwrap();
        assert!(!key.disagg);
        assert_eq!(key.benchmark_type, AGENTIC_TRACES);
        assert_eq!((key.isl, key.osl), (None, None));
        assert_eq!(key.image, "nvcr.io/nvidia/x:1");
        assert_eq!(key.spec_method, "mtp");
    }

    #[test]
    fn an_entry_missing_fields_names_them() {
        let error = key_of_entry(
            &entry(
                json!({"model-prefix": 3, "runner": "h200", "framework": "x",
                          "precision": "fp8", "image": "i", "isl": "1k", "disagg": 0}),
            ),
            &PublishedSpellings::default(),
        )
        .unwrap_err();
        assert_eq!(error.fields, ["model-prefix", "isl", "osl", "disagg"]);
    }
}
