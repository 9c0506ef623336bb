//! `config_sync_transfer`: see `sextant_fuzz_harness::config_sync_transfer` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::config_sync_transfer(data));
