//! What the discovering repository of `tests/e2e_workflows.rs` holds and what the public feeds
//! publish of it: a master file of three families rendered by the stand-in producer at the
//! producer entrypoint (`verify_baselines_support`), and a loopback server answering like
//! InferenceX's public API (`/api/v1/latest-images`, `/api/v1/benchmarks`,
//! `/api/v1/workflow-info`). All hand-made: small single-node entries and their rows.
//!
//! - `m1-fp8-h100-engine`: in the catalog; its published rows come from a producer run whose
//!   head renders them: discovered, verified, claimed.
//! - `m1-fp8-h200-engine`: in the catalog; its published row is a point the producer does not
//!   make: discovered, then deferred by verify-baselines (`unmatched-baseline`).
//! - `m1-fp8-b200-engine`: not in the catalog (`no-published-row`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use klaud::core::discovery::identity::candidate_id;
use serde_json::{Value, json};

use super::verify_baselines_support::{StandInData, single_node_entry, single_node_row};

/// The one master file (`discovery.configs`' default pattern `configs/*-master.yaml`).
pub const MASTER_FILE: &str = "configs/x-master.yaml";
/// The runners file (`discovery.runner-config`'s default).
pub const RUNNERS_FILE: &str = "configs/runners.yaml";
/// The model prefix of every entry, and the display model the benchmarks feed knows it by
/// (`discovery.models`).
pub const MODEL_PREFIX: &str = "m1";
pub const DISPLAY_MODEL: &str = "Model-One";
/// The image every entry and row has (already normalised).
pub const IMAGE: &str = "example/engine:1";

/// One family of the master file.
pub struct FamilySpec {
    pub key: &'static str,
    /// The runner label of its entries (its hardware).
    pub runner: &'static str,
    /// The concurrencies the generator renders for it.
    pub rendered: &'static [u64],
    /// What the feeds publish: the catalog date, the producer run and the published
    /// concurrencies; `None` for a family the catalog does not list.
    pub published: Option<Publication>,
}

pub struct Publication {
    pub date: &'static str,
    pub run: u64,
    pub concurrencies: &'static [u64],
}

pub const VERIFIED: &str = "m1-fp8-h100-engine";
pub const UNMATCHED: &str = "m1-fp8-h200-engine";
pub const UNPUBLISHED: &str = "m1-fp8-b200-engine";

pub const FAMILIES: [FamilySpec; 3] = [
    FamilySpec {
        key: VERIFIED,
        runner: "h100",
        rendered: &[4, 8],
        published: Some(Publication {
            date: "2026-05-02",
            run: 24_000_001,
            concurrencies: &[4, 8],
        }),
    },
    FamilySpec {
        key: UNMATCHED,
        runner: "h200",
        rendered: &[4],
        published: Some(Publication {
            date: "2026-05-01",
            run: 24_000_002,
            concurrencies: &[64],
        }),
    },
    FamilySpec {
        key: UNPUBLISHED,
        runner: "b200",
        rendered: &[4],
        published: None,
    },
];

/// `<master file>:<key>`.
pub fn family(key: &str) -> String {
    format!("{MASTER_FILE}:{key}")
}

/// The id discovery gives the family's candidate (the reference system's).
pub fn discovered_id(key: &str) -> String {
    candidate_id(&family(key), IMAGE)
}

fn spec(key: &str) -> &'static FamilySpec {
    FAMILIES
        .iter()
        .find(|family| family.key == key)
        .unwrap_or_else(|| panic!("no family {key}"))
}

/// The master file: every family's top-level key (the stand-in producer does not read them).
pub fn master_file() -> String {
    FAMILIES
        .iter()
        .map(|family| {
            format!(
                "{}:\n  image: {IMAGE}\n  model-prefix: {MODEL_PREFIX}\n  runner: {}\n",
                family.key, family.runner
            )
        })
        .collect()
}

pub fn runners_file() -> String {
    FAMILIES
        .iter()
        .map(|family| format!("{}:\n  - {}-runner-0\n", family.runner, family.runner))
        .collect()
}

/// What the stand-in producer renders per family (the same with and without `--no-evals`).
pub fn generator_data() -> StandInData {
    FAMILIES
        .iter()
        .fold(StandInData::new(true), |data, family| {
            let entries: Vec<Value> = family
                .rendered
                .iter()
                .map(|conc| single_node_entry(family.runner, *conc))
                .collect();
            data.with_key(family.key, entries.clone(), entries)
        })
}

