//! What model calls cost: token counts read from the answers (whole or streamed, both wire
//! formats), prices per model from the configuration, and the run's [`Budget`] shared by
//! every trial's gateway. A replayed call costs what it cost when it was recorded, but
//! spends nothing: only money spent counts against the limit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::config::Price;
use crate::llm::money::Money;

/// Tokens of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Tokens of the request (prompt), as the answer reports them.
    pub input: u64,
    /// Tokens of the answer (completion).
    pub output: u64,
}

/// Token counts from an OpenAI (`prompt_tokens`/`completion_tokens`, or `input_tokens`/
/// `output_tokens` in the Responses API) or Anthropic (`input_tokens`/`output_tokens`) usage
/// block.
/// `None` when the answer reports no usage at all (OpenAI's streams unless asked with
/// `stream_options.include_usage`, llama.cpp's server).
pub(crate) fn of_body(body: &Value) -> Option<Tokens> {
    let mut tokens = Tokens::default();
    let mut reported = false;
    for usage in [
        &body["usage"],
        // The Responses API nests the answer under `response` in its final stream event.
        &body["response"]["usage"],
        // Anthropic's stream opens with `message_start`, whose message carries the input count.
        &body["message"]["usage"],
    ] {
        // Every block is read (no short cut): a later one may hold the other count.
        reported |= add_usage(&mut tokens, usage);
    }
    reported.then_some(tokens)
}

/// Adds the counts of one usage block; false when it holds none.
fn add_usage(tokens: &mut Tokens, usage: &Value) -> bool {
    let count = |names: [&str; 2]| names.iter().find_map(|name| usage[*name].as_u64());
    let (input, output) = (
        count(["prompt_tokens", "input_tokens"]),
        count(["completion_tokens", "output_tokens"]),
    );
    if let Some(input) = input {
        tokens.input = tokens.input.max(input);
    }
    if let Some(output) = output {
        tokens.output = tokens.output.max(output);
    }
    input.is_some() || output.is_some()
}

/// Token counts from a stream of server-sent events: the largest count any event reports
/// (providers repeat cumulative counts; none sums per-chunk deltas); `None` when no event
/// reports any.
pub(crate) fn of_events(events: &[String]) -> Option<Tokens> {
    let mut total: Option<Tokens> = None;
    for event in events {
        for line in event.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(value) = serde_json::from_str::<Value>(data.trim())
                && let Some(found) = of_body(&value)
            {
                let tokens = total.get_or_insert_default();
                tokens.input = tokens.input.max(found.input);
                tokens.output = tokens.output.max(found.output);
            }
        }
    }
    total
}

/// Prices by model name (`[llm.prices."gpt-4o-mini"]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices(pub BTreeMap<String, Price>);

impl Prices {
    /// The price of `model`: its own entry, else the longest entry that prefixes it (so
    /// `gpt-4o-mini` prices `gpt-4o-mini-2024-07-18`).
    pub fn of(&self, model: &str) -> Option<Price> {
        if let Some(price) = self.0.get(model) {
            return Some(*price);
        }
        self.0
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// The cost of a call to `model`, or `None` when the model has no price.
    pub fn cost(&self, model: &str, tokens: Tokens) -> Option<Money> {
        self.of(model).map(|price| {
            Money::from_femtos(
                Money::femtos(tokens.input, price.input_per_million)
                    + Money::femtos(tokens.output, price.output_per_million),
            )
        })
    }
}

/// The run's money: what its priced calls cost (replayed ones at their recorded cost) and
/// what it spent (calls a provider answered), with the limit on spending. Shared by every
/// trial's gateway and the judge; sums of whole nano-dollars, the same in any order.
#[derive(Debug)]
pub struct Budget {
    limit_usd: Option<f64>,
    limit: Option<Money>,
    cost: AtomicU64,
    spent: AtomicU64,
    /// The models whose answers (from a provider) reported no token usage, with how many.
    unreported: Mutex<BTreeMap<String, u64>>,
}

impl Budget {
    /// A budget of `limit_usd` (`None`: unlimited, only counted).
    pub fn new(limit_usd: Option<f64>) -> Budget {
        Budget {
            limit_usd,
            limit: limit_usd.map(Money::from_usd),
            cost: AtomicU64::new(0),
            spent: AtomicU64::new(0),
            unreported: Mutex::new(BTreeMap::new()),
        }
    }

