//! Pagination exactly like GitHub: `per_page` (default 30, at most 100) and `page` (from 1), and
//! a `Link` header of absolute URLs (`prev`, `next`, `last`, `first`) that keeps every other
//! query parameter of the request and names the repository by its id
//! (`/repositories/{id}/issues?page=2`). Also the query-string parsing the routes share.

use super::server::RequestContext;

/// The query string as ordered, decoded pairs.
#[derive(Clone, Debug, Default)]
pub struct QueryParams {
    pub pairs: Vec<(String, String)>,
}

impl QueryParams {
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(key), percent_decode(value))
            })
            .collect();
        QueryParams { pairs }
    }

    /// The last value given for `key`, as most web frameworks (and GitHub) read it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// A non-empty value for `key`.
    pub fn filter(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|value| !value.is_empty())
    }
}

/// Decodes `%XX` escapes and `+` as a space.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => decoded.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3])
                    .ok()
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                match hex {
                    Some(byte) => {
                        decoded.push(byte);
                        index += 2;
                    }
                    None => decoded.push(b'%'),
                }
            }
            byte => decoded.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// Encodes everything but unreserved characters, as GitHub's own links do.
pub fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The requested page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub per_page: usize,
    pub page: usize,
}

pub const DEFAULT_PER_PAGE: usize = 30;
pub const MAX_PER_PAGE: usize = 100;

impl Page {
    pub fn from_query(query: &QueryParams) -> Self {
        let per_page = query
            .get("per_page")
            .and_then(|value| value.parse::<usize>().ok())
            .filter(|value| *value > 0)
            .map(|value| value.min(MAX_PER_PAGE))
            .unwrap_or(DEFAULT_PER_PAGE);
        let page = query
            .get("page")
            .and_then(|value| value.parse::<usize>().ok())
            .filter(|value| *value > 0)
            .unwrap_or(1);
        Page { per_page, page }
    }

    pub fn offset(&self) -> usize {
        (self.page - 1).saturating_mul(self.per_page)
    }

    /// The items of this page among the first `reachable` items.
    pub fn slice<'a, T>(&self, items: &'a [T], reachable: usize) -> &'a [T] {
        let end_of_reachable = reachable.min(items.len());
        let start = self.offset().min(end_of_reachable);
        let end = (start + self.per_page).min(end_of_reachable);
        &items[start..end]
    }
}

/// GitHub's `Link` header for a listing of `reachable` items, or `None` when one page holds all.
pub fn link_header(
    context: &RequestContext,
    path: &str,
    query: &QueryParams,
    page: Page,
    reachable: usize,
) -> Option<String> {
    let last_page = reachable.div_ceil(page.per_page).max(1);
    let url_for = |number: usize| {
        let mut pairs: Vec<(String, String)> = query
            .pairs
            .iter()
            .filter(|(key, _)| key != "page")
            .cloned()
            .collect();
        pairs.push(("page".to_string(), number.to_string()));
        let encoded: Vec<String> = pairs
            .iter()
            .map(|(key, value)| format!("{}={}", percent_encode(key), percent_encode(value)))
            .collect();
        format!("{}?{}", context.link_url(path), encoded.join("&"))
    };
    let mut relations = Vec::new();
    if page.page > 1 {
        relations.push(format!("<{}>; rel=\"prev\"", url_for(page.page - 1)));
    }
    if page.page < last_page {
        relations.push(format!("<{}>; rel=\"next\"", url_for(page.page + 1)));
        relations.push(format!("<{}>; rel=\"last\"", url_for(last_page)));
    }
    if page.page > 1 {
        relations.push(format!("<{}>; rel=\"first\"", url_for(1)));
    }
    (!relations.is_empty()).then(|| relations.join(", "))
}

/// Answers a listing page of `items` with GitHub's `Link` header, rendering only the page's
/// items (a listing of 10,000 pull requests renders 100, not 10,000, per page).
pub fn rendered_page_of<T>(
    context: &RequestContext,
    uri: &axum::http::Uri,
    items: &[T],
    render: impl Fn(&T) -> serde_json::Value,
) -> axum::response::Response {
    let query = QueryParams::parse(uri.query());
    let page = Page::from_query(&query);
    let body =
        serde_json::Value::Array(page.slice(items, items.len()).iter().map(render).collect());
    let link = link_header(context, uri.path(), &query, page, items.len());
    super::errors::paged_response(&body, link)
}

/// Answers a listing page of `items` with GitHub's `Link` header.
pub fn page_of(
    context: &RequestContext,
    uri: &axum::http::Uri,
    items: &[serde_json::Value],
) -> axum::response::Response {
    let query = QueryParams::parse(uri.query());
    let page = Page::from_query(&query);
    let body = serde_json::Value::Array(page.slice(items, items.len()).to_vec());
    let link = link_header(context, uri.path(), &query, page, items.len());
    super::errors::paged_response(&body, link)
}
