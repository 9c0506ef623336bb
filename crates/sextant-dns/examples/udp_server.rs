//! Serves the test model over UDP and TCP, for load tests with dnsperf:
//! `cargo run --release -p sextant-dns --example udp_server -- 127.0.0.1:5300 1 30`
//! (address, UDP workers, seconds to run; then prints the counters).

#[path = "../tests/common/model.rs"]
mod model;

use std::sync::Arc;
use std::time::Duration;

use sextant_dns::{DnsShared, spawn_udp};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:5300".into());
    let addr = addr.parse().map_err(std::io::Error::other)?;
    let workers = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let shared = Arc::new(DnsShared::new(model::snapshot()));
    spawn_udp(addr, workers, Arc::clone(&shared))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.spawn({
        let shared = Arc::clone(&shared);
        async move {
            let listener = sextant_dns::bind_tcp(addr).expect("tcp bind");
            sextant_dns::serve_tcp(listener, shared).await
        }
    });
    rt.block_on(async { tokio::time::sleep(Duration::from_secs(seconds)).await });
    println!("{:?}", shared.stats.snapshot());
    Ok(())
}
