//! `klaud verify-baselines --review` on discovered candidates, end to end: the real binary looks
//! their baselines up in the public feeds — a loopback server this file starts, answering like
//! InferenceX's `/api/v1/benchmarks` and `/api/v1/workflow-info` from the real rows and answers in
//! `tests/fixtures/inferencex/public/` — proves each row's producer head, builds the producer's
//! arguments from that head's tree, and verifies the baseline against a stand-in producer that
//! answers like the recorded real one (`verify_baselines_support`, `inferencex_fixtures`).
//!
//! Derived data is marked where it is made: a catalog row (`source`) is a public row's fields as
//! the catalog lists them; a changed `run_url` or date is said so; every workflow-info answer but
//! the real one of 2026-05-05 is derived (the heads it names are the stand-in repository's
//! commits, which replace the real producer commits as in `tests/verify_baselines.rs`).

#![allow(clippy::disallowed_methods)] // spawns git and klaud

mod inferencex_fixtures;
mod verify_baselines_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use klaud::core::discovery::identity::candidate_id;
use klaud::core::discovery::observation::normalise_image;
use serde_json::{Value, json};

use inferencex_fixtures::{
    expected_entries, inferencex_fixtures, matching_cases, producer_entries, read_document,
    recorded_runs,
};
use verify_baselines_support::{KlaudRun, StandInData, StandInRepository, VerifyBaselinesRunner};

const REPOSITORY: &str = "SemiAnalysisAI/InferenceX";
const DSR1: &str = "DeepSeek-R1-0528";
const DSV4: &str = "DeepSeek-V4-Pro";
/// The recorded producer whose output the published dsr1 mi355x rows of 2026-02-27 match.
const PRODUCER_COMMIT: &str = "f267602ff7825dc02eaf81f512f50f380d6d39f9";
const KEY: &str = "dsr1-fp4-mi355x-sglang";
const BASE: &str = "843c6254ff69b567f772f6a5fd97675af3d04431";

/// What the feed server does for one request instead of answering from its data.
#[derive(Clone)]
enum Failure {
    /// This status, every time (so every retry fails too).
    Status(u16),
    /// 200 and `application/json`, with a body that is not JSON.
    NotJson,
}

