//! The world each recording starts from, seeded into the fake: the repository, its branches,
//! commits and files, labels and issues, and the account acting. Everything is derived from the
//! recording's own requests and answers (what a later answer shows was there before the first
//! request); where a recording cannot show a detail (a commit's files, an issue's title), the
//! world makes one up and says so.

use klaud_fake_github::{CommitSpec, IssueSpec, RepoState, Role, Timestamp};
use serde_json::Value;

use super::compare::Shas;
use super::recording::Exchange;

/// The account every recording acts as: the `user` of the issues it opens, the author of its
/// commits, the `creator` of its statuses.
pub const ACTOR: &str = "octokit-fixture-user-a";

/// The token the recorder's requests carry once normalized.
const RECORDED_TOKEN: &str = "0000000000000000000000000000000000000001";

/// 2017-10-10T16:00:00Z, the time the recorder gives every date: the fake's clock, so its answers
/// do not change from one run to the next.
const RECORDED_TIME: Timestamp = Timestamp(1_507_651_200);

/// A seeded repository and the recorded shas of the objects seeded.
pub struct World {
    pub state: RepoState,
    pub shas: Shas,
}

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("no world is derived for the scenario {0}")]
    Unknown(String),
    #[error("{scenario}: the recording does not show {what}")]
    NotRecorded {
        scenario: &'static str,
        what: &'static str,
    },
}

/// The world `scenario`'s recording starts from.
pub fn world(scenario: &str, recording: &[Exchange]) -> Result<World, WorldError> {
    let state = repository(recording);
    let plain = |state| {
        Ok(World {
            state,
            shas: Shas::default(),
        })
    };
    match scenario {
        // The commit the write made has no parent: the repository was empty, and the answer's
        // `?ref=main` names its default branch.
        "create-file" | "add-labels-to-issue" | "errors" => plain(state),
        "get-repository" => get_repository(state, recording),
        "get-content" => get_content(state, recording),
        "git-refs" => git_refs(state, recording),
        "labels" => labels(state, recording),
        "lock-issue" => lock_issue(state),
        "paginate-issues" => paginate_issues(state, recording),
        "create-status" => create_status(state, recording),
        other => Err(WorldError::Unknown(other.to_string())),
    }
}

/// The empty repository of the first request's path, owned by an organization `ACTOR` is an
/// admin member of (the recorded repository's `owner` is an `Organization`, `ACTOR`'s
/// `author_association` is `MEMBER`, and its `permissions` are all true).
fn repository(recording: &[Exchange]) -> RepoState {
    let path = recording
        .first()
        .map(|first| first.path.as_str())
        .unwrap_or("");
    let mut segments = path.trim_start_matches('/').split('/').skip(1);
    let owner = segments.next().unwrap_or("octokit-fixture-org");
    let name = segments.next().unwrap_or("scenario");
    RepoState::empty(owner, name)
        .owned_by_organization(&[ACTOR])
        .with_role(ACTOR, Role::Admin)
        .with_token(RECORDED_TOKEN, ACTOR)
        .with_now(RECORDED_TIME)
}

/// The repository as the answer describes it: its default branch and topics.
fn get_repository(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let answer = &recording
        .first()
        .ok_or(WorldError::NotRecorded {
            scenario: "get-repository",
            what: "a repository",
        })?
        .response;
    let default_branch = answer["default_branch"].as_str().unwrap_or("main");
    state = state.with_default_branch(default_branch);
    state.topics = answer["topics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    Ok(World {
        state,
        shas: Shas::default(),
    })
}

/// `master` holding the file the second request reads raw, with the text GitHub answered.
fn get_content(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let missing = WorldError::NotRecorded {
        scenario: "get-content",
        what: "a file read raw",
    };
    let read = recording.get(1).ok_or(missing)?;
    let path = read.path.rsplit("/contents/").next().unwrap_or_default();
    let content = read.response.as_str().unwrap_or_default();
    let commit = state.add_commit(None, CommitSpec::by(ACTOR).file(path, content));
    state = state.with_default_branch("master");
    state.set_branch("master", &commit);
    Ok(World {
        state,
        shas: Shas::default(),
    })
}

