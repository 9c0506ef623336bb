//! Keys: the two algorithms Sextant signs with, key files in BIND's format
//! (`K<zone>.+<alg>+<tag>.key` holding the DNSKEY record, `.private`
//! holding the private key and the key's timing), key tags, and new keys.
//! BIND's `dnssec-keygen`, `dnssec-settime` and Knot's `keymgr` import and
//! export this format, so keys move in from another signer and out again.

use data_encoding::BASE64;
use ring::rand::SecureRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use sextant_core::dnssec::{FLAG_SEP, FLAG_ZONE, KeyTiming, SecretBytes, ZoneKey};

use crate::{Error, name, time};

/// A DNSSEC signing algorithm Sextant implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// 13: ECDSA on P-256 with SHA-256 (RFC 6605), the default.
    EcdsaP256Sha256,
    /// 15: Ed25519 (RFC 8080).
    Ed25519,
}

impl Algorithm {
    pub fn number(self) -> u8 {
        match self {
            Algorithm::EcdsaP256Sha256 => 13,
            Algorithm::Ed25519 => 15,
        }
    }

    pub fn from_number(n: u8) -> Result<Algorithm, Error> {
        match n {
            13 => Ok(Algorithm::EcdsaP256Sha256),
            15 => Ok(Algorithm::Ed25519),
            other => Err(Error::Algorithm(other)),
        }
    }

    /// The mnemonic of RFC 8624's table (what key files print).
    pub fn mnemonic(self) -> &'static str {
        match self {
            Algorithm::EcdsaP256Sha256 => "ECDSAP256SHA256",
            Algorithm::Ed25519 => "ED25519",
        }
    }

    /// By number or mnemonic, any case (`13`, `ecdsap256sha256`, `ED25519`).
    pub fn parse(text: &str) -> Result<Algorithm, Error> {
        if let Ok(n) = text.parse::<u8>() {
            return Algorithm::from_number(n);
        }
        [Algorithm::EcdsaP256Sha256, Algorithm::Ed25519]
            .into_iter()
            .find(|a| a.mnemonic().eq_ignore_ascii_case(text))
            .ok_or_else(|| Error::AlgorithmName(text.to_string()))
    }

    /// Length of the DNSKEY public key field.
    fn public_len(self) -> usize {
        match self {
            Algorithm::EcdsaP256Sha256 => 64,
            Algorithm::Ed25519 => 32,
        }
    }
}

/// The RDATA of a DNSKEY: flags, protocol 3, algorithm, public key.
pub fn dnskey_rdata(flags: u16, algorithm: u8, public_key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + public_key.len());
    out.extend_from_slice(&flags.to_be_bytes());
    out.push(3);
    out.push(algorithm);
    out.extend_from_slice(public_key);
    out
}

/// The key tag of a DNSKEY RDATA (RFC 4034 Appendix B).
pub fn key_tag(rdata: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for (i, b) in rdata.iter().enumerate() {
        acc += if i & 1 == 0 {
            u32::from(*b) << 8
        } else {
            u32::from(*b)
        };
    }
    acc += (acc >> 16) & 0xffff;
    (acc & 0xffff) as u16
}

/// The file name (without `.key`/`.private`) BIND gives a key.
pub fn base_name(zone: &str, algorithm: u8, tag: u16) -> String {
    format!("K{}.+{algorithm:03}+{tag:05}", name::normalise(zone))
}

/// A `.key` file: the DNSKEY record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyFile {
    /// The owner: the zone the key is for (dotted, lower case).
    pub zone: String,
    pub ttl: Option<u32>,
    pub flags: u16,
    pub algorithm: u8,
    pub public_key: Vec<u8>,
}

