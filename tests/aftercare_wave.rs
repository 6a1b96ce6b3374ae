//! After-care end to end (contract §12) against the fake GitHub, the real binary for every step
//! (`tests/aftercare_wave/mod.rs`): a pull request validated by a planner wave (select, session,
//! a simulated agent, finish) that later conflicts gets one `refresh` session from `recover` and
//! no second; its dispatched job's `session` makes it a draft in progress with the base in
//! `session.json`; the Stop hook holds the agent until the sweep on its merge succeeded; `finish`
//! makes it ready and watched at the new head. A failing one gets a `repair` whose `session.json`
//! carries the failed job's log tail. A refresh whose agent gives up leaves an open draft waiting
//! for a maintainer, which the next pass leaves alone and the dashboard's *retry after-care*
//! hands back to after-care. An older after-care pull request of a family lets a newer candidate
//! be selected and stays open while it runs, and is closed as superseded by that candidate's
//! validated `finish`.

#![allow(clippy::disallowed_methods)] // the wave starts the klaud binary

#[path = "aftercare_wave/mod.rs"]
mod aftercare_wave;
#[path = "dashboard_support/mod.rs"]
mod dashboard_support;
use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use aftercare_wave::{Job, Wave};
use fake_github::{JobSpec, MAINTAINER_ANN, Mergeability, PullState, RunSpec};
use klaud::core::aftercare::{AftercareState, NeedsMaintainerBecause, SessionKind};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::{BOT, SWEEP, World, branch, family, stored_ledger};
use serde_json::{Value, json};

const CONFIGURATION: &str = "bot: klaud-bot\n";

fn labels(wave: &Wave, number: u64) -> Vec<String> {
    wave.pull(number).labels
}

/// A validated pull request of `candidate` whose base moved under it so that it conflicts: the
/// wave, its number and the default branch's new head.
fn conflicting(configuration: &str, candidate: &str) -> (Wave, u64, String) {
    let mut world = World::new();
    world
        .state
        .add_token(MAINTAINER_ANN.token, MAINTAINER_ANN.login);
    world
        .state
        .set_role(MAINTAINER_ANN.login, MAINTAINER_ANN.role.unwrap());
    let mut wave = Wave::start(world, configuration);
    let number = wave.validated_by_a_wave(candidate, &family(candidate));
    let validated = wave.pull(number);
    assert!(!validated.draft, "made ready by finish");
    assert_eq!(labels(&wave, number), ["klaud-finished"]);
    let record = stored_ledger(&wave.server)
        .aftercare_of(number)
        .cloned()
        .expect("watched");
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(
        record.validated_head.as_deref(),
        Some(validated.head_sha.as_str())
    );
    assert_eq!(record.sessions_used, 0);

    // A maintainer's change to the same file lands on main; GitHub says the pull request
    // conflicts.
    let main = wave.main_moves(&format!("configs/{candidate}.yaml"));
    wave.mergeability(number, Mergeability::Conflicting);
    (wave, number, main)
}

/// A recovery pass that starts one after-care session of `kind` for `candidate`; the run it
/// dispatched.
fn recover_starts(wave: &mut Wave, candidate: &str, kind: SessionKind) -> u64 {
    let pass = wave.recover(&format!("recover (starts a {kind})"), &[]);
    assert_eq!(pass.outputs()["aftercare-started"], "1");
    let aftercare = &pass.record()["plan"]["aftercare"][0];
    assert_eq!(aftercare["decided"], "started", "{aftercare}");
    assert_eq!(aftercare["kind"], kind.name());
    let dispatched = wave.dispatched();
    assert_eq!(dispatched.len(), 1, "{dispatched:?}");
    assert_eq!(dispatched[0].0, candidate);
    dispatched[0].1
}

