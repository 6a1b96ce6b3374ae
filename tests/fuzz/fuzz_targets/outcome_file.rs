//! The agent's outcome file as `finish` reads it: any text is an outcome with checked details or
//! bad input naming an `outcome-file` field.
#![no_main]

use klaud::core::outcome::Outcome;
use klaud::core::outcome_file::parse_outcome_file;
use libfuzzer_sys::fuzz_target;

fn is_id(text: &str) -> bool {
    (1..=80).contains(&text.len())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_outcome_file(text) {
        Ok(file) => {
            assert_eq!(Outcome::parse(file.outcome.name()), Some(file.outcome));
            assert!(file.phase.as_deref().is_none_or(is_id));
            assert!(file.reason_code.as_deref().is_none_or(is_id));
            assert_ne!(file.pull_request, Some(0));
        }
        Err(error) => {
            let shown = error.to_string();
            assert!(shown.contains("outcome-file"), "names the field: {shown}");
        }
    }
});
