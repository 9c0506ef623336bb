//! Both configuration parsers on arbitrary text: errors are fine, panics
//! are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sextant_config::parse_appliance(text, "fuzz.conf");
        let _ = sextant_config::parse_toml(text, "fuzz.toml");
    }
});
