//! Answering judge requests (the I/O half of `llm_judge`; planning and scoring are pure, in
//! [`crate::grade::judge`]). A [`Judge`] answers one request. A trial's judge
//! ([`trial::TrialJudge`]) asks through the trial's gateway, so its questions are
//! recorded in the trial's cassette and replayed from it; [`CachedJudge`] keeps answers on
//! disk by request key, for what has no cassette (`run --oracle`, a re-grade) and as the
//! read-only answers of cassettes recorded before the judge's calls were; a re-grade reads
//! the answers of the trajectory's own judge calls first ([`Recorded`]). A judge that
//! cannot answer is an error, never a default score. [`from_config`] builds a suite's cached
//! judge from its `[judge]` section.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

pub(crate) mod http;
mod recorded;
pub(crate) mod trial;

pub(crate) use recorded::Recorded;
pub(crate) use trial::Judging;

use crate::config::{Config, Provider};
use crate::grade::Grade;
use crate::grade::judge::{JudgeAnswer, JudgeAnswers, JudgeRequest};
use crate::llm::gateway::upstream::RetryPolicy;
use crate::llm::gateway::{Budget, Prices};
use crate::task::Task;
use crate::trajectory::Trajectory;

/// Why a judge could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JudgeError(pub String);

/// The future a judge returns.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<JudgeAnswer, JudgeError>> + Send + 'a>>;

/// Something that scores a rubric.
pub trait Judge: Send + Sync {
    /// Scores `request`'s rubric against its prompt: a score in 0..=1 and the reasoning, or
    /// why no answer could be had (never a default score).
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a>;
}

/// The judge when none is configured: every request is an error that says what to do.
#[derive(Debug, Default, Clone)]
pub struct NoJudge;

impl Judge for NoJudge {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        let message = format!(
            "component `{}` needs an LLM judge, and its answer (key {}) is not in the judge cache (its folder is `[judge] cache`): configure [judge] in clawtest.toml (provider, model, api_key_env) to ask one, or commit the cache a run with a judge wrote",
            request.component, request.key
        );
        Box::pin(async move { Err(JudgeError(message)) })
    }
}

/// One cached answer, as stored in `<cache>/<key>.json`.
#[derive(Debug, Serialize, Deserialize)]
struct CacheEntry {
    component: String,
    rubric: String,
    score: f64,
    reasoning: String,
}

/// A judge in front of another: answers from `<folder>/<key>.json` when present, else asks
/// the inner judge and stores its answer there.
pub struct CachedJudge {
    folder: PathBuf,
    inner: Arc<dyn Judge>,
    /// The cache writes that failed, one line each, until [`CachedJudge::take_warnings`].
    warnings: Mutex<Vec<String>>,
}

impl CachedJudge {
    /// A cache kept in `folder` (created on the first write) in front of `inner`, which is
    /// asked only what the folder does not hold.
    pub fn new(folder: PathBuf, inner: Arc<dyn Judge>) -> CachedJudge {
        CachedJudge {
            folder,
            inner,
            warnings: Mutex::default(),
        }
    }

    /// The warnings since the last call, one line each without the `warning: ` prefix (today
    /// only `could not write the judge cache PATH`). They never stop a grade: the library
    /// prints nothing, so whoever asked the judge shows them.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl CachedJudge {
    /// The answer the cache holds for `request`, if it holds one; a corrupt entry is the
    /// error.
    pub(crate) fn cached(&self, request: &JudgeRequest) -> Result<Option<JudgeAnswer>, JudgeError> {
        let path = self.folder.join(format!("{}.json", request.key));
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let entry: CacheEntry = serde_json::from_str(&text).map_err(|error| {
            JudgeError(format!(
                "judge cache {} is corrupt: {error} (delete it to ask again)",
                path.display()
            ))
        })?;
        Ok(Some(JudgeAnswer {
            score: entry.score,
            reasoning: entry.reasoning,
        }))
    }
}

impl Judge for CachedJudge {
    fn answer<'a>(&'a self, request: &'a JudgeRequest) -> Answer<'a> {
        Box::pin(async move {
            if let Some(answer) = self.cached(request)? {
                return Ok(answer);
            }
            let path = self.folder.join(format!("{}.json", request.key));
            let answer = self.inner.answer(request).await?;
            let entry = CacheEntry {
                component: request.component.clone(),
                rubric: request.rubric.clone(),
                score: answer.score,
                reasoning: answer.reasoning.clone(),
            };
            let text = serde_json::to_string_pretty(&entry).unwrap_or_default();
            // A cache that cannot be written costs a repeated question later, not this answer.
            if crate::persist::write(
                &path,
                text.as_bytes(),
                crate::persist::Durability::Recording,
            )
            .is_err()
            {
                self.warnings
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!(
                        "could not write the judge cache {}",
                        path.display()
                    ));
            }
            Ok(answer)
        })
    }
}

/// The judge of a suite: its cache folder (`[judge] cache`, under the suite root) in front of
/// the configured provider, or of [`NoJudge`] when none is configured; its calls priced by
/// `[llm.prices]` under a budget of its own with `llm.max_cost_usd` as the limit. Whoever
/// asks it shows its [`CachedJudge::take_warnings`] afterwards.
pub fn from_config(config: &Config) -> Arc<CachedJudge> {
    with_costs(
        config,
        Arc::new(Prices(config.llm.prices.clone())),
        Arc::new(Budget::new(config.llm.max_cost_usd)),
    )
}