/// Reads a `.key` file: comments (`;`) and one DNSKEY record, `OWNER [TTL]
/// [IN] DNSKEY FLAGS 3 ALG BASE64...` (on one line, or over several in
/// parentheses). Errors name the line and what is wrong, never the text:
/// a configuration received from a peer may name any file as a key file,
/// and the error goes back to that peer.
pub fn parse_public(text: &str) -> Result<PublicKeyFile, Error> {
    let mut words: Vec<(&str, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let record = line.split(';').next().unwrap_or("");
        words.extend(
            record
                .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .filter(|w| !w.is_empty())
                .map(|w| (w, i + 1)),
        );
    }
    let bad = |line: usize, why: &str| Error::KeyFile(format!("the .key file, line {line}: {why}"));
    let mut fields = words.into_iter();
    let Some((owner, _)) = fields.next() else {
        return Err(Error::KeyFile("no DNSKEY record in the .key file".into()));
    };
    let mut ttl = None;
    let mut word = fields.next();
    while let Some((w, line)) = word {
        if w.eq_ignore_ascii_case("DNSKEY") {
            break;
        }
        if w.eq_ignore_ascii_case("IN") {
        } else if let Ok(t) = w.parse::<u32>() {
            ttl = Some(t);
        } else {
            return Err(bad(
                line,
                "expected `OWNER [TTL] [IN] DNSKEY ...`; a word before DNSKEY is neither a TTL nor IN",
            ));
        }
        word = fields.next();
    }
    let Some((_, dnskey_line)) = word else {
        return Err(Error::KeyFile(
            "the .key file holds no DNSKEY record (`OWNER [TTL] [IN] DNSKEY FLAGS 3 ALGORITHM KEY`)"
                .into(),
        ));
    };
    let mut last = dnskey_line;
    let mut number = |what: &str| -> Result<(u32, usize), Error> {
        match fields.next() {
            Some((v, line)) => {
                last = line;
                v.parse()
                    .map(|n| (n, line))
                    .map_err(|_| bad(line, &format!("the DNSKEY's {what} is not a number")))
            }
            None => Err(bad(last, &format!("the DNSKEY's {what} is missing"))),
        }
    };
    let (flags, line) = number("flags")?;
    let flags = u16::try_from(flags).map_err(|_| bad(line, "the DNSKEY's flags are over 65535"))?;
    let (protocol, line) = number("protocol")?;
    if protocol != 3 {
        return Err(bad(line, "the DNSKEY's protocol must be 3"));
    }
    let (algorithm, line) = number("algorithm")?;
    let algorithm =
        u8::try_from(algorithm).map_err(|_| bad(line, "the DNSKEY's algorithm is over 255"))?;
    let alg = Algorithm::from_number(algorithm)?;
    let b64: String = fields.map(|(w, _)| w).collect();
    let public_key = BASE64.decode(b64.as_bytes()).map_err(|_| {
        Error::KeyFile("the .key file: the DNSKEY's public key is not base64".into())
    })?;
    if public_key.len() != alg.public_len() {
        return Err(Error::KeyFile(format!(
            "a {} public key has {} bytes, this one {}",
            alg.mnemonic(),
            alg.public_len(),
            public_key.len()
        )));
    }
    if flags & FLAG_ZONE == 0 {
        return Err(Error::KeyFile(
            "the DNSKEY is not a zone key (flag 256 unset)".into(),
        ));
    }
    Ok(PublicKeyFile {
        zone: name::normalise(owner),
        ttl,
        flags,
        algorithm,
        public_key,
    })
}

/// A `.private` file: the private key and the key's timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateKeyFile {
    pub algorithm: u8,
    pub private_key: SecretBytes,
    pub created: Option<u64>,
    pub timing: KeyTiming,
}

/// Reads a `.private` file (`Private-key-format: v1.2` or `v1.3`). Errors
/// name the line and the field, never a value (see [`parse_public`]).
pub fn parse_private(text: &str) -> Result<PrivateKeyFile, Error> {
    let mut algorithm = None;
    let mut private_key = None;
    let mut created = None;
    let mut timing = KeyTiming::default();
    for (i, line) in text.lines().enumerate() {
        let Some((field, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let bad = |why: &str| Error::KeyFile(format!("the .private file, line {}: {why}", i + 1));
        let field = field.trim();
        let when = || {
            time::parse(value)
                .ok_or_else(|| bad(&format!("{field} is not a time YYYYMMDDHHMMSS (UTC)")))
        };
        match field {
            "Algorithm" => {
                let n = value.split_whitespace().next().unwrap_or("");
                algorithm = Some(
                    n.parse::<u8>()
                        .map_err(|_| bad("Algorithm is not a number from 0 to 255"))?,
                );
            }
            "PrivateKey" => {
                private_key = Some(
                    BASE64
                        .decode(value.as_bytes())
                        .map_err(|_| bad("PrivateKey is not base64"))?,
                );
            }
            "Created" => created = Some(when()?),
            "Publish" => timing.publish = Some(when()?),
            "Activate" => timing.activate = Some(when()?),
            "Inactive" => timing.inactive = Some(when()?),
            "Delete" => timing.delete = Some(when()?),
            "SyncPublish" => timing.sync_publish = Some(when()?),
            "SyncDelete" => timing.sync_delete = Some(when()?),
            _ => {}
        }
    }
    let algorithm =
        algorithm.ok_or_else(|| Error::KeyFile("the .private file has no Algorithm".into()))?;
    let private_key =
        private_key.ok_or_else(|| Error::KeyFile("the .private file has no PrivateKey".into()))?;
    Ok(PrivateKeyFile {
        algorithm,
        private_key: SecretBytes(private_key),
        created,
        timing,
    })
}

/// A key from its two files: checked to be one pair (the private key
/// makes the public one), named `name`.
pub fn from_files(
    name: &str,
    public: &str,
    private: &str,
) -> Result<(String, ZoneKey, Option<u32>), Error> {
    let public = parse_public(public)?;
    let private = parse_private(private)?;
    if public.algorithm != private.algorithm {
        return Err(Error::KeyFile(format!(
            "the .key file says algorithm {}, the .private file {}",
            public.algorithm, private.algorithm
        )));
    }
    let key = ZoneKey {
        name: name.to_string(),
        flags: public.flags,
        algorithm: public.algorithm,
        public_key: public.public_key,
        private_key: private.private_key,
        timing: private.timing,
    };
    Signer::new(&key)?;
    Ok((public.zone, key, public.ttl))
}

/// A private key ready to sign.
pub enum Signer {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signer::Ecdsa(_) => "Signer(ECDSAP256SHA256)",
            Signer::Ed25519(_) => "Signer(ED25519)",
        })
    }
}

