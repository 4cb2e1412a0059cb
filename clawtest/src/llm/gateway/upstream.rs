//! The real provider behind the gateway in `live` and `record` mode: sends each routed call
//! (`routes.rs`) to its provider with the real key (read on the host from the variable the
//! configuration names; the harness never sees it) and only the request headers a model
//! call needs (an allow-list: the harness's own credentials, organisation or project never
//! leave), asks for an uncompressed answer, and retries with backoff on 429 and 5xx.
//!
//! A `base_url` ending in `/v1` (as the SDKs' own base URLs do) is the same provider as one
//! without: the harness's path already starts with `/v1`, so the suffix is dropped. A query in
//! it (`?api-version=…`, `?api-key=…`, as some gateways ask) goes after the call's path, and a
//! `base_url` is only ever shown [`redacted`]: credentials in it (`user:password@`, query
//! values) never reach a message, and so neither the results nor the reports.
//!
//! The connection goes through hyper's client with rustls (ring, compiled-in webpki roots):
//! `https://` for real providers, plain `http://` for loopback test servers (the scripted
//! model server) and local proxies.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::routes::{Route, RouteKind};
use crate::config::Provider;

/// Where one provider is and how to authenticate to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// e.g. `http://127.0.0.1:8080`; the request path (`/v1/...`) is appended.
    pub base_url: String,
    /// The key itself, read from the configured variable; `None` sends no key.
    pub api_key: Option<String>,
}

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Extra attempts after the first.
    pub retries: u32,
    /// Delay before the first retry; doubled before each further one.
    pub backoff: Duration,
}

/// Why the upstream could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// A configured `base_url` is not an http:// or https:// URL.
    #[error("the {provider} base URL `{url}` is not an http:// or https:// URL")]
    InvalidUrl {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// The URL as configured.
        url: String,
    },
    /// A call speaks the wire format of a provider that is not configured.
    #[error("no base URL is configured for {provider} calls (set [llm.{provider}] base_url)")]
    NotConfigured {
        /// `openai` or `anthropic`.
        provider: &'static str,
    },
    /// Every attempt failed to connect or to get an answer.
    #[error("{provider} at {url} could not be reached after {attempts} attempt(s): {message}")]
    Unreachable {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// The URL called.
        url: String,
        /// Attempts made, the first included.
        attempts: u32,
        /// The last attempt's error.
        message: String,
    },
}

/// The answer of the upstream, its body not yet read (it may be a stream).
pub(crate) struct UpstreamResponse {
    /// The HTTP status of the last attempt.
    pub(crate) status: u16,
    /// Its headers, as received.
    pub(crate) headers: Vec<(String, String)>,
    /// Its body, still to be read (whole or as server-sent events).
    pub(crate) body: Incoming,
    /// Statuses of the attempts retried before this one.
    pub(crate) retried: Vec<u16>,
}

/// The client of both providers.
pub struct Upstream {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    openai: Option<Endpoint>,
    anthropic: Option<Endpoint>,
    retry: RetryPolicy,
}

/// The request headers forwarded (all others are dropped): what a model call's meaning
/// depends on. The key is the gateway's own; `accept-encoding` is set to `identity` so
/// answers are recorded as text.
const FORWARDED_REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
];

/// Response headers not passed back: framing is hyper's job on our side of the connection.
pub(crate) const DROPPED_RESPONSE_HEADERS: &[&str] = &[
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "trailer",
    "upgrade",
];