/// Two commits: `main`'s (the first listing) on top of the one the test branch is created at
/// (the ref creation's `sha`). The branch then moves to `main`'s without `force`, which GitHub
/// allowed, so `main`'s descends from the other. Their files are made up.
fn git_refs(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let main_sha = recording
        .first()
        .and_then(|listing| listing.response.pointer("/0/object/sha"))
        .and_then(Value::as_str);
    let created_at = recording
        .get(1)
        .and_then(|creation| creation.body.pointer("/sha"))
        .and_then(Value::as_str);
    let (Some(main_sha), Some(created_at)) = (main_sha, created_at) else {
        return Err(WorldError::NotRecorded {
            scenario: "git-refs",
            what: "main's sha and the created ref's",
        });
    };
    let first = state.add_commit(None, CommitSpec::by(ACTOR).file("1.md", "first"));
    let second = state.add_commit(Some(&first), CommitSpec::by(ACTOR).file("2.md", "second"));
    state.set_branch("main", &second);
    let mut shas = Shas::default();
    shas.pair(created_at, &first);
    shas.pair(main_sha, &second);
    Ok(World { state, shas })
}

/// The labels of the first listing: GitHub's defaults.
fn labels(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let listed = recording
        .first()
        .and_then(|listing| listing.response.as_array())
        .ok_or(WorldError::NotRecorded {
            scenario: "labels",
            what: "a label listing",
        })?;
    for label in listed {
        let name = label["name"].as_str().unwrap_or_default();
        state.add_label(
            name,
            label["color"].as_str().unwrap_or_default(),
            label["description"].as_str(),
        );
        if let Some(added) = state.labels.get_mut(name) {
            added.default = label["default"].as_bool().unwrap_or(false);
        }
    }
    Ok(World {
        state,
        shas: Shas::default(),
    })
}

/// Issue 1, which the recording locks and unlocks; its title is made up.
fn lock_issue(mut state: RepoState) -> Result<World, WorldError> {
    state.add_issue(IssueSpec {
        title: "An issue to lock".to_string(),
        author: ACTOR.to_string(),
        ..IssueSpec::default()
    });
    Ok(World {
        state,
        shas: Shas::default(),
    })
}

/// The issues of every page, opened in the order of their numbers, and the repository id the
/// recorded `Link` headers name (`/repositories/{id}/issues`).
fn paginate_issues(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let link = recording
        .first()
        .and_then(|first| first.answer_header("link"))
        .unwrap_or_default();
    state.repository_id = link
        .split("/repositories/")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|id| id.parse().ok())
        .ok_or(WorldError::NotRecorded {
            scenario: "paginate-issues",
            what: "a repository id in a Link header",
        })?;
    let mut issues: Vec<&Value> = recording
        .iter()
        .filter_map(|page| page.response.as_array())
        .flatten()
        .collect();
    issues.sort_by_key(|issue| issue["number"].as_u64());
    for issue in issues {
        state.add_issue(IssueSpec {
            title: issue["title"].as_str().unwrap_or_default().to_string(),
            body: issue["body"].as_str().map(str::to_string),
            author: issue["user"]["login"].as_str().unwrap_or(ACTOR).to_string(),
            ..IssueSpec::default()
        });
    }
    Ok(World {
        state,
        shas: Shas::default(),
    })
}

/// The commit the statuses are set on (the first request's path); its file is made up.
fn create_status(mut state: RepoState, recording: &[Exchange]) -> Result<World, WorldError> {
    let recorded_sha = recording
        .first()
        .and_then(|first| first.path.rsplit("/statuses/").next())
        .ok_or(WorldError::NotRecorded {
            scenario: "create-status",
            what: "a commit's sha",
        })?;
    let commit = state.add_commit(None, CommitSpec::by(ACTOR).file("README.md", "statuses"));
    state.set_branch("main", &commit);
    let mut shas = Shas::default();
    shas.pair(recorded_sha, &commit);
    Ok(World { state, shas })
}
