//! The agent's execution record as `finish` reads it: any text is a record whose texts are
//! bounded, whose cost is a finite amount of at least 0 and whose denials are counts per tool
//! (never inputs, at most the tool limit plus the fold), or a reason it says nothing usable.
#![no_main]

use klaud::core::execution::{
    AgentRecord, AgentVerdict, DENIED_TOOLS_LIMIT, RECORD_TEXT_LIMIT, read_execution_file,
};
use libfuzzer_sys::fuzz_target;

fn bounded(text: &str) -> bool {
    text.chars().count() <= RECORD_TEXT_LIMIT + 1
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(record) = read_execution_file(text) else {
        return;
    };
    assert!(record.subtype.as_deref().is_none_or(bounded));
    assert!(record.terminal_reason.as_deref().is_none_or(bounded));
    assert!(
        record
            .cost_usd
            .is_none_or(|cost| cost.is_finite() && cost >= 0.0)
    );
    assert!(record.denials.len() <= DENIED_TOOLS_LIMIT + 1);
    assert!(record.denials.keys().all(|tool| bounded(tool)));
    assert!(record.denials.values().all(|count| *count > 0));
    if record.is_error == Some(true) {
        assert_eq!(record.verdict(), AgentVerdict::Failed);
        assert!(!record.succeeded());
    }
    assert!(!record.describe().is_empty());
    // What the ledger keeps reads back as it was written.
    let json = serde_json::to_string(&record).unwrap();
    let back: AgentRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(back, record);
});
