//! `xdp_frame`: see `sextant_fuzz_harness::xdp_frame` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::xdp_frame(data));
