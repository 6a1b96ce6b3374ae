//! install-cli's readers: the `--version` stdout, the pinned version and the attempts count.
//! A version read from any text reads the same again from its canonical form.
#![no_main]

use klaud::core::install::{parse_attempts, parse_pinned_version, version_in_stdout};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(version) = version_in_stdout(text) {
        let shown = version.to_string();
        assert_eq!(version_in_stdout(&shown), Some(version.clone()));
        assert_eq!(
            version_in_stdout(&format!("{shown} (Claude Code)\n")),
            Some(version)
        );
    }
    if let Ok(version) = parse_pinned_version(text) {
        assert_eq!(parse_pinned_version(&version.to_string()), Ok(version));
    }
    if let Ok(attempts) = parse_attempts(text) {
        assert!(attempts >= 1);
    }
});
