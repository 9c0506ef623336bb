//! `mep_frames`: see `sextant_fuzz_harness::mep_frames` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::mep_frames(data));