#[test]
fn a_conflicting_validated_pull_request_is_refreshed_once_and_validated_again_at_its_merge() {
    let (mut wave, number, main) = conflicting(CONFIGURATION, "a");

    let dispatched = recover_starts(&mut wave, "a", SessionKind::Refresh);
    let again = wave.recover("recover (next pass)", &[]);
    assert_eq!(again.outputs()["aftercare-started"], "0");
    assert_eq!(
        again.record()["plan"]["aftercare"][0]["decided"],
        "session-open"
    );
    assert_eq!(wave.dispatched().len(), 1, "no second session");
    let ledger = stored_ledger(&wave.server);
    let live: Vec<_> = ledger.live_sessions().collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].kind, SessionKind::Refresh);

    // The dispatched candidate job adopts it: a draft in progress, the base in session.json.
    let job = wave.session("session (refresh)", "a", dispatched);
    let pull = wave.pull(number);
    assert!(pull.draft, "a draft again");
    assert_eq!(labels(&wave, number), ["klaud-in-progress"]);
    let context = job.context();
    assert_eq!(context["kind"], "refresh");
    assert_eq!(context["base"], json!({"branch": "main", "sha": main}));
    assert_eq!(context["pull-request"]["number"], number);
    assert!(context.get("evidence").is_none(), "{context}");

    // The agent merges main and pushes; GitHub computes it mergeable again; the sweep runs on
    // the merge. The Stop hook holds the agent until that sweep succeeded.
    let head = wave.agent_commits("a", "Merge main into klaud/auto-a", "configs/a.yaml", true);
    wave.mergeability(number, Mergeability::Mergeable);
    assert_eq!(wave.pull(number).head_sha, head);
    let sweep = wave.agent_starts(SWEEP, "a", &["sweep shard 1", "sweep shard 2"]);
    wave.agent_writes_outcome(
        &job,
        json!({"outcome": "validated", "pull-request": number}),
    );
    let running = wave.check_stop("check-stop (sweep on the merge running)", &job);
    wave.run_ends(sweep, "success");
    let succeeded = wave.check_stop("check-stop (sweep on the merge succeeded)", &job);
    let held = running
        .as_ref()
        .expect("held while the sweep on the new head runs");
    assert_eq!(held["decision"], "block");
    let reason = held["reason"].as_str().unwrap();
    assert!(reason.contains("run-sweep.yml"), "{reason}");
    assert_eq!(
        succeeded, None,
        "let go once the sweep on the new head succeeded"
    );
    let blocks = [&running, &succeeded]
        .iter()
        .filter(|a| a.is_some())
        .count();
    assert_eq!(blocks, 1);

    let finished = wave.finish("finish (refresh validated)", &job);
    assert_eq!(finished["plan"]["outcome"], "validated", "{finished}");
    let pull = wave.pull(number);
    assert!(!pull.draft, "ready again");
    assert_eq!(pull.state, PullState::Open);
    assert_eq!(pull.head_sha, head);
    assert_eq!(labels(&wave, number), ["klaud-finished"]);
    let ledger = stored_ledger(&wave.server);
    let record = ledger.aftercare_of(number).unwrap();
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(record.validated_head.as_deref(), Some(head.as_str()));
    assert_eq!(record.sessions_used, 1);
    let session = ledger.sessions.last().unwrap();
    assert_eq!(
        (session.kind, session.state, session.outcome),
        (
            SessionKind::Refresh,
            SessionState::Finished,
            Some(Outcome::Validated)
        )
    );
    assert!(ledger.claims.is_empty(), "the family's claim is released");

    // Watched again at its merge, mergeable and passing: the next pass starts nothing.
    let after = wave.recover("recover (after the refresh)", &[]);
    assert_eq!(after.outputs()["aftercare-started"], "0");
    assert_eq!(after.record()["plan"]["aftercare"][0]["decided"], "watched");
    assert_eq!(wave.dispatched().len(), 1);
}

/// A log of 40 numbered lines and the error that ended the job.
fn shard_log() -> String {
    (1..=40)
        .map(|line| format!("2026-01-01T00:00:{line:02}.0000000Z step output {line}\n"))
        .collect::<String>()
        + "2026-01-01T00:00:41.0000000Z Error: shard 2 ran out of memory\n"
}

