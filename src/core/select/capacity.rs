//! The optional capacity gate (config `capacity.command`): which candidate `targets` can run
//! now. The shell runs the command once per pass with [`targets_to_ask`] as a JSON array on
//! stdin; [`read_capacity_answer`] reads what it printed. A command that fails or prints
//! anything but a JSON array of strings makes the gate unavailable, which defers every
//! candidate it would judge: a failed gate never admits everything.

use std::collections::BTreeSet;

use super::Decision;
use super::obstacles::Obstacle;
use crate::core::candidate::Candidate;

/// What the capacity gate said for this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapacityGate {
    /// No gate is configured, or no candidate names targets: nothing is held back.
    Open,
    /// The targets that can run now.
    Eligible(BTreeSet<String>),
    /// The gate could not answer; `message` names only the kind of failure.
    Unavailable { message: String },
}

/// Every target named by a candidate, sorted and once; `None` when no candidate names one.
pub fn targets_to_ask(candidates: &[Candidate]) -> Option<Vec<String>> {
    let targets: BTreeSet<&str> = candidates
        .iter()
        .filter_map(|candidate| candidate.targets.as_ref())
        .flatten()
        .map(String::as_str)
        .collect();
    (!targets.is_empty()).then(|| targets.into_iter().map(str::to_string).collect())
}

/// Reads the command's stdout: a JSON array of the eligible target names.
pub fn read_capacity_answer(stdout: &str) -> CapacityGate {
    match serde_json::from_str::<Vec<String>>(stdout.trim()) {
        Ok(targets) => CapacityGate::Eligible(targets.into_iter().collect()),
        Err(_) => CapacityGate::Unavailable {
            message:
                "the capacity command printed something other than a JSON array of target names"
                    .into(),
        },
    }
}

impl CapacityGate {
    /// Why the gate holds this candidate back, if it does.
    pub(super) fn obstacle(&self, candidate: &Candidate) -> Option<Obstacle> {
        let targets = candidate.targets.as_deref().unwrap_or_default();
        match self {
            CapacityGate::Open => None,
            CapacityGate::Unavailable { message } => Some(Obstacle::new(
                Decision::CapacityUnavailable,
                format!(
                    "the capacity gate could not answer, so nothing it judges is admitted: {message}"
                ),
            )),
            CapacityGate::Eligible(eligible) => {
                let blocked: Vec<&str> = targets
                    .iter()
                    .filter(|target| !eligible.contains(*target))
                    .map(String::as_str)
                    .collect();
                (!blocked.is_empty()).then(|| {
                    Obstacle::new(
                        Decision::NoCapacity,
                        format!(
                            "no capacity now for target(s) {}; retried next wave",
                            blocked.join(", ")
                        ),
                    )
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::candidate::parse_candidates;

    #[test]
    fn the_gate_is_asked_about_every_named_target_once() {
        let candidates = parse_candidates(
            r#"[{"id": "a", "family": "f", "targets": ["h100", "b200"]},
                {"id": "b", "family": "g", "targets": ["b200"]},
                {"id": "c", "family": "h"}]"#,
        )
        .unwrap();
        assert_eq!(
            targets_to_ask(&candidates),
            Some(vec!["b200".to_string(), "h100".to_string()])
        );
        assert_eq!(targets_to_ask(&candidates[2..]), None);
    }

    #[test]
    fn only_a_json_array_of_strings_is_an_answer() {
        assert_eq!(
            read_capacity_answer(" [\"b200\"]\n"),
            CapacityGate::Eligible(["b200".to_string()].into())
        );
        for garbage in ["", "b200", "{\"b200\": true}", "[1]", "[\"b200\""] {
            assert!(
                matches!(
                    read_capacity_answer(garbage),
                    CapacityGate::Unavailable { .. }
                ),
                "{garbage:?}"
            );
        }
    }
}
