//! What the `discover` tests and benchmark share: a git checkout of the real InferenceX master
//! configs at 843c6254f whose generator answers with the real generator's recorded output
//! (`recorded_generator.py`), and a loopback server of the images feed.

#![allow(dead_code)] // each user takes a part
#![allow(clippy::disallowed_methods)] // starts git

use std::path::{Path, PathBuf};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::routing::get;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A git checkout of the real master configs at 843c6254f with the recorded generator.
pub struct Checkout {
    pub dir: tempfile::TempDir,
}

impl Checkout {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let configs = fixtures().join("inferencex/configs/full-843c6254f");
        std::fs::create_dir_all(root.join("configs/deprecated")).unwrap();
        for file in ["amd-master.yaml", "nvidia-master.yaml", "runners.yaml"] {
            std::fs::copy(configs.join(file), root.join("configs").join(file)).unwrap();
        }
        // Never a family: a master file under a deprecated/ folder.
        std::fs::write(root.join("configs/deprecated/old-master.yaml"), "old: {}\n").unwrap();
        let generator = root.join("utils/matrix_logic");
        std::fs::create_dir_all(&generator).unwrap();
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/discovery_support/recorded_generator.py"),
            generator.join("generate_sweep_configs.py"),
        )
        .unwrap();
        std::fs::copy(
            fixtures().join("discovery/generator-843c6254f.json"),
            generator.join("recorded-outputs.json"),
        )
        .unwrap();
        let checkout = Checkout { dir };
        checkout.commit("the real configs at 843c6254f");
        checkout
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn commit(&self, message: &str) {
        for args in [
            vec!["init", "-q", "-b", "main"],
            vec!["add", "-A"],
            vec!["commit", "-q", "-m", message],
        ] {
            let status = std::process::Command::new("git")
                .args(&args)
                .current_dir(self.root())
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        }
    }

    pub fn head(&self) -> String {
        let output = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(self.root())
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }
}

/// What the loopback feed server answers at `/api/v1/latest-images`.
#[derive(Clone)]
pub enum Feed {
    Catalog(Vec<u8>),
    WrongType,
    Redirect,
    NotJson,
    TooLarge,
}

/// Serves `feed` on 127.0.0.1 until the handle is dropped; returns the images feed's URL.
pub struct FeedServer {
    pub url: String,
    _runtime: tokio::runtime::Runtime,
}

pub fn serve(feed: Feed) -> FeedServer {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route(
            "/api/v1/latest-images",
            get(move || {
                let feed = feed.clone();
                async move {
                    let mut headers = HeaderMap::new();
                    let json = HeaderValue::from_static("application/json");
                    match feed {
                        Feed::Catalog(body) => {
                            headers.insert(header::CONTENT_TYPE, json);
                            (StatusCode::OK, headers, body)
                        }
                        Feed::WrongType => {
                            headers.insert(
                                header::CONTENT_TYPE,
                                HeaderValue::from_static("text/html"),
                            );
                            (StatusCode::OK, headers, b"<html></html>".to_vec())
                        }
                        Feed::Redirect => {
                            headers
                                .insert(header::LOCATION, HeaderValue::from_static("/elsewhere"));
                            (StatusCode::FOUND, headers, Vec::new())
                        }
                        Feed::NotJson => {
                            headers.insert(header::CONTENT_TYPE, json);
                            (StatusCode::OK, headers, b"[{\"model\": ".to_vec())
                        }
                        Feed::TooLarge => {
                            headers.insert(header::CONTENT_TYPE, json);
                            let mut body = b"[\"".to_vec();
                            body.resize(17 * 1024 * 1024, b'a');
                            body.extend_from_slice(b"\"]");
                            (StatusCode::OK, headers, body)
                        }
                    }
                }
            }),
        )
        .route(
            "/elsewhere",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "[]") }),
        );
    runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
    FeedServer {
        url: format!("http://{address}/api/v1/latest-images"),
        _runtime: runtime,
    }
}

/// The derived `latest-images` catalog (tests/fixtures/discovery/README.md).
pub fn derived_catalog() -> Vec<u8> {
    std::fs::read(fixtures().join("discovery/latest-images-derived.json")).unwrap()
}
