//! A peer parent that sends anything at all: the syncer never panics,
//! never applies a text whose digest is not the one announced, and keeps
//! what it assembles bounded.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sextant_config_sync::{Cause, Input, Output, Settings, Syncer, digest};
use sextant_mep_proto::message::{
    ConfigOffer, ConfigOutcome, ConfigResult, ConfigUpdate, ConfigVersion, LineOp, Message,
};

fn syncer() -> Syncer {
    let settings = Settings {
        local_site: "P1".into(),
        software: "0.1.0".into(),
        syntax: "appliance".into(),
        automatic: true,
        peers: vec!["P2".into()],
    };
    let mut s = Syncer::new(settings.clone());
    s.on(
        Input::Loaded {
            settings,
            shared: Arc::from("a\nb\nc\n"),
            files: Vec::new(),
            file_incarnation: None,
            cause: Cause::Start {
                saved: None,
                header: None,
            },
        },
        Duration::ZERO,
    );
    s.on(Input::PeerUp { site: "P2".into() }, Duration::ZERO);
    s
}

fn version() -> impl Strategy<Value = ConfigVersion> {
    (
        0u64..4,
        prop_oneof![Just("P1"), Just("P2"), Just("p0")],
        prop_oneof![
            Just(digest("a\nb\nc\n")),
            Just(digest("x\n")),
            Just("sha256:zz".to_string())
        ],
    )
        .prop_map(|(incarnation, origin, digest)| ConfigVersion {
            incarnation,
            origin: origin.into(),
            digest,
        })
}

fn op() -> impl Strategy<Value = LineOp> {
    prop_oneof![
        (0u32..5).prop_map(LineOp::Keep),
        (0u32..5).prop_map(LineOp::Delete),
        proptest::collection::vec("[a-c\n]{0,3}", 0..3).prop_map(LineOp::Insert),
        Just(LineOp::Keep(u32::MAX)),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (
            version(),
            any::<bool>(),
            prop_oneof![Just("0.1.0"), Just("0.2.0")]
        )
            .prop_map(
                |(version, automatic, software)| Message::ConfigOffer(ConfigOffer {
                    version,
                    software: software.into(),
                    sync_protocol: 1,
                    syntax: "appliance".into(),
                    automatic,
                })
            ),
        (
            0u64..3,
            version(),
            proptest::option::of(version()),
            0u32..3,
            any::<bool>(),
            "[a-cx\n]{0,6}",
            proptest::collection::vec(op(), 0..4),
            any::<bool>()
        )
            .prop_map(|(transfer, version, base, part, last, text, ops, forced)| {
                Message::ConfigUpdate(ConfigUpdate {
                    transfer,
                    version,
                    base,
                    part,
                    last,
                    text,
                    ops,
                    forced,
                    files: Vec::new(),
                    lineage: Vec::new(),
                })
            }),
        (0u64..3, version(), version()).prop_map(|(transfer, version, running)| {
            Message::ConfigResult(ConfigResult {
                transfer,
                version,
                outcome: ConfigOutcome::NeedFull,
                errors: Vec::new(),
                warnings: Vec::new(),
                running,
            })
        }),
    ]
}

proptest! {
    #[test]
    fn anything_a_peer_sends_is_handled(msgs in proptest::collection::vec(message(), 1..40)) {
        let mut s = syncer();
        for (i, msg) in msgs.into_iter().enumerate() {
            let out = s.on(Input::Received { site: "P2".into(), msg }, Duration::from_millis(i as u64 * 100));
            for o in out {
                if let Output::Apply { version, shared, .. } = o {
                    prop_assert_eq!(digest(&shared), version.digest);
                }
            }
            s.on(Input::Tick, Duration::from_millis(i as u64 * 100 + 50));
        }
    }
}
