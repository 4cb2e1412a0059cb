//! What the gateway serves: the model endpoints of both providers and nothing else (so the
//! real key is never sent to any other path of the provider). A request is routed by its
//! method and path (`/v1/v1/...`, which a harness that appends `/v1` to `OPENAI_BASE_URL`
//! sends, counts as `/v1/...`); `GET /v1/models` goes to Anthropic when the request carries
//! Anthropic's headers, else to OpenAI. A request over HTTP is the harness's; clawtest's own
//! speakers (the simulated user, the supervisor, the judge) ask in-process with their route
//! marked ([`Route::for_speaker`]).

use crate::config::Provider;
use crate::trajectory::Speaker;

/// The model endpoints, with their provider.
const CALLS: &[(&str, Provider)] = &[
    ("/v1/chat/completions", Provider::OpenAi),
    ("/v1/responses", Provider::OpenAi),
    ("/v1/messages", Provider::Anthropic),
    ("/v1/messages/count_tokens", Provider::Anthropic),
];

/// A request the gateway serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The endpoint, e.g. `/v1/chat/completions` (also what a cassette records).
    pub(crate) path: String,
    /// Whose wire format it speaks.
    pub(crate) provider: Provider,
    /// A model call or the model list.
    pub(crate) kind: RouteKind,
    /// Who asks: the harness over HTTP, or clawtest's own speakers in-process
    /// ([`Route::for_speaker`]); each speaker's calls are logged, recorded and replayed as its
    /// own.
    pub(crate) speaker: Speaker,
}

/// What a route is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKind {
    /// A model call (`POST`): logged, priced, recorded and replayed in call order.
    Call,
    /// `GET /v1/models` (or one model): answered, not counted as a call.
    Models,
}

impl Route {
    /// The route of a request, or the message of the 404 it gets.
    pub(crate) fn of(
        method: &str,
        path: &str,
        headers: &[(String, String)],
    ) -> Result<Route, String> {
        let path = match path.strip_prefix("/v1/v1/") {
            Some(rest) => format!("/v1/{rest}"),
            None => path.to_string(),
        };
        let one_model = path.strip_prefix("/v1/models/").is_some_and(is_model_id);
        if method == "GET" && (path == "/v1/models" || one_model) {
            let anthropic = headers
                .iter()
                .any(|(name, _)| name == "anthropic-version" || name == "x-api-key");
            return Ok(Route {
                path,
                provider: if anthropic {
                    Provider::Anthropic
                } else {
                    Provider::OpenAi
                },
                kind: RouteKind::Models,
                speaker: Speaker::Harness,
            });
        }
        let Some((_, provider)) = CALLS.iter().find(|(call, _)| *call == path) else {
            return Err(format!(
                "the clawtest gateway serves model calls only ({}, and GET /v1/models); {method} {path} is not one of them",
                CALLS
                    .iter()
                    .map(|(call, _)| format!("POST {call}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if method != "POST" {
            return Err(format!("{path} takes POST, not {method}"));
        }
        Ok(Route {
            path,
            provider: *provider,
            kind: RouteKind::Call,
            speaker: Speaker::Harness,
        })
    }

    /// The same route, asked by `speaker`.
    pub(crate) fn for_speaker(self, speaker: Speaker) -> Route {
        Route { speaker, ..self }
    }
}

/// One model's id as the providers spell them (`gpt-4o-2024-08-06`,
/// `ft:gpt-4o:org:name:id`, `claude-sonnet-4-5`): one path segment, no dot-segment and no
/// escapes, so the upstream URL built from it names that model and no other endpoint (a proxy
/// in front of the provider would resolve `/v1/models/../files` to `/v1/files`).
fn is_model_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.:".contains(&byte))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str) -> Result<Route, String> {
        Route::of(method, path, &[])
    }

    #[test]
    fn only_model_endpoints_are_routed() {
        assert_eq!(
            route("POST", "/v1/messages/count_tokens").unwrap().provider,
            Provider::Anthropic
        );
        assert_eq!(
            route("POST", "/v1/responses").unwrap().provider,
            Provider::OpenAi
        );
        assert_eq!(
            route("POST", "/v1/v1/chat/completions").unwrap().path,
            "/v1/chat/completions"
        );
        for path in [
            "/v1/files",
            "/v1/fine_tuning/jobs",
            "/v1/../../admin",
            "/admin",
        ] {
            let message = route("POST", path).unwrap_err();
            assert!(message.contains("serves model calls only"), "{message}");
        }
        assert!(route("GET", "/v1/chat/completions").is_err());
    }

    #[test]
    fn one_model_is_routed_by_its_id_and_no_other_path_hides_behind_it() {
        for id in [
            "gpt-4o-2024-08-06",
            "ft:gpt-4o:org:name:abc123",
            "claude-sonnet-4-5",
        ] {
            let path = format!("/v1/models/{id}");
            assert_eq!(route("GET", &path).unwrap().path, path);
        }
        for path in [
            "/v1/models/../files",
            "/v1/models/%2e%2e/files/file-1/content",
            "/v1/models/..",
            "/v1/models/",
            "/v1/models/gpt-4o/../../files",
            "/v1/models/a?b",
        ] {
            let message = route("GET", path).unwrap_err();
            assert!(
                message.contains("serves model calls only"),
                "{path}: {message}"
            );
        }
    }

    #[test]
    fn the_model_list_follows_the_client() {
        assert_eq!(route("GET", "/v1/models").unwrap().kind, RouteKind::Models);
        let anthropic = Route::of(
            "GET",
            "/v1/models",
            &[("anthropic-version".into(), "2023-06-01".into())],
        )
        .unwrap();
        assert_eq!(anthropic.provider, Provider::Anthropic);
    }
}