impl Signer {
    /// The signer of `key`; an error when its two halves are not a pair.
    pub fn new(key: &ZoneKey) -> Result<Signer, Error> {
        let mismatch = |_| Error::KeyFile("the private key does not match the public key".into());
        match Algorithm::from_number(key.algorithm)? {
            Algorithm::EcdsaP256Sha256 => {
                let mut public = Vec::with_capacity(65);
                public.push(4);
                public.extend_from_slice(&key.public_key);
                EcdsaKeyPair::from_private_key_and_public_key(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &key.private_key.0,
                    &public,
                    &ring::rand::SystemRandom::new(),
                )
                .map(Signer::Ecdsa)
                .map_err(mismatch)
            }
            Algorithm::Ed25519 => {
                Ed25519KeyPair::from_seed_and_public_key(&key.private_key.0, &key.public_key)
                    .map(Signer::Ed25519)
                    .map_err(mismatch)
            }
        }
    }

    /// Signs `data`: r‖s for ECDSA (RFC 6605 §4), the signature for Ed25519.
    pub fn sign(&self, data: &[u8], rng: &dyn SecureRandom) -> Result<Vec<u8>, Error> {
        match self {
            Signer::Ecdsa(k) => k
                .sign(rng, data)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Sign),
            Signer::Ed25519(k) => Ok(k.sign(data).as_ref().to_vec()),
        }
    }
}

/// A new key and its two files' text.
#[derive(Debug)]
pub struct NewKey {
    /// `K<zone>.+<alg>+<tag>`.
    pub base_name: String,
    pub tag: u16,
    pub key_file: String,
    pub private_file: String,
}

/// Makes a new key for `zone` (a key-signing key when `ksk`), created,
/// published and active at `now` (unix seconds).
pub fn generate(
    zone: &str,
    algorithm: Algorithm,
    ksk: bool,
    ttl: u32,
    now: u64,
    rng: &dyn SecureRandom,
) -> Result<NewKey, Error> {
    let (public, private) = match algorithm {
        Algorithm::EcdsaP256Sha256 => {
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, rng).map_err(|_| Error::Generate)?;
            let pair =
                EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), rng).map_err(|_| Error::Generate)?;
            let public = pair.public_key().as_ref().get(1..).unwrap_or(&[]).to_vec();
            (public, ec_private_scalar(pkcs8.as_ref())?)
        }
        Algorithm::Ed25519 => {
            let mut seed = [0u8; 32];
            rng.fill(&mut seed).map_err(|_| Error::Generate)?;
            let pair = Ed25519KeyPair::from_seed_unchecked(&seed).map_err(|_| Error::Generate)?;
            (pair.public_key().as_ref().to_vec(), seed.to_vec())
        }
    };
    let flags = FLAG_ZONE | if ksk { FLAG_SEP } else { 0 };
    let rdata = dnskey_rdata(flags, algorithm.number(), &public);
    let tag = key_tag(&rdata);
    let zone = name::normalise(zone);
    let stamp = time::format(now);
    let kind = if ksk { "key-signing" } else { "zone-signing" };
    let key_file = format!(
        "; This is a {kind} key, keyid {tag}, for {zone}.\n\
         ; Created: {stamp}\n; Publish: {stamp}\n; Activate: {stamp}\n\
         {zone}. {ttl} IN DNSKEY {flags} 3 {} {}\n",
        algorithm.number(),
        BASE64.encode(&public)
    );
    let private_file = format!(
        "Private-key-format: v1.3\nAlgorithm: {} ({})\nPrivateKey: {}\n\
         Created: {stamp}\nPublish: {stamp}\nActivate: {stamp}\n",
        algorithm.number(),
        algorithm.mnemonic(),
        BASE64.encode(&private)
    );
    let key = ZoneKey {
        name: String::new(),
        flags,
        algorithm: algorithm.number(),
        public_key: public,
        private_key: SecretBytes(private),
        timing: KeyTiming::default(),
    };
    Signer::new(&key)?;
    Ok(NewKey {
        base_name: base_name(&zone, algorithm.number(), tag),
        tag,
        key_file,
        private_file,
    })
}

