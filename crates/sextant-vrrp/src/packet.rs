//! VRRPv3 advertisements: encoding, decoding and validation.
