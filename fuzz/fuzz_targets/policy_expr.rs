//! `policy_expr`: see `sextant_fuzz_harness::policy_expr` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::policy_expr(data));