/// The 32-byte private scalar of ring's PKCS#8 (v1) P-256 document: the
/// OCTET STRING after the ECPrivateKey's version 1 (RFC 5915 §3).
fn ec_private_scalar(pkcs8: &[u8]) -> Result<Vec<u8>, Error> {
    const VERSION_THEN_KEY: [u8; 5] = [0x02, 0x01, 0x01, 0x04, 0x20];
    pkcs8
        .windows(VERSION_THEN_KEY.len())
        .position(|w| w == VERSION_THEN_KEY)
        .and_then(|at| pkcs8.get(at + 5..at + 5 + 32))
        .map(<[u8]>::to_vec)
        .ok_or(Error::Generate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6605 §6.1's example key (a KSK of example.net.), its tag 55648.
    const RFC6605_KEY: &str = "example.net. 3600 IN DNSKEY 257 3 13 (\n\
        GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA== )";

    #[test]
    fn rfc6605_key_tag() {
        let k = parse_public(RFC6605_KEY).unwrap();
        assert_eq!(k.zone, "example.net");
        assert_eq!(k.ttl, Some(3600));
        assert_eq!((k.flags, k.algorithm), (257, 13));
        assert_eq!(
            key_tag(&dnskey_rdata(k.flags, k.algorithm, &k.public_key)),
            55648
        );
    }

    #[test]
    fn generated_keys_read_back_and_sign() {
        let rng = ring::rand::SystemRandom::new();
        for alg in [Algorithm::EcdsaP256Sha256, Algorithm::Ed25519] {
            let k = generate("Example.com.", alg, true, 3600, 1_796_400_000, &rng).unwrap();
            assert!(
                k.base_name.starts_with("Kexample.com.+0"),
                "{}",
                k.base_name
            );
            let (zone, key, ttl) = from_files("ksk", &k.key_file, &k.private_file).unwrap();
            assert_eq!((zone.as_str(), ttl), ("example.com", Some(3600)));
            assert!(key.is_ksk());
            assert_eq!(
                key_tag(&dnskey_rdata(key.flags, key.algorithm, &key.public_key)),
                k.tag
            );
            assert_eq!(key.timing.activate, Some(1_796_400_000));
            let sig = Signer::new(&key).unwrap().sign(b"data", &rng).unwrap();
            assert_eq!(sig.len(), 64);
            // The key's own bytes never show in a debug print.
            assert!(format!("{key:?}").contains("redacted"));
        }
    }

    #[test]
    fn mismatched_halves_are_refused() {
        let rng = ring::rand::SystemRandom::new();
        let a = generate(
            "example.com",
            Algorithm::EcdsaP256Sha256,
            false,
            3600,
            0,
            &rng,
        )
        .unwrap();
        let b = generate(
            "example.com",
            Algorithm::EcdsaP256Sha256,
            false,
            3600,
            0,
            &rng,
        )
        .unwrap();
        let e = from_files("x", &a.key_file, &b.private_file).unwrap_err();
        assert!(e.to_string().contains("does not match"), "{e}");
    }

    /// Any file may be named as a key file (by a configuration received
    /// from a peer): what is wrong with it is told by line, never by text.
    #[test]
    fn errors_never_quote_the_file() {
        let secret = "sextant-test-token-5f0c1e9a7b3d";
        for text in [
            format!("admin {secret}\n"),
            format!("{secret}\n"),
            format!("# tokens\nadmin {secret} more\n"),
            format!("example.com. IN DNSKEY 257 3 13 {secret}!\n"),
            format!("example.com. IN DNSKEY {secret} 3 13 AAAA\n"),
            format!("example.com. IN DNSKEY 257 {secret} 13 AAAA\n"),
        ] {
            let e = parse_public(&text).unwrap_err().to_string();
            assert!(!e.contains(secret) && !e.contains("token"), "{e}");
        }
        for text in [
            format!("Algorithm: {secret}\n"),
            format!("Algorithm: 13\nPrivateKey: {secret}!\n"),
            format!("Algorithm: 13\nPublish: {secret}\n"),
        ] {
            let e = parse_private(&text).unwrap_err().to_string();
            assert!(!e.contains(secret) && !e.contains("token"), "{e}");
            assert!(e.contains("line "), "{e}");
        }
        let e = parse_public("x IN\nfoo DNSKEY").unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
