//! The differences the fake is allowed, each with its reason: where GitHub itself answers
//! otherwise today than when the session was recorded.

/// One allowed difference: the scenario, the exchange (from 0) and where in its answer.
pub struct Allowed {
    pub scenario: &'static str,
    pub exchange: usize,
    /// `status`, `header <name>` or the JSON pointer of a body value.
    pub at: &'static str,
    pub reason: &'static str,
}

pub const ALLOWED: &[Allowed] = &[Allowed {
    scenario: "errors",
    exchange: 0,
    at: "/documentation_url",
    reason: "GitHub has since moved its REST reference from /rest/reference/<category> to \
             /rest/<category>/<page>; the fake links today's page of the same operation \
             (https://docs.github.com/rest/issues/labels#create-a-label)",
}];