impl Upstream {
    /// A client for the configured providers; checks the URLs now so a bad one stops the run
    /// before its first trial.
    pub fn new(
        openai: Option<Endpoint>,
        anthropic: Option<Endpoint>,
        retry: RetryPolicy,
    ) -> Result<Upstream, UpstreamError> {
        for (provider, endpoint) in [
            (Provider::OpenAi, &openai),
            (Provider::Anthropic, &anthropic),
        ] {
            if let Some(endpoint) = endpoint {
                check_url(provider, &endpoint.base_url)?;
            }
        }
        let without_v1 = |endpoint: Option<Endpoint>| {
            endpoint.map(|endpoint| {
                let (base, query) = split_query(&endpoint.base_url);
                let trimmed = base.trim_end_matches('/');
                let base = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
                Endpoint {
                    base_url: match query {
                        Some(query) => format!("{base}?{query}"),
                        None => base.to_string(),
                    },
                    ..endpoint
                }
            })
        };
        let (openai, anthropic) = (without_v1(openai), without_v1(anthropic));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Upstream {
            client,
            openai,
            anthropic,
            retry,
        })
    }

    /// Sends one call, retrying 429/5xx and connection failures with backoff. The last
    /// answer is returned whatever its status (the harness sees what the provider said).
    pub(crate) async fn send(
        &self,
        route: &Route,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<UpstreamResponse, UpstreamError> {
        let (provider, path) = (route.provider, &route.path);
        let method = match route.kind {
            RouteKind::Call => "POST",
            RouteKind::Models => "GET",
        };
        let endpoint = match provider {
            Provider::OpenAi => self.openai.as_ref(),
            Provider::Anthropic => self.anthropic.as_ref(),
        }
        .ok_or(UpstreamError::NotConfigured {
            provider: provider.name(),
        })?;
        let url = call_url(&endpoint.base_url, path);
        let body = Bytes::copy_from_slice(body);
        let mut retried = Vec::new();
        let mut delay = self.retry.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt > self.retry.retries;
            let request = build_request(provider, endpoint, method, &url, headers, body.clone())
                .map_err(|message| UpstreamError::InvalidUrl {
                    provider: provider.name(),
                    url: format!("{} ({message})", redacted(&url)),
                })?;
            match self.client.request(request).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    if !last && (status == 429 || status >= 500) {
                        retried.push(status);
                    } else {
                        let (parts, body) = response.into_parts();
                        let headers = parts
                            .headers
                            .iter()
                            .map(|(name, value)| {
                                (
                                    name.as_str().to_string(),
                                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                                )
                            })
                            .collect();
                        return Ok(UpstreamResponse {
                            status,
                            headers,
                            body,
                            retried,
                        });
                    }
                }
                Err(error) if last => {
                    return Err(UpstreamError::Unreachable {
                        provider: provider.name(),
                        url: redacted(&url),
                        attempts: attempt,
                        message: error.to_string(),
                    });
                }
                // A refused or reset connection is retried like a 5xx; it has no status to
                // record, so it is logged as 0.
                Err(_) => retried.push(0),
            }
            tokio::time::sleep(delay).await;
            delay = delay.saturating_mul(2);
        }
    }
}

fn check_url(provider: Provider, url: &str) -> Result<(), UpstreamError> {
    let valid = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .is_some_and(|rest| !rest.is_empty())
        && url.parse::<hyper::Uri>().is_ok();
    if valid {
        Ok(())
    } else {
        Err(UpstreamError::InvalidUrl {
            provider: provider.name(),
            url: redacted(url),
        })
    }
}

/// A URL without its query (and fragment), and the query.
fn split_query(url: &str) -> (&str, Option<&str>) {
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    }
}

/// The URL of a call: the base URL's path, then the call's, then the base URL's query (after
/// the call's own, if it has one).
fn call_url(base_url: &str, path: &str) -> String {
    let (base, query) = split_query(base_url);
    let url = format!("{}{path}", base.trim_end_matches('/'));
    match query {
        Some(query) if path.contains('?') => format!("{url}&{query}"),
        Some(query) => format!("{url}?{query}"),
        None => url,
    }
}

/// `url` as it may be shown: the user and password of its authority and the value of every
/// query parameter replaced by `***` (an `api-key=` in a query is as secret as the key).
pub(crate) fn redacted(url: &str) -> String {
    let (rest, query) = split_query(url);
    let (scheme, after) = rest.split_once("://").map_or(("", rest), |(s, a)| (s, a));
    let (authority, path) = after.find('/').map_or((after, ""), |at| after.split_at(at));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_string(),
    };
    let mut shown = match scheme {
        "" => format!("{authority}{path}"),
        scheme => format!("{scheme}://{authority}{path}"),
    };
    if let Some(query) = query {
        let parameters: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}=***"),
                None => "***".to_string(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&parameters.join("&"));
    }
    shown
}