/// The judge of a suite ([`from_config`]) in a run: its calls are priced by `prices` and
/// charged to `budget`, the run's, so the judge's questions spend money like any call and
/// none is asked past the limit.
pub(crate) fn with_costs(
    config: &Config,
    prices: Arc<Prices>,
    budget: Arc<Budget>,
) -> Arc<CachedJudge> {
    let section = &config.judge;
    let inner: Arc<dyn Judge> = match (section.provider, own_upstream(config)) {
        (Some(provider), Some(upstream)) => Arc::new(http::HttpJudge::new(
            http::chat(provider, section.model.as_deref().unwrap_or_default()),
            upstream,
            (prices, budget),
        )),
        _ => Arc::new(NoJudge),
    };
    Arc::new(CachedJudge::new(config.root.join(&section.cache), inner))
}

/// The client of `[judge]`'s own provider when it names one (its default URL unless
/// `base_url` says otherwise; retrying as the gateway does: `[llm] retries` and
/// `retry_backoff_ms`), or why it cannot be had; `None` when `[judge]` names no provider.
pub(crate) fn own_upstream(
    config: &Config,
) -> Option<Result<Arc<crate::llm::gateway::Upstream>, String>> {
    let section = &config.judge;
    let provider = section.provider?;
    let default_url = match provider {
        Provider::OpenAi => "https://api.openai.com",
        Provider::Anthropic => "https://api.anthropic.com",
    };
    let retry = RetryPolicy {
        retries: config.llm.retries,
        backoff: std::time::Duration::from_millis(config.llm.retry_backoff_ms),
    };
    Some(http::upstream(
        provider,
        section.base_url.as_deref().unwrap_or(default_url),
        section.api_key_env.as_deref(),
        retry,
    ))
}

/// Grades `trajectory` against `task`: plans the judge requests of its `llm_judge`
/// components, has `judge` answer them, and grades with the answers (the one "judge, then
/// grade" of a trial, a closed loop's round and a re-grade). A judge that cannot answer is the
/// error: never a default score.
pub(crate) async fn grade_trajectory(
    task: &Task,
    trajectory: &Trajectory,
    judge: &dyn Judge,
    threshold: f64,
) -> Result<Grade, JudgeError> {
    let requests = crate::grade::judge::plan(task, trajectory);
    let answers = answer_all(judge, &requests).await?;
    Ok(crate::grade::grade(task, trajectory, &answers, threshold))
}

/// Asks the judge every request, in order; the first failure is the trial's error.
pub(crate) async fn answer_all(
    judge: &dyn Judge,
    requests: &[JudgeRequest],
) -> Result<JudgeAnswers, JudgeError> {
    let mut answers = JudgeAnswers::new();
    for request in requests {
        let answer = judge.answer(request).await.map_err(|JudgeError(message)| {
            JudgeError(format!(
                "the LLM judge could not answer for `{}`: {message}",
                request.component
            ))
        })?;
        answers.insert(request.component.clone(), answer);
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Counting(AtomicUsize);

    impl Judge for Counting {
        fn answer<'a>(&'a self, _request: &'a JudgeRequest) -> Answer<'a> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {
                Ok(JudgeAnswer {
                    score: 0.7,
                    reasoning: "fine".into(),
                })
            })
        }
    }

    fn request() -> JudgeRequest {
        JudgeRequest {
            component: "quality".into(),
            rubric: "r".into(),
            prompt: "p".into(),
            key: "abc123".into(),
        }
    }

    #[tokio::test]
    async fn the_cache_answers_a_repeated_question_without_asking_again() {
        let folder = tempfile::tempdir().unwrap();
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let judge = CachedJudge::new(folder.path().to_path_buf(), inner.clone());
        assert_eq!(judge.answer(&request()).await.unwrap().score, 0.7);
        assert_eq!(judge.answer(&request()).await.unwrap().score, 0.7);
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
        // A cache alone (no judge configured) still answers what it holds.
        let offline = CachedJudge::new(folder.path().to_path_buf(), Arc::new(NoJudge));
        assert_eq!(offline.answer(&request()).await.unwrap().reasoning, "fine");
    }

    #[tokio::test]
    async fn a_cache_that_cannot_be_written_is_a_warning_not_an_error() {
        let folder = tempfile::tempdir().unwrap();
        // A file where the cache folder should be: the folder cannot be created.
        let blocked = folder.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let judge = CachedJudge::new(blocked.join("cache"), inner);
        assert_eq!(judge.answer(&request()).await.unwrap().score, 0.7);
        let path = blocked.join("cache").join("abc123.json");
        assert_eq!(
            judge.take_warnings(),
            [format!(
                "could not write the judge cache {}",
                path.display()
            )]
        );
        assert!(judge.take_warnings().is_empty());
    }

    #[tokio::test]
    async fn without_a_judge_a_miss_is_an_error_that_says_what_to_do() {
        let folder = tempfile::tempdir().unwrap();
        let judge = CachedJudge::new(folder.path().to_path_buf(), Arc::new(NoJudge));
        let error = answer_all(&judge, &[request()]).await.unwrap_err();
        assert!(
            error
                .0
                .contains("the LLM judge could not answer for `quality`"),
            "{error}"
        );
        assert!(error.0.contains("configure [judge]"), "{error}");
    }
}
