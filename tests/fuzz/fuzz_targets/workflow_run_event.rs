//! The `workflow_run` event payload: any text is an ended run or an error that quotes none of
//! the payload (only its position and the kind of error).
#![no_main]

use klaud::adapters::github::event::parse_workflow_run_event;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(message) = parse_workflow_run_event(text) {
        let allowed = |c: char| c.is_ascii_alphanumeric() || " _:(),.".contains(c);
        assert!(
            message.chars().all(allowed),
            "the error carries payload text: {message}"
        );
    }
});
