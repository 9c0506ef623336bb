//! `config_native`: see `sextant_fuzz_harness::config_native` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::config_native(data));
