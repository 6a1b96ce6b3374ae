//! What the dashboard tests and benchmark share: klaud's dashboard issue as the fake holds it,
//! and a person ticking (or unticking) one of its boxes through the REST API, as GitHub's task
//! list does when someone clicks a box.

#![allow(dead_code)] // each including target uses a part of it

use super::fake_github::{FakeGitHubHandle, Person};

/// klaud's dashboard issue (author `bot`, label `label`): (number, body).
pub fn dashboard(server: &FakeGitHubHandle, bot: &str, label: &str) -> (u64, String) {
    server.with_state(|state| {
        let issues: Vec<_> = state
            .issues
            .values()
            .filter(|issue| issue.author == bot && issue.labels.iter().any(|l| l == label))
            .collect();
        assert_eq!(issues.len(), 1, "one dashboard issue");
        (issues[0].number, issues[0].body.clone().unwrap_or_default())
    })
}

/// `person` flips the box of issue `number` whose line contains `marker`, with a PATCH of the
/// whole body as GitHub's web page sends it.
pub fn toggle(server: &FakeGitHubHandle, person: Person, number: u64, marker: &str) {
    let body = server.with_state(|state| state.issues[&number].body.clone().unwrap_or_default());
    let mut found = false;
    let edited: Vec<String> = body
        .lines()
        .map(|line| {
            if !line.contains(marker) {
                return line.to_string();
            }
            found = true;
            if line.contains("- [x]") {
                line.replacen("- [x]", "- [ ]", 1)
            } else {
                line.replacen("- [ ]", "- [x]", 1)
            }
        })
        .collect();
    assert!(found, "no box {marker} in\n{body}");
    let url = format!("{}/repos/acme/bench/issues/{number}", server.base_url());
    let token = person.token.to_string();
    let body = edited.join("\n") + "\n";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = runtime.block_on(async move {
        super::fake_github::http_client()
            .patch(url)
            .bearer_auth(token)
            .header("user-agent", "klaud-dashboard-tests")
            .json(&serde_json::json!({ "body": body }))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert!(status.is_success(), "{status}");
}
