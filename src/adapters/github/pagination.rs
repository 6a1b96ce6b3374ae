//! Following GitHub's `Link` headers with `per_page=100`.
//!
//! A `next` link must point at the API's own origin: the client never sends its token anywhere
//! else, and a listing that cannot be followed is an error, never a shorter list.

use http::HeaderMap;
use serde::de::DeserializeOwned;

use super::error::GitHubError;
use super::transport::ApiRequest;
use super::{GitHubClient, decode};

/// More pages than any listing klaud makes can have; a guard against a `next` loop.
const MAX_PAGES: usize = 2_000;

impl GitHubClient {
    /// Every item of a listing answered as a JSON array.
    pub(super) async fn list_array<T: DeserializeOwned>(
        &self,
        first_path: &str,
    ) -> Result<Vec<T>, GitHubError> {
        let mut items = Vec::new();
        let mut path = with_per_page(first_path);
        for _ in 0..MAX_PAGES {
            let response = self.send(ApiRequest::get(&path)).await?;
            let page: Vec<T> = decode(&response, "GET", &path)?;
            items.extend(page);
            match next_link(&response.headers) {
                Some(next) => path = self.relative_to_api(&next, &path)?,
                None => return Ok(items),
            }
        }
        Err(too_many_pages(first_path))
    }

    /// Every item of a listing answered as `{"total_count", "<field>": [...]}`, with the
    /// `total_count` of the first page.
    pub(super) async fn list_envelope<T: DeserializeOwned>(
        &self,
        first_path: &str,
        field: &str,
    ) -> Result<(Vec<T>, u64), GitHubError> {
        let mut items = Vec::new();
        let mut total_count = None;
        let mut path = with_per_page(first_path);
        for _ in 0..MAX_PAGES {
            let response = self.send(ApiRequest::get(&path)).await?;
            let mut page: serde_json::Value = decode(&response, "GET", &path)?;
            let count = page.get("total_count").and_then(serde_json::Value::as_u64);
            total_count = total_count.or(count);
            let entries = page
                .get_mut(field)
                .map(serde_json::Value::take)
                .ok_or_else(|| GitHubError::Decode {
                    method: "GET".into(),
                    path: path.clone(),
                    detail: format!("no `{field}` in the answer"),
                })?;
            let entries: Vec<T> =
                serde_json::from_value(entries).map_err(|error| GitHubError::Decode {
                    method: "GET".into(),
                    path: path.clone(),
                    detail: crate::core::text::bounded(&error.to_string(), 300),
                })?;
            items.extend(entries);
            match next_link(&response.headers) {
                Some(next) => path = self.relative_to_api(&next, &path)?,
                None => return Ok((items, total_count.unwrap_or(0))),
            }
        }
        Err(too_many_pages(first_path))
    }

    /// The path and query of an absolute `next` URL on the API's origin.
    pub(super) fn relative_to_api(&self, next: &str, current: &str) -> Result<String, GitHubError> {
        let url = url::Url::parse(next).map_err(|_| link_error(current, "unreadable next link"))?;
        if url.origin() != self.api_base.origin() {
            return Err(link_error(current, "next link leaves the API's origin"));
        }
        Ok(match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        })
    }
}

fn link_error(path: &str, detail: &str) -> GitHubError {
    GitHubError::Decode {
        method: "GET".into(),
        path: path.to_string(),
        detail: detail.to_string(),
    }
}

fn too_many_pages(path: &str) -> GitHubError {
    link_error(path, "more than 2000 pages; refusing to follow further")
}

/// Adds `per_page=100` unless the path already names a page size.
pub fn with_per_page(path: &str) -> String {
    if path.contains("per_page=") {
        path.to_string()
    } else if path.contains('?') {
        format!("{path}&per_page=100")
    } else {
        format!("{path}?per_page=100")
    }
}

/// The `rel="next"` URL of a `Link` header.
pub fn next_link(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(http::header::LINK)?.to_str().ok()?;
    value.split(',').find_map(|part| {
        let mut pieces = part.split(';');
        let target = pieces.next()?.trim();
        let is_next = pieces.any(|parameter| {
            let parameter = parameter.trim();
            parameter == "rel=\"next\"" || parameter == "rel=next"
        });
        let target = target.strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::LINK, value.parse().unwrap());
        headers
    }

    #[test]
    fn the_next_link_is_found_among_others() {
        let headers = link(
            "<https://api.github.com/repositories/1/pulls?page=1>; rel=\"prev\", \
             <https://api.github.com/repositories/1/pulls?page=3&per_page=100>; rel=\"next\", \
             <https://api.github.com/repositories/1/pulls?page=9>; rel=\"last\"",
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("https://api.github.com/repositories/1/pulls?page=3&per_page=100")
        );
    }

    #[test]
    fn the_last_page_has_no_next_link() {
        let headers = link("<https://api.github.com/x?page=1>; rel=\"first\"");
        assert_eq!(next_link(&headers), None);
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    #[test]
    fn a_page_size_is_added_once() {
        assert_eq!(
            with_per_page("/repos/a/b/pulls"),
            "/repos/a/b/pulls?per_page=100"
        );
        assert_eq!(
            with_per_page("/repos/a/b/pulls?state=open"),
            "/repos/a/b/pulls?state=open&per_page=100"
        );
        assert_eq!(with_per_page("/x?per_page=5"), "/x?per_page=5");
    }
}
