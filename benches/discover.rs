//! The wall time, generator runs, feed requests and GitHub requests of `discover` on the real
//! InferenceX master configs at 843c6254f (208 families), the real binary against the fake
//! GitHub and a loopback images feed serving the derived catalog: a first discovery with an
//! empty render cache, then one that finds every rendering kept.
//!
//! By default the generator is the recorded one (`tests/discovery_support/recorded_generator.py`,
//! which answers with the real generator's output). With `KLAUD_BENCH_INFERENCEX=<dir>`, a
//! checkout of the public InferenceX repository at 843c6254f with its Python dependencies
//! installed (scripts/record-generator-outputs.sh says which), the real generator runs instead.
//!
//! Run with `cargo bench --bench discover`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads its environment
#![allow(dead_code)] // the test support is shared with the tests

#[path = "../tests/discovery_support/mod.rs"]
mod discovery_support;
use klaud_fake_github as fake_github;
#[path = "../tests/recover_support/mod.rs"]
mod recover_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use discovery_support::{Checkout, Feed, derived_catalog, serve};
use recover_support::{Pass, World};
use serde_json::Value;

struct Figures {
    wall: Duration,
    generator_runs: u64,
    from_cache: u64,
    candidates: u64,
    feed_requests: u64,
    github_reads: usize,
}

fn discover(repo: &std::path::Path, cache: &std::path::Path, feed_url: &str) -> Figures {
    let server = World::new().start();
    let pass = Pass::new(70_000_001);
    std::fs::write(
        pass.path("klaud.yml"),
        format!("discovery:\n  feeds:\n    images: {feed_url}\n  review-batch-size: 256\n"),
    )
    .unwrap();
    let mut command = pass.mode_command(&server, "discover");
    command
        .arg("--repo-path")
        .arg(repo)
        .arg("--render-cache")
        .arg(cache);
    let started = Instant::now();
    let output = command.output().expect("klaud runs");
    let wall = started.elapsed();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(pass.path("out/discovery.json")).unwrap())
            .unwrap();
    Figures {
        wall,
        generator_runs: record["rendering"]["generator-runs"].as_u64().unwrap(),
        from_cache: record["rendering"]["from-cache"].as_u64().unwrap(),
        candidates: record["candidates"].as_array().unwrap().len() as u64,
        feed_requests: record["feed-requests"].as_u64().unwrap(),
        github_reads: server.request_log().len(),
    }
}

fn main() {
    let real = std::env::var_os("KLAUD_BENCH_INFERENCEX").map(PathBuf::from);
    let recorded = Checkout::new();
    let (repo, generator) = match &real {
        Some(path) => (path.clone(), "the real generator"),
        None => (recorded.root().to_path_buf(), "the recorded generator"),
    };
    let feed = serve(Feed::Catalog(derived_catalog()));
    let cache = tempfile::tempdir().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!("discover: 843c6254f master configs, {generator}, {cores} core(s)");
    println!(
        "| pass | wall | generator runs | from the cache | candidates | feed requests | GitHub requests |"
    );
    println!("|---|---|---|---|---|---|---|");
    for pass in ["first (empty render cache)", "next (renderings kept)"] {
        let figures = discover(&repo, cache.path(), &feed.url);
        println!(
            "| {pass} | {:.1} s | {} | {} | {} | {} | {} |",
            figures.wall.as_secs_f64(),
            figures.generator_runs,
            figures.from_cache,
            figures.candidates,
            figures.feed_requests,
            figures.github_reads
        );
    }
}
