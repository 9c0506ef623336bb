//! `mep_handshake`: see `sextant_fuzz_harness::mep_handshake` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::mep_handshake(data));
