//! `monitor_dns`: see `sextant_fuzz_harness::monitor_dns` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::monitor_dns(data));
