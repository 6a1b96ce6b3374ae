//! `.github/klaud.yml`: any text is either a configuration or a `ConfigError` naming a key, and
//! an accepted configuration written back out reads as the same configuration.
#![no_main]

use klaud::shell::config::parse_config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_config(text) {
        Ok(config) => {
            let written = serde_yaml_ng::to_string(&config).expect("a configuration serializes");
            let again = parse_config(&written).expect("a written configuration parses");
            assert_eq!(
                again, config,
                "configuration changed through YAML:\n{written}"
            );
            let policy = config.policy(3, 7.0);
            assert_eq!(policy.bot, config.bot);
        }
        Err(error) => assert!(!error.key.is_empty(), "an error names its key"),
    }
});
