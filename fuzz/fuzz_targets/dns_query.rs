//! `dns_query`: see `sextant_fuzz_harness::dns_query` for the input and what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sextant_fuzz_harness::dns_query(data));
