//! The candidates file: any text is candidates or an error naming `candidates[...]`; accepted
//! candidates written back out read as the same candidates (ids, families, bases, targets,
//! baselines and the passed-through keys).
#![no_main]

use klaud::core::candidate::{Candidate, parse_candidates};
use libfuzzer_sys::fuzz_target;

fn shape(candidates: &[Candidate]) -> Vec<impl PartialEq + std::fmt::Debug + '_> {
    candidates
        .iter()
        .map(|candidate| {
            (
                &candidate.id,
                &candidate.family,
                &candidate.base,
                &candidate.targets,
                candidate
                    .baseline
                    .as_ref()
                    .map(|baseline| (&baseline.producer, baseline.points.len())),
                candidate.passthrough.keys().collect::<Vec<_>>(),
            )
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_candidates(text) {
        Ok(candidates) => {
            let written = serde_json::to_string(&candidates).expect("candidates serialize");
            let again = parse_candidates(&written).expect("written candidates parse");
            assert_eq!(
                shape(&again),
                shape(&candidates),
                "changed through JSON: {written}"
            );
        }
        Err(error) => assert!(
            error.field.starts_with("candidates"),
            "the error names a field: {error}"
        ),
    }
});