#[test]
fn a_failing_validated_pull_request_gets_a_repair_whose_session_carries_the_failed_jobs_log_tail() {
    let configuration = "bot: klaud-bot\naftercare:\n  log-lines: 5\n";
    let mut wave = Wave::start(World::new(), configuration);
    let number = wave.validated_by_a_wave("b", &family("b"));
    let head = wave.pull(number).head_sha;

    // The bot's sweep runs again on the validated head; its second shard fails.
    let (run, failed_job) = wave.server.with_state(|state| {
        let run = state.add_run(RunSpec {
            workflow: SWEEP.into(),
            head_branch: Some(branch("b")),
            head_sha: Some(head.clone()),
            event: "workflow_dispatch".into(),
            status: "completed".into(),
            conclusion: Some("failure".into()),
            actor: Some(BOT.into()),
            jobs: vec![
                JobSpec::completed("sweep shard 1", "success"),
                JobSpec::completed("sweep shard 2", "failure"),
            ],
            ..RunSpec::default()
        });
        let failed = state.jobs_of_run(run)[1].id;
        state.set_job_log(failed, &shard_log());
        (run, failed)
    });

    let dispatched = recover_starts(&mut wave, "b", SessionKind::Repair);
    let job: Job = wave.session("session (repair)", "b", dispatched);
    let text = job.context_text();
    eprintln!("session.json of the repair session:\n{text}");
    let context: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(context["kind"], "repair");
    assert_eq!(context["pull-request"]["number"], number);
    assert_eq!(
        context["pull-request"]["draft"], true,
        "as the session left it"
    );
    assert!(wave.pull(number).draft);
    assert_eq!(labels(&wave, number), ["klaud-in-progress"]);
    let evidence = context["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1, "the failed job only: {evidence:?}");
    let failed = &evidence[0];
    assert_eq!(failed["name"], "sweep shard 2");
    assert_eq!(failed["run-id"], run);
    assert_eq!(failed["job-id"], failed_job);
    assert_eq!(failed["conclusion"], "FAILURE");
    assert_eq!(failed["log"]["state"], "tail");
    assert_eq!(failed["log"]["lines"], 5);
    let tail = failed["log"]["text"].as_str().unwrap();
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(
        lines,
        [
            "2026-01-01T00:00:37.0000000Z step output 37",
            "2026-01-01T00:00:38.0000000Z step output 38",
            "2026-01-01T00:00:39.0000000Z step output 39",
            "2026-01-01T00:00:40.0000000Z step output 40",
            "2026-01-01T00:00:41.0000000Z Error: shard 2 ran out of memory",
        ]
    );
    assert!(!tail.contains("step output 36"), "earlier lines are cut");
    assert_eq!(
        failed["log"]["cut"],
        "earlier lines left out: the last 5 lines are given (aftercare.log-lines)"
    );
    let session = wave.requests_of("session (repair)")[0];
    assert_eq!(
        session.log_host_reads, 1,
        "the log read once, through the redirect"
    );
}

#[test]
fn a_refresh_whose_agent_gives_up_leaves_an_open_draft_for_a_maintainer_until_retry_aftercare() {
    let configuration = "bot: klaud-bot\naftercare:\n  cooldown-hours: 0\n";
    let (mut wave, number, _) = conflicting(configuration, "c");
    let dispatched = recover_starts(&mut wave, "c", SessionKind::Refresh);
    let job = wave.session("session (refresh)", "c", dispatched);

    // The agent tries, pushes what it has, and gives up.
    let head = wave.agent_commits("c", "klaud: partial merge of main", "notes/c.md", false);
    wave.agent_writes_outcome(
        &job,
        json!({"outcome": "failed", "reason-code": "conflict-unresolved", "pull-request": number}),
    );
    assert_eq!(
        wave.check_stop("check-stop (gave up)", &job),
        None,
        "a failed outcome lets it stop"
    );
    let finished = wave.finish("finish (refresh failed)", &job);
    assert_eq!(finished["plan"]["outcome"], "failed", "{finished}");
    let pull = wave.pull(number);
    assert_eq!(pull.state, PullState::Open, "never closed");
    assert!(pull.draft, "an open draft");
    assert_eq!(labels(&wave, number), ["klaud-needs-maintainer"]);
    assert_eq!(wave.branch_sha("c").as_deref(), Some(head.as_str()));
    assert!(wave.server.state().deleted_refs.is_empty());
    let record = stored_ledger(&wave.server)
        .aftercare_of(number)
        .cloned()
        .unwrap();
    assert_eq!(
        record.state,
        match record.state {
            AftercareState::NeedsMaintainer { since, .. } => AftercareState::NeedsMaintainer {
                since,
                because: NeedsMaintainerBecause::Ended(Outcome::Failed),
            },
            _ => panic!("waits for a maintainer: {:?}", record.state),
        }
    );

    // The next pass leaves it alone: not swept, nothing written for it.
    let from = wave.log_position();
    let next = wave.recover("recover (waiting for a maintainer)", &[]);
    assert_eq!(next.ids("swept"), Vec::<String>::new());
    assert!(next.ids("left-alone").contains(&"c".to_string()));
    assert_eq!(
        next.record()["plan"]["aftercare"][0]["decided"],
        "needs-maintainer"
    );
    assert_eq!(
        wave.writes_since(from),
        Vec::<String>::new(),
        "nothing written"
    );
    assert_eq!(next.outputs()["aftercare-started"], "0");
    let pull = wave.pull(number);
    assert_eq!((pull.state, pull.draft), (PullState::Open, true));
    assert_eq!(wave.branch_sha("c").as_deref(), Some(head.as_str()));

    // A maintainer ticks *retry after-care* on the dashboard: one more session is granted, and
    // the pull request, still conflicting, gets it.
    wave.status_dashboard("status --dashboard");
    let (issue, body) = dashboard_support::dashboard(&wave.server, BOT, "klaud-dashboard");
    let marker = format!("klaud:retry-aftercare:{number}");
    assert!(body.contains(&marker), "{body}");
    dashboard_support::toggle(&wave.server, MAINTAINER_ANN, issue, &marker);
    let granted = wave.recover("recover --dashboard (retry after-care)", &["--dashboard"]);
    assert_eq!(
        granted.outputs()["aftercare-started"],
        "1",
        "{}",
        granted.summary()
    );
    let dispatched = wave.dispatched();
    assert_eq!(dispatched.len(), 2, "the granted session: {dispatched:?}");
    assert_eq!(dispatched[1].0, "c");
    let ledger = stored_ledger(&wave.server);
    let record = ledger.aftercare_of(number).unwrap();
    assert_eq!((record.sessions_used, record.granted), (2, 1));
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(labels(&wave, number), ["klaud-in-progress"]);
}

#[test]
fn an_older_after_care_pull_request_stays_open_while_a_newer_candidate_runs_and_is_closed_by_its_finish()
 {
    let family = "configs/x-master.yaml:tune";
    let mut wave = Wave::start(World::new(), CONFIGURATION);
    let older = wave.validated_by_a_wave("tune-1", family);

    // A newer candidate of the family is selectable while the older pull request waits in
    // after-care; the older candidate itself is not.
    let (selected, planner, selection) = wave.select(
        "select (newer candidate)",
        &[("tune-1", family), ("tune-2", family)],
    );
    assert_eq!(selected, ["tune-2"], "{selection}");
    assert_eq!(
        selection["candidates"][0]["decision"], "occupied",
        "{selection}"
    );
    let job = wave.session("session (newer candidate)", "tune-2", planner);
    let newer = wave.agent_validates(&job);

    // While it runs, the older pull request stays open with its branch.
    let from = wave.log_position();
    let meanwhile = wave.recover("recover (while the newer one runs)", &[]);
    let about_the_older: Vec<String> = wave
        .writes_since(from)
        .into_iter()
        .filter(|write| {
            write.ends_with(&format!("/{older}"))
                || write.contains(&format!("/{older}/"))
                || write.contains("tune-1")
                || write.starts_with("POST graphql")
        })
        .collect();
    assert_eq!(
        about_the_older,
        Vec::<String>::new(),
        "the older one untouched"
    );
    assert_eq!(meanwhile.outputs()["aftercare-started"], "0");
    let pull = wave.pull(older);
    assert_eq!((pull.state, pull.draft), (PullState::Open, false));
    assert_eq!(labels(&wave, older), ["klaud-finished"]);
    let older_head = wave.branch_sha("tune-1").expect("its branch");
    assert!(
        wave.comments(older)
            .iter()
            .all(|c| !c.contains("Superseded"))
    );

    let finished = wave.finish("finish (newer validated, supersedes)", &job);
    assert_eq!(finished["plan"]["outcome"], "validated", "{finished}");
    wave.ended(planner);
    let pull = wave.pull(older);
    assert_eq!(pull.state, PullState::Closed, "closed as superseded");
    assert_eq!(pull.closed_by.as_deref(), Some(BOT));
    assert!(
        wave.comments(older)
            .iter()
            .any(|comment| comment.contains(&format!("Superseded by #{newer}"))),
        "{:?}",
        wave.comments(older)
    );
    assert_eq!(wave.branch_sha("tune-1"), None, "its branch deleted");
    let deleted = wave.server.state().deleted_refs;
    assert!(
        deleted
            .iter()
            .any(|r| r.name == format!("refs/heads/{}", branch("tune-1")) && r.sha == older_head),
        "{deleted:?}"
    );
    let pull = wave.pull(newer);
    assert_eq!((pull.state, pull.draft), (PullState::Open, false));
    assert_eq!(labels(&wave, newer), ["klaud-finished"]);
    let ledger = stored_ledger(&wave.server);
    assert_eq!(
        ledger
            .aftercare_of(newer)
            .map(|record| record.state.clone()),
        Some(AftercareState::Watched)
    );
}
