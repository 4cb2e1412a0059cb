//! The one HTTP/1.1 client of the crate, for [`super::Env`]: one connection per request to a
//! loopback server (the trial's services or gateway), JSON in and out. hyper's connection-level
//! client is enough here: no pool, no TLS, no redirects, nothing the trial servers need.

use crate::method::Method;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// Why a request got no usable answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum HttpError {
    /// The URL is not one this client can call (plain http://, a host and a port).
    #[error("`{url}` is not an http:// URL with a host and port")]
    BadUrl {
        /// The URL as given.
        url: String,
    },
    /// The connection or the exchange failed.
    #[error("{method} {url} failed: {message}")]
    Transport {
        /// The HTTP method.
        method: Method,
        /// The URL called.
        url: String,
        /// What failed.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{method} {url} answered HTTP {status}: {body}")]
    Status {
        /// The HTTP method.
        method: Method,
        /// The URL called.
        url: String,
        /// The status answered.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
    /// The server answered with a body that should be JSON and is not.
    #[error("{method} {url} answered HTTP {status} with a body that is not JSON: {body}")]
    NotJson {
        /// The HTTP method.
        method: Method,
        /// The URL called.
        url: String,
        /// The status answered.
        status: u16,
        /// The answer's body, as text.
        body: String,
    },
}

/// A response: its status and its body, as text and (when it parses) as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonResponse {
    /// The HTTP status.
    pub status: u16,
    /// The whole body, as text.
    pub text: String,
}

impl JsonResponse {
    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.text)
    }
}

/// hyper's value for a tool's method.
fn hyper_method(method: Method) -> hyper::Method {
    match method {
        Method::Get => hyper::Method::GET,
        Method::Post => hyper::Method::POST,
        Method::Put => hyper::Method::PUT,
        Method::Patch => hyper::Method::PATCH,
        Method::Delete => hyper::Method::DELETE,
    }
}

/// Sends `method url` with `body` as JSON and reads the whole answer.
pub(crate) async fn send(
    method: Method,
    url: &str,
    body: &Value,
) -> Result<JsonResponse, HttpError> {
    let transport = |message: String| HttpError::Transport {
        method,
        url: url.to_string(),
        message,
    };
    let (authority, path) = split_url(url).ok_or_else(|| HttpError::BadUrl {
        url: url.to_string(),
    })?;
    let stream = TcpStream::connect(authority)
        .await
        .map_err(|error| transport(error.to_string()))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| transport(error.to_string()))?;
    let driver = tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(hyper_method(method))
        .uri(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|error| transport(error.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| transport(error.to_string()))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|error| transport(error.to_string()))?
        .to_bytes();
    driver.abort();
    Ok(JsonResponse {
        status,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// `http://host:port/path?query` → (`host:port`, `/path?query`).
fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(index) => (&rest[..index], &rest[index..]),
        None => (rest, "/"),
    };
    (!authority.is_empty() && authority.contains(':')).then_some((authority, path))
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn urls_split_into_authority_and_path() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/todo/tasks"),
            Some(("127.0.0.1:8080", "/todo/tasks"))
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080"),
            Some(("127.0.0.1:8080", "/"))
        );
        assert_eq!(split_url("https://example.com/"), None);
        assert_eq!(split_url("http:///x"), None);
    }
}