fn build_request(
    provider: Provider,
    endpoint: &Endpoint,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Bytes,
) -> Result<hyper::Request<Full<Bytes>>, String> {
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("accept-encoding", "identity");
    for (name, value) in headers {
        if FORWARDED_REQUEST_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    if let Some(key) = &endpoint.api_key {
        builder = match provider {
            Provider::OpenAi => builder.header("authorization", format!("Bearer {key}")),
            Provider::Anthropic => builder.header("x-api-key", key.as_str()),
        };
    }
    builder
        .body(Full::new(body))
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_base_url_are_never_shown() {
        assert_eq!(
            redacted("https://user:pw@api.example/v1/chat?api-key=sekrit&api-version=2#x"),
            "https://***@api.example/v1/chat?api-key=***&api-version=***"
        );
        assert_eq!(redacted("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        assert_eq!(redacted("host?token"), "host?***");
        let refused = check_url(Provider::OpenAi, "ftp://user:pw@h?key=sekrit").unwrap_err();
        assert!(!refused.to_string().contains("pw") && !refused.to_string().contains("sekrit"));
    }

    #[test]
    fn a_query_in_the_base_url_goes_after_the_calls_path() {
        assert_eq!(
            call_url("https://h/openai?api-version=2", "/v1/chat/completions"),
            "https://h/openai/v1/chat/completions?api-version=2"
        );
        assert_eq!(
            call_url("https://h/", "/v1/models?x=1"),
            "https://h/v1/models?x=1"
        );
        assert_eq!(
            call_url("https://h?a=1", "/v1/models?x=1"),
            "https://h/v1/models?x=1&a=1"
        );
    }

    #[test]
    fn malformed_urls_are_refused_up_front() {
        let retry = RetryPolicy {
            retries: 0,
            backoff: Duration::ZERO,
        };
        let endpoint = |url: &str| {
            Some(Endpoint {
                base_url: url.into(),
                api_key: None,
            })
        };
        assert!(Upstream::new(endpoint("https://api.openai.com"), None, retry).is_ok());
        assert!(matches!(
            Upstream::new(None, endpoint("localhost:80"), retry),
            Err(UpstreamError::InvalidUrl {
                provider: "anthropic",
                ..
            })
        ));
        assert!(Upstream::new(endpoint("http://127.0.0.1:9"), None, retry).is_ok());
    }

    #[test]
    fn the_real_key_replaces_the_harness_credentials() {
        let endpoint = Endpoint {
            base_url: "http://127.0.0.1:9".into(),
            api_key: Some("real".into()),
        };
        let headers = vec![
            ("Authorization".to_string(), "Bearer fake".to_string()),
            ("anthropic-version".to_string(), "2023-06-01".to_string()),
            ("x-api-key".to_string(), "fake".to_string()),
            ("openai-organization".to_string(), "org-harness".to_string()),
            ("accept-encoding".to_string(), "gzip, br".to_string()),
            ("cookie".to_string(), "session=1".to_string()),
        ];
        let request = build_request(
            Provider::Anthropic,
            &endpoint,
            "POST",
            "http://127.0.0.1:9/v1/messages",
            &headers,
            Bytes::new(),
        )
        .unwrap();
        assert_eq!(request.headers()["x-api-key"], "real");
        assert_eq!(request.headers()["anthropic-version"], "2023-06-01");
        assert_eq!(request.headers()["accept-encoding"], "identity");
        for dropped in ["authorization", "openai-organization", "cookie"] {
            assert!(request.headers().get(dropped).is_none(), "{dropped}");
        }
    }

    #[tokio::test]
    async fn https_speaks_tls_so_a_plain_http_server_is_not_a_provider() {
        // A plain-HTTP server behind an https:// URL: the TLS handshake must fail, which shows
        // the call was not sent in the clear.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let model = std::sync::Arc::new(crate::llm::gateway::scripted::ScriptedModel::new(
            crate::llm::gateway::scripted::Script {
                prompt_contains: None,
                turns: vec![],
                retry_on: vec![],
            },
        ));
        tokio::spawn(crate::http::serve(listener, model, async {
            let _ = stopped.await;
        }));
        let upstream = Upstream::new(
            Some(Endpoint {
                base_url: format!("https://{address}"),
                api_key: None,
            }),
            None,
            RetryPolicy {
                retries: 0,
                backoff: Duration::ZERO,
            },
        )
        .unwrap();
        let route = Route::of("POST", "/v1/chat/completions", &[]).unwrap();
        let error = upstream
            .send(&route, &[], b"{}")
            .await
            .err()
            .expect("a TLS failure");
        assert!(
            matches!(error, UpstreamError::Unreachable { attempts: 1, .. }),
            "{error}"
        );
        let _ = stop.send(());
    }
}