/// What the feed server publishes.
#[derive(Default)]
struct Published {
    /// Rows per display model, each with its own `date`.
    benchmarks: BTreeMap<String, Vec<Value>>,
    /// The workflow-info answer per date.
    workflow_info: BTreeMap<String, Value>,
    /// Failures per (endpoint, date).
    failures: BTreeMap<(&'static str, String), Failure>,
}

struct ServerState {
    published: Published,
    requests: Mutex<Vec<String>>,
}

/// A loopback server answering like InferenceX's public API.
struct FeedServer {
    address: SocketAddr,
    state: Arc<ServerState>,
    /// Runs the server; dropping it stops the server.
    _runtime: tokio::runtime::Runtime,
}

const BENCHMARKS: &str = "/api/v1/benchmarks";
const WORKFLOW_INFO: &str = "/api/v1/workflow-info";

async fn answer(State(state): State<Arc<ServerState>>, uri: Uri) -> Response {
    let target = uri
        .path_and_query()
        .map(ToString::to_string)
        .unwrap_or_default();
    state.requests.lock().unwrap().push(target);
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let date = query.get("date").cloned().unwrap_or_default();
    let endpoint = match uri.path() {
        BENCHMARKS => BENCHMARKS,
        WORKFLOW_INFO => WORKFLOW_INFO,
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let json = |body: String| ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    match state.published.failures.get(&(endpoint, date.clone())) {
        Some(Failure::Status(status)) => {
            let status = StatusCode::from_u16(*status).unwrap();
            return (status, "upstream unavailable").into_response();
        }
        Some(Failure::NotJson) => return json("<html>maintenance</html>".to_string()),
        None => {}
    }
    let published = &state.published;
    let document = if endpoint == BENCHMARKS {
        assert_eq!(query.get("exact").map(String::as_str), Some("true"));
        let model = query.get("model").cloned().unwrap_or_default();
        let rows: Vec<&Value> = published
            .benchmarks
            .get(&model)
            .into_iter()
            .flatten()
            .filter(|row| row["date"] == json!(date))
            .collect();
        json!(rows)
    } else {
        published
            .workflow_info
            .get(&date)
            .cloned()
            .unwrap_or_else(|| json!({"runs": [], "changelogs": [], "configs": []}))
    };
    json(document.to_string())
}

impl FeedServer {
    fn start(published: Published) -> FeedServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(ServerState {
            published,
            requests: Mutex::new(Vec::new()),
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new().fallback(answer).with_state(state.clone());
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        FeedServer {
            address,
            state,
            _runtime: runtime,
        }
    }

    /// klaud's configuration: the feeds on this server's origin (the images feed is never read
    /// by verify-baselines; benchmarks and workflow-info default to its origin).
    fn config(&self) -> String {
        format!(
            "discovery:\n  feeds:\n    images: http://{}/api/v1/latest-images\n",
            self.address
        )
    }

    /// Every request target received (path and query).
    fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}

fn benchmarks_target(model: &str, date: &str) -> String {
    format!("{BENCHMARKS}?model={model}&date={date}&exact=true")
}

fn workflow_info_target(date: &str) -> String {
    format!("{WORKFLOW_INFO}?date={date}")
}

/// The real rows of `GET /api/v1/benchmarks?model=DeepSeek-R1-0528` (the app's fixture).
fn dsr1_rows() -> Vec<Value> {
    match read_document(&inferencex_fixtures(), "public/benchmarks-dsr1-sample.json") {
        Value::Array(rows) => rows,
        other => panic!("{other}"),
    }
}

/// A catalog row (`source`) of the family of a published row: the row's fields as the
/// `latest-images` catalog lists them (derived: the catalog's own rows are not in the fixtures).
fn catalog_row_of(row: &Value, image: &str) -> Value {
    json!({
        "model": row["model"], "hardware": row["hardware"], "framework": row["framework"],
        "precision": row["precision"], "spec_method": row["spec_method"], "disagg": row["disagg"],
        "benchmark_type": "single_turn", "isl": row["isl"], "osl": row["osl"],
        "image": image, "date": row["date"],
    })
}

/// A candidate as `discover` writes it: no baseline, its catalog row as `source`.
fn discovered(family: &str, source: Value) -> Value {
    let image = normalise_image(source["image"].as_str().unwrap());
    let id = candidate_id(family, &image);
    json!({
        "id": id, "family": family, "base": BASE, "source": source,
        "branch": format!("klaud/auto-{id}"),
    })
}

fn decision(candidate: &Value, verdict: &str) -> Value {
    json!({"candidate-id": candidate["id"], "decision": verdict, "family": candidate["family"],
           "pull-requests": if verdict == "proceed" { json!([]) } else { json!([41]) },
           "reason": if verdict == "proceed" { "no open pull request changes this family" }
                     else { "#41 already bumps this image" }})
}

/// The stand-in of the producer recorded at [`PRODUCER_COMMIT`], committed with the master
/// configs where they lay at that commit (`.github/configs/`). The configs' content is not
/// read by the stand-in; the tree is what counts.
fn producer_repository() -> (StandInRepository, String) {
    let fixtures = inferencex_fixtures();
    let runs = recorded_runs(&fixtures);
    let at_commit: Vec<_> = runs
        .iter()
        .filter(|run| run.commit == PRODUCER_COMMIT && run.config_keys() == [KEY])
        .collect();
    let rejection = at_commit
        .iter()
        .find(|run| run.with_no_evals() && run.exit == 2)
        .expect("the recorded rejection of --no-evals");
    let output = at_commit
        .iter()
        .find(|run| !run.with_no_evals() && run.exit == 0)
        .and_then(|run| run.stdout_file.clone())
        .expect("the recorded output");
    let entries = producer_entries(&fixtures, &output);
    let mut data = StandInData::new(false).with_key(KEY, entries.clone(), entries);
    data.rejection_stderr = rejection.stderr_lines.clone();
    let repository = StandInRepository::new();
    let head = repository.commit_producer_with(
        &data,
        &[
            (".github/configs/amd-master.yaml", format!("{KEY}: {{}}\n")),
            (".github/configs/nvidia-master.yaml", "{}\n".to_string()),
            (".github/configs/runners.yaml", "mi355x: []\n".to_string()),
            (
                ".github/configs/deprecated/old-master.yaml",
                "{}\n".to_string(),
            ),
        ],
    );
    (repository, head)
}

/// The entries the matching table expects for the real rows of 2026-02-27, in row order.
fn expected_points() -> Vec<Value> {
    let cases = matching_cases(&inferencex_fixtures());
    let entry_of_row = |index: u64| {
        let case = cases
            .iter()
            .find(|case| {
                case["public_row"]["file"] == "public/benchmarks-dsr1-sample.json"
                    && case["public_row"]["index"] == index
            })
            .expect("a table case of the row");
        expected_entries(case)[0]
    };
    vec![
        json!({"row": 0, "entry": entry_of_row(0)}),
        json!({"row": 1, "entry": entry_of_row(2)}),
    ]
}

fn run_with(
    server: &FeedServer,
    repository: &StandInRepository,
    candidates: &[Value],
    review: Option<Value>,
    config: &str,
) -> KlaudRun {
    let mut runner = VerifyBaselinesRunner::new(&repository.path);
    runner.config = format!("{}{config}", server.config());
    runner
        .environment
        .push(("GITHUB_REPOSITORY".into(), REPOSITORY.into()));
    if let Some(review) = review {
        runner
            .environment
            .push(("KLAUD_REVIEW".into(), review.to_string()));
    }
    runner.run(&json!(candidates))
}

fn reason(run: &KlaudRun, id: &Value) -> (String, String) {
    let record = run.candidate(id.as_str().unwrap());
    assert_eq!(record["status"], "deferred", "{record}");
    (
        record["reason"]["code"].as_str().unwrap().to_string(),
        record["reason"]["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_proceeding_candidate_gets_its_head_from_workflow_info_and_points_from_benchmarks_and_is_verified()
 {
    let (repository, head) = producer_repository();
    let rows = dsr1_rows();
    let mut published = Published::default();
    published.benchmarks.insert(DSR1.into(), rows.clone());
    // Derived: the producer run of the rows mapped to the stand-in of its producer commit, in
    // the newer shape, the run id as a number.
    published.workflow_info.insert(
        "2026-02-27".into(),
        json!({"runConfigs": [{"github_run_id": 22469096331_u64, "head_sha": head}]}),
    );
    let server = FeedServer::start(published);
    let proceeding = discovered(
        &format!("configs/amd-master.yaml:{KEY}"),
        catalog_row_of(&rows[0], "lmsysorg/sglang:v0.5.9-rocm700-mi35x"),
    );
    let held_back = discovered(
        "configs/nvidia-master.yaml:dsr1-fp8-gb200-dynamo-trt",
        catalog_row_of(
            &rows[3],
            "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2",
        ),
    );
    let review = json!({"decisions": [
        decision(&proceeding, "proceed"),
        decision(&held_back, "duplicate"),
    ]});
    let candidates = [proceeding.clone(), held_back.clone()];
    let run = run_with(&server, &repository, &candidates, Some(review), "");
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);

    let record = run.candidate(proceeding["id"].as_str().unwrap());
    assert_eq!(record["status"], "verified", "{record}\n{}", run.stdout);
    let baseline = &record["baseline"];
    assert_eq!(baseline["producer"]["head"], json!(head));
    assert_eq!(
        baseline["producer"]["args"],
        json!([
            "test-config",
            "--config-keys",
            KEY,
            "--config-files",
            ".github/configs/amd-master.yaml",
            ".github/configs/nvidia-master.yaml",
            "--runner-config",
            ".github/configs/runners.yaml"
        ])
    );
    // Every row of the family on the source's date, as published: the real rows 0 and 2.
    assert_eq!(baseline["points"], json!([rows[0], rows[2]]));
    assert_eq!(record["points"], json!(expected_points()));
    assert_eq!(record["producer"]["head"], json!(head));
    // The recorded producer predates --no-evals: rejected once, then run without it.
    assert_eq!(record["producer"]["fallback"], true);
    let producer_runs = run.baselines.as_ref().unwrap()["producer-runs"].clone();
    assert_eq!(
        producer_runs.as_array().unwrap().len(),
        2,
        "{producer_runs}"
    );
    assert_eq!(producer_runs[1]["args"], baseline["producer"]["args"]);

    // The candidate the review held back is not looked up: no request names its date.
    let (code, message) = reason(&run, &held_back["id"]);
    assert_eq!(code, "not-proceeding");
    assert_eq!(
        message,
        "the review judged it a duplicate (pull requests #41): #41 already bumps this image"
    );
    assert_eq!(
        server.requests(),
        [
            benchmarks_target(DSR1, "2026-02-27"),
            workflow_info_target("2026-02-27")
        ]
    );
    assert_eq!(run.outputs["feed-requests"], "2");
    assert_eq!(run.baselines.as_ref().unwrap()["feed-requests"], 2);
    assert_eq!(run.output_json("verified"), json!([proceeding["id"]]));
    assert_eq!(run.output_json("deferred"), json!([held_back["id"]]));
    assert_eq!(
        run.output_json("deferred-reasons"),
        json!({"not-proceeding": 1})
    );
    assert!(
        run.summary
            .contains("1 baseline(s) of discovered candidates looked up in the public feeds (2 feed request(s))"),
        "{}",
        run.summary
    );
}

#[test]
fn the_real_older_workflow_info_maps_a_run_to_its_head_which_repo_path_must_hold() {
    let (repository, _) = producer_repository();
    let answer = read_document(
        &inferencex_fixtures(),
        "public/workflow-info-2026-05-05.json",
    );
    let mut published = Published::default();
    published
        .workflow_info
        .insert("2026-05-05".into(), answer.clone());
    // Derived: a row of the run that answer describes (25356359090, dsv4-fp8-h200-vllm-mtp),
    // made from the first entry the producer printed at its head.
    let entry = &producer_entries(
        &inferencex_fixtures(),
        "producer/new-9d5bbb82a_sn_dsv4-fp8-h200-vllm-mtp_no-evals.json",
    )[0];
    let row = json!({
        "hardware": "h200", "framework": "vllm", "model": "dsv4", "precision": "fp8",
        "spec_method": "mtp", "disagg": false, "is_multinode": false,
        "prefill_tp": entry["tp"], "prefill_ep": entry["ep"], "prefill_dp_attention": entry["dp-attn"],
        "prefill_num_workers": 0, "decode_tp": entry["tp"], "decode_ep": entry["ep"],
        "decode_dp_attention": entry["dp-attn"], "decode_num_workers": 0,
        "isl": entry["isl"], "osl": entry["osl"], "conc": entry["conc"], "image": entry["image"],
        "date": "2026-05-05",
        "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/25356359090/attempts/1"
    });
    published.benchmarks.insert(DSV4.into(), vec![row.clone()]);
    let server = FeedServer::start(published);
    let candidate = discovered(
        "configs/nvidia-master.yaml:dsv4-fp8-h200-vllm-mtp",
        catalog_row_of(&row, entry["image"].as_str().unwrap()),
    );
    let run = run_with(
        &server,
        &repository,
        std::slice::from_ref(&candidate),
        None,
        "",
    );
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);
    let record = run.candidate(candidate["id"].as_str().unwrap());
    // changelogs[] workflow_run_id "25356359090" → head_ref 9d5bbb82a…, which this stand-in
    // repository does not hold.
    assert_eq!(
        answer["changelogs"][0]["head_ref"],
        "9d5bbb82a1d648054e300003efb5692433f0fee8"
    );
    assert_eq!(
        record["producer"]["head"],
        answer["changelogs"][0]["head_ref"]
    );
    assert_eq!(
        record["reason"]["code"], "producer-head-missing",
        "{record}"
    );
    assert_eq!(run.producer_runs(), 0);
}

#[test]
fn rows_that_cannot_be_proven_defer_their_candidate_with_the_reason() {
    let (repository, _) = producer_repository();
    let mut rows = dsr1_rows();
    // Derived: row 4 published by a run of another repository.
    rows[4]["run_url"] =
        json!("https://github.com/someone/InferenceX/actions/runs/21785935852/attempts/2");
    // Derived: row 9 published by a second run of its day.
    rows[9]["run_url"] =
        json!("https://github.com/SemiAnalysisAI/InferenceX/actions/runs/21640109999/attempts/1");
    let head = |digit: char| digit.to_string().repeat(40);
    let mut published = Published::default();
    published.benchmarks.insert(DSR1.into(), rows.clone());
    // Derived: run 21701654125 named with two heads; runs 21640109636 and 21640109999 with one
    // head each, but not the same one (the older shape, ids as strings).
    published.workflow_info.insert(
        "2026-02-05".into(),
        json!({"runConfigs": [
            {"github_run_id": "21701654125", "head_sha": head('a')},
            {"github_run_id": "21701654125", "head_sha": head('b')},
        ]}),
    );
    published.workflow_info.insert(
        "2026-02-03".into(),
        json!({"changelogs": [
            {"workflow_run_id": "21640109636", "head_ref": head('c')},
            {"workflow_run_id": "21640109999", "head_ref": head('d')},
        ]}),
    );
    let server = FeedServer::start(published);
    let image = "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2";
    let two_heads = discovered(
        "configs/nvidia-master.yaml:dsr1-fp8-gb200-dynamo-trt-mtp",
        catalog_row_of(&rows[3], image),
    );
    let foreign = discovered(
        "configs/nvidia-master.yaml:dsr1-fp8-gb300-dynamo-trt",
        catalog_row_of(&rows[4], image),
    );
    let heads_differ = discovered(
        "configs/nvidia-master.yaml:dsr1-fp4-gb300-dynamo-trt",
        catalog_row_of(&rows[7], image),
    );
    let run = run_with(
        &server,
        &repository,
        &[two_heads.clone(), foreign.clone(), heads_differ.clone()],
        None,
        "",
    );
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        reason(&run, &two_heads["id"]),
        (
            "unproven-baseline".to_string(),
            format!(
                "run 21701654125 has 2 heads in the workflow-info of 2026-02-05: {}, {}",
                head('a'),
                head('b')
            )
        )
    );
    let (code, message) = reason(&run, &foreign["id"]);
    assert_eq!(code, "unproven-baseline");
    assert!(
        message.starts_with(
            "published row 0 is unproven: run_url \
             'https://github.com/someone/InferenceX/actions/runs/21785935852/attempts/2' is not \
             a run of SemiAnalysisAI/InferenceX"
        ),
        "{message}"
    );
    assert_eq!(
        reason(&run, &heads_differ["id"]),
        (
            "producer-heads-differ".to_string(),
            format!(
                "the family's rows of 2026-02-03 come from 2 producer heads: {} (run 21640109636); {} (run 21640109999)",
                head('c'),
                head('d')
            )
        )
    );
    // No head was proven, so nothing was listed or run; a row of another repository needs no
    // workflow-info.
    assert_eq!(run.producer_runs(), 0);
    assert!(
        !server
            .requests()
            .contains(&workflow_info_target("2026-02-07"))
    );
}

#[test]
fn a_failed_feed_defers_the_candidates_it_concerns_and_only_those() {
    let (repository, head) = producer_repository();
    let rows = dsr1_rows();
    let mut published = Published::default();
    published.benchmarks.insert(DSR1.into(), rows.clone());
    published.workflow_info.insert(
        "2026-02-27".into(),
        json!({"runConfigs": [{"github_run_id": 22469096331_u64, "head_sha": head}]}),
    );
    published
        .failures
        .insert((BENCHMARKS, "2026-02-05".into()), Failure::Status(500));
    published
        .failures
        .insert((BENCHMARKS, "2026-02-07".into()), Failure::NotJson);
    published
        .failures
        .insert((WORKFLOW_INFO, "2026-02-03".into()), Failure::Status(503));
    let server = FeedServer::start(published);
    let image = "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2";
    let fine = discovered(
        &format!("configs/amd-master.yaml:{KEY}"),
        catalog_row_of(&rows[0], "lmsysorg/sglang:v0.5.9-rocm700-mi35x"),
    );
    let unavailable = discovered(
        "configs/nvidia-master.yaml:dsr1-fp8-gb200-dynamo-trt-mtp",
        catalog_row_of(&rows[3], image),
    );
    let not_json = discovered(
        "configs/nvidia-master.yaml:dsr1-fp8-gb300-dynamo-trt",
        catalog_row_of(&rows[4], image),
    );
    let no_heads = discovered(
        "configs/nvidia-master.yaml:dsr1-fp4-gb300-dynamo-trt",
        catalog_row_of(&rows[7], image),
    );
    let candidates = [
        fine.clone(),
        unavailable.clone(),
        not_json.clone(),
        no_heads.clone(),
    ];
    let run = run_with(&server, &repository, &candidates, None, "");
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.output_json("verified"), json!([fine["id"]]));
    let (code, message) = reason(&run, &unavailable["id"]);
    assert_eq!(code, "feed-failed");
    assert!(
        message.ends_with(&format!(
            "{}: HTTP 500 after 3 request(s): upstream unavailable",
            benchmarks_target(DSR1, "2026-02-05")
        )),
        "{message}"
    );
    let (code, message) = reason(&run, &not_json["id"]);
    assert_eq!(code, "feed-failed");
    assert!(message.contains(": not JSON: "), "{message}");
    let (code, message) = reason(&run, &no_heads["id"]);
    assert_eq!(code, "feed-failed");
    assert!(
        message.contains(&format!(
            "{}: HTTP 503 after 3 request(s)",
            workflow_info_target("2026-02-03")
        )),
        "{message}"
    );
    // 2 for the verified one, 3 for the failing benchmarks, 1 for the answer that is not
    // JSON (not worth repeating), 1 + 3 for the failing workflow-info.
    assert_eq!(server.requests().len(), 10, "{:?}", server.requests());
    assert_eq!(run.outputs["feed-requests"], "10");
}

#[test]
fn a_proceed_without_a_display_model_is_an_invalid_review_that_verifies_nothing() {
    let (repository, _) = producer_repository();
    let server = FeedServer::start(Published::default());
    let rows = dsr1_rows();
    let candidate = discovered(
        &format!("configs/amd-master.yaml:{KEY}"),
        catalog_row_of(&rows[0], "lmsysorg/sglang:v0.5.9-rocm700-mi35x"),
    );
    let review = json!({"decisions": [decision(&candidate, "proceed")]});
    let run = run_with(
        &server,
        &repository,
        std::slice::from_ref(&candidate),
        Some(review),
        "  models: {}\n",
    );
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);
    let warning = format!(
        "::warning::the review is invalid, so no baseline is verified (invalid-review-output): \
         decisions[0].baseline-model: the proceed for discovered candidate '{}' must name the \
         display model of model 'dsr1' (discovery.models names none)",
        candidate["id"].as_str().unwrap()
    );
    assert!(run.stdout.contains(&warning), "{}", run.stdout);
    let (code, _) = reason(&run, &candidate["id"]);
    assert_eq!(code, "invalid-review-output");
    assert_eq!(server.requests(), Vec::<String>::new());
    assert_eq!(run.producer_runs(), 0);

    // Naming it in the review is enough.
    let mut named = decision(&candidate, "proceed");
    named["baseline-model"] = json!(DSR1);
    let run = run_with(
        &server,
        &repository,
        std::slice::from_ref(&candidate),
        Some(json!({ "decisions": [named] })),
        "  models: {}\n",
    );
    let (code, _) = reason(&run, &candidate["id"]);
    assert_eq!(code, "no-published-baseline", "{}", run.stdout);
    assert_eq!(server.requests(), [benchmarks_target(DSR1, "2026-02-27")]);
}