/// The `latest-images` catalog: one row per published family.
pub fn catalog() -> Value {
    FAMILIES
        .iter()
        .filter_map(|family| {
            let published = family.published.as_ref()?;
            Some(json!({
                "model": MODEL_PREFIX, "hardware": family.runner, "framework": "engine",
                "precision": "fp8", "spec_method": "none", "disagg": false,
                "isl": 1024, "osl": 1024, "benchmark_type": "single_turn",
                "image": IMAGE, "date": published.date,
            }))
        })
        .collect()
}

/// The benchmarks feed's rows of the display model: each published family's points, with the
/// date and the producer run of `repository` they came from.
pub fn benchmark_rows(repository: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    for family in &FAMILIES {
        let Some(published) = &family.published else {
            continue;
        };
        for conc in published.concurrencies {
            let mut row = single_node_row(family.runner, *conc);
            row["date"] = json!(published.date);
            row["run_url"] = json!(format!(
                "https://github.com/{repository}/actions/runs/{}",
                published.run
            ));
            rows.push(row);
        }
    }
    rows
}

/// workflow-info per date: each published family's run with `head` as its head.
pub fn workflow_info(head: &str) -> BTreeMap<String, Value> {
    FAMILIES
        .iter()
        .filter_map(|family| family.published.as_ref())
        .map(|published| {
            (
                published.date.to_string(),
                json!({"runConfigs": [{"github_run_id": published.run.to_string(), "head_sha": head}]}),
            )
        })
        .collect()
}

/// The date of a published family's catalog row.
pub fn date_of(key: &str) -> &'static str {
    spec(key).published.as_ref().expect("published").date
}

/// What the feed server publishes.
struct Published {
    catalog: Value,
    benchmarks: Vec<Value>,
    workflow_info: BTreeMap<String, Value>,
    requests: Mutex<Vec<String>>,
}

/// A loopback server answering like InferenceX's public API from the data above.
pub struct FeedServer {
    address: SocketAddr,
    state: Arc<Published>,
    /// Runs the server; dropping it stops the server.
    _runtime: tokio::runtime::Runtime,
}

pub const IMAGES_PATH: &str = "/api/v1/latest-images";
pub const BENCHMARKS_PATH: &str = "/api/v1/benchmarks";
pub const WORKFLOW_INFO_PATH: &str = "/api/v1/workflow-info";

async fn answer(State(state): State<Arc<Published>>, uri: Uri) -> Response {
    let target = uri
        .path_and_query()
        .map(ToString::to_string)
        .unwrap_or_default();
    state.requests.lock().expect("requests").push(target);
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let date = query.get("date").cloned().unwrap_or_default();
    let document = match uri.path() {
        IMAGES_PATH => state.catalog.clone(),
        BENCHMARKS_PATH => {
            let model = query.get("model").map(String::as_str);
            let rows: Vec<&Value> = state
                .benchmarks
                .iter()
                .filter(|row| model == Some(DISPLAY_MODEL) && row["date"] == json!(date))
                .collect();
            json!(rows)
        }
        WORKFLOW_INFO_PATH => state
            .workflow_info
            .get(&date)
            .cloned()
            .unwrap_or_else(|| json!({"runConfigs": [], "changelogs": []})),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.to_string(),
    )
        .into_response()
}

impl FeedServer {
    /// Publishes the families above, the runs' head being `head` of `repository`.
    pub fn start(repository: &str, head: &str) -> FeedServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let state = Arc::new(Published {
            catalog: catalog(),
            benchmarks: benchmark_rows(repository),
            workflow_info: workflow_info(head),
            requests: Mutex::new(Vec::new()),
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind the feed server");
        let address = listener.local_addr().expect("its address");
        let app = Router::new().fallback(answer).with_state(state.clone());
        runtime.spawn(async move { axum::serve(listener, app).await.expect("serve") });
        FeedServer {
            address,
            state,
            _runtime: runtime,
        }
    }

    /// The `discovery` section of `.github/klaud.yml`: the three feeds on this server and the
    /// display model of the model prefix.
    pub fn config(&self) -> String {
        let origin = format!("http://{}", self.address);
        format!(
            "discovery:\n  feeds:\n    images: {origin}{IMAGES_PATH}\n    benchmarks: \
             {origin}{BENCHMARKS_PATH}\n    workflow-info: {origin}{WORKFLOW_INFO_PATH}\n  \
             models: {{{MODEL_PREFIX}: {DISPLAY_MODEL}}}\n"
        )
    }

    /// Every request target received (path and query), in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().expect("requests").clone()
    }
}
