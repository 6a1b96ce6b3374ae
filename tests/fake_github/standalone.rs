//! The fake GitHub as a standalone server for end-to-end runs: serves a state file (or the
//! generated benchmark scenario) on 127.0.0.1 until killed, and prints
//! `listening on http://127.0.0.1:PORT` once it accepts requests.
//!
//! ```text
//! cargo run --example fake-github -- --port 0 --state scenario.json
//! cargo run --example fake-github -- --scenario bench --seed 7 [--dump-state out.json]
//! ```
//! Options: `--port N` (0 = any free port), `--state FILE` (a `/_fake/state` document),
//! `--scenario bench` with `--seed N`, `--faults FILE` (a `/_fake/faults` document),
//! `--latency-ms N`, `--dump-state FILE` (write the starting state and continue).

use klaud_fake_github as fake_github;

use std::io::Write;
use std::process::ExitCode;

use fake_github::{FakeGitHub, FaultConfig, RepoState, Timestamp, scenario};

struct Options {
    port: u16,
    state_file: Option<String>,
    scenario: Option<String>,
    seed: u64,
    faults_file: Option<String>,
    latency_ms: Option<u64>,
    dump_state: Option<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        port: 0,
        state_file: None,
        scenario: None,
        seed: 1,
        faults_file: None,
        latency_ms: None,
        dump_state: None,
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let mut value = || arguments.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--port" => options.port = value()?.parse().map_err(|_| "--port needs a number")?,
            "--state" => options.state_file = Some(value()?),
            "--scenario" => options.scenario = Some(value()?),
            "--seed" => options.seed = value()?.parse().map_err(|_| "--seed needs a number")?,
            "--faults" => options.faults_file = Some(value()?),
            "--latency-ms" => {
                options.latency_ms = Some(
                    value()?
                        .parse()
                        .map_err(|_| "--latency-ms needs a number")?,
                )
            }
            "--dump-state" => options.dump_state = Some(value()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &str) -> Result<T, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("{path} is not valid: {error}"))
}

fn initial_state(options: &Options) -> Result<RepoState, String> {
    match (&options.state_file, options.scenario.as_deref()) {
        (Some(path), None) => read_json(path),
        (None, Some("bench")) => {
            Ok(scenario::generate(options.seed, Timestamp::system_now()).state)
        }
        (None, Some(other)) => Err(format!("unknown scenario {other} (known: bench)")),
        (None, None) => Ok(RepoState::new("acme", "repo")),
        (Some(_), Some(_)) => Err("--state and --scenario exclude each other".to_string()),
    }
}

fn run() -> Result<(), String> {
    let options = parse_options()?;
    let state = initial_state(&options)?;
    if let Some(path) = &options.dump_state {
        let text = serde_json::to_string(&state).map_err(|error| error.to_string())?;
        std::fs::write(path, text).map_err(|error| format!("cannot write {path}: {error}"))?;
    }
    let mut faults: FaultConfig = match &options.faults_file {
        Some(path) => read_json(path)?,
        None => FaultConfig::default(),
    };
    if let Some(latency) = options.latency_ms {
        faults.latency_ms = latency;
    }
    let server = FakeGitHub::start_on_port(state, options.port)
        .map_err(|error| format!("cannot listen on 127.0.0.1:{}: {error}", options.port))?;
    server.set_faults(faults);
    println!("listening on {}", server.base_url());
    std::io::stdout()
        .flush()
        .map_err(|error| error.to_string())?;
    loop {
        std::thread::park();
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fake-github: {message}");
            ExitCode::from(2)
        }
    }
}