    /// Notes a call to `model` that a provider answered without reporting its token usage:
    /// it was counted as 0 tokens and $0.
    pub fn note_unreported(&self, model: &str) {
        let mut unreported = self
            .unreported
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *unreported.entry(model.to_string()).or_default() += 1;
    }

    /// One warning per model whose answers reported no token usage, for the end of the run.
    pub fn warnings(&self) -> Vec<String> {
        let unreported = self
            .unreported
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        unreported
            .iter()
            .map(|(model, calls)| {
                format!(
                    "{calls} answer(s) of model `{model}` reported no token usage, so they count as 0 tokens and $0 and no cost limit could stop them; ask for it (OpenAI streams: `\"stream_options\": {{\"include_usage\": true}}`)"
                )
            })
            .collect()
    }

    /// The limit in US dollars (`llm.max_cost_usd` or `--max-cost`), if there is one.
    pub fn limit(&self) -> Option<f64> {
        self.limit_usd
    }

    /// Counts a call that cost `cost`; with `spent`, the money was spent now (a provider
    /// answered), else the call was replayed and only its recorded cost is counted.
    pub fn charge(&self, cost: Money, spent: bool) {
        add(&self.cost, cost);
        if spent {
            add(&self.spent, cost);
        }
    }

    /// What the run's priced calls cost so far, replayed ones included.
    pub fn cost(&self) -> Money {
        Money::from_nanos(self.cost.load(Ordering::SeqCst))
    }

    /// The money the run's calls spent so far (replayed calls spend none).
    pub fn spent(&self) -> Money {
        Money::from_nanos(self.spent.load(Ordering::SeqCst))
    }

    /// True once the spending reached the limit: no further call is made, no trial starts.
    pub fn exhausted(&self) -> bool {
        self.limit.is_some_and(|limit| self.spent() >= limit)
    }
}

/// Adds `amount` to `total`, saturating (an integer sum: the same in any order).
fn add(total: &AtomicU64, amount: Money) {
    // `fetch_update` retries until no other call added in between; the closure never fails.
    let _ = total.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |nanos| {
        Some(nanos.saturating_add(amount.nanos()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_wire_formats_report_tokens() {
        assert_eq!(
            of_body(&json!({"usage": {"prompt_tokens": 10, "completion_tokens": 3}})),
            Some(Tokens {
                input: 10,
                output: 3
            })
        );
        assert_eq!(
            of_body(&json!({"usage": {"input_tokens": 7, "output_tokens": 2}})),
            Some(Tokens {
                input: 7,
                output: 2
            })
        );
        assert_eq!(of_body(&json!({"choices": [], "usage": null})), None);
        let unasked = [
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n".to_string(),
            "data: [DONE]\n\n".to_string(),
        ];
        assert_eq!(of_events(&unasked), None);
    }

    #[test]
    fn a_stream_reports_the_counts_of_its_events() {
        let events = vec![
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n".to_string(),
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n".to_string(),
            "data: [DONE]\n\n".to_string(),
        ];
        assert_eq!(
            of_events(&events),
            Some(Tokens {
                input: 25,
                output: 15
            })
        );
    }

    #[test]
    fn prices_match_exactly_or_by_the_longest_prefix() {
        let price = |input| Price {
            input_per_million: input,
            output_per_million: 2.0 * input,
        };
        let prices = Prices(BTreeMap::from([
            ("gpt-4o".to_string(), price(2.5)),
            ("gpt-4o-mini".to_string(), price(0.15)),
        ]));
        assert_eq!(prices.of("gpt-4o-mini-2024-07-18"), Some(price(0.15)));
        assert_eq!(prices.of("gpt-4o"), Some(price(2.5)));
        assert_eq!(prices.of("claude"), None);
        let cost = prices
            .cost(
                "gpt-4o",
                Tokens {
                    input: 1_000_000,
                    output: 500_000,
                },
            )
            .unwrap();
        assert_eq!(cost.usd(), 5.0);
    }

    #[test]
    fn only_money_spent_counts_against_the_limit() {
        let budget = Budget::new(Some(1.0));
        budget.charge(Money::from_usd(5.0), false);
        assert!(!budget.exhausted(), "a replayed call spends nothing");
        budget.charge(Money::from_usd(0.4), true);
        assert!(!budget.exhausted());
        budget.charge(Money::from_usd(0.6), true);
        assert!(budget.exhausted());
        assert_eq!((budget.cost().usd(), budget.spent().usd()), (6.0, 1.0));
        assert!(!Budget::new(None).exhausted());
    }
}
