//! The MEP frame reader on arbitrary bytes, fed in arbitrary pieces: it
//! must never panic, and every message it yields must encode again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sextant_mep::frame::{FrameReader, encode_to_vec};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let cut = usize::from(split).min(rest.len());
    let mut reader = FrameReader::new(64 * 1024);
    for piece in [&rest[..cut], &rest[cut..]] {
        reader.push(piece);
        while let Ok(Some(msg)) = reader.next_message() {
            let _ = encode_to_vec(&msg, 64 * 1024);
        }
    }
});
