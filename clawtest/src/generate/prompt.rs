//! The Generator's prompts: one task's prompt (`prompts/task.md`) with the services' routes
//! and audit actions, the intent's atoms and the variety controls (ClawEnvKit's: the focus
//! action rotated over every action, `all_actions[i % n]`; the services' order shuffled by a
//! seed per task number; the names already written passed as "do not repeat"); and the
//! message that feeds a rejected answer's problems back (`prompts/retry.md`).

use std::fmt::Write as _;

use crate::services::ServiceDescription;
use crate::services::description::ParameterDescription;

use super::parse::{Intent, atom_lines};

const TASK: &str = include_str!("../../prompts/task.md");
const RETRY: &str = include_str!("../../prompts/retry.md");

/// How many names the "do not repeat" line lists (the newest), as ClawEnvKit's 10.
const AVOID: usize = 10;

/// What one task's prompt is made of.
#[derive(Debug, Clone)]
pub struct TaskPrompt<'a> {
    /// The user's request.
    pub request: &'a str,
    /// The parser's intent.
    pub intent: &'a Intent,
    /// The services the task may use (catalogue and generated), in the intent's order.
    pub services: &'a [&'a ServiceDescription],
    /// This task's number, from 1.
    pub number: u32,
    /// How many tasks the run writes.
    pub count: u32,
    /// The id the task must have.
    pub task_id: &'a str,
    /// The names of the tasks already in the suite and written by this run, oldest first.
    pub avoid: &'a [String],
    /// The run's seed.
    pub seed: u64,
}

impl TaskPrompt<'_> {
    /// Every action of the services, in the intent's order: what the focus rotates over.
    pub fn actions(&self) -> Vec<&str> {
        self.services
            .iter()
            .flat_map(|service| service.routes().iter().map(|route| route.action.as_str()))
            .collect()
    }

    /// The action task `number` is built around: `actions[(number - 1) % n]`.
    pub fn focus(&self) -> &str {
        let actions = self.actions();
        if actions.is_empty() {
            return "";
        }
        actions[(self.number as usize - 1) % actions.len()]
    }

    /// The prompt's text.
    pub fn text(&self) -> String {
        let mut order: Vec<&ServiceDescription> = self.services.to_vec();
        shuffle(
            &mut order,
            self.seed ^ u64::from(self.number).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let services: Vec<String> = order.iter().map(|service| describe(service)).collect();
        let actions: Vec<String> = order
            .iter()
            .flat_map(|service| {
                service
                    .routes()
                    .iter()
                    .map(|route| format!("`{}`", route.action))
            })
            .collect();
        let start = self.avoid.len().saturating_sub(AVOID);
        let avoid = if self.avoid[start..].is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self.avoid[start..]
                .iter()
                .map(|name| format!("\"{name}\""))
                .collect();
            format!(
                "These tasks exist already; write a different scenario, not one like them: {}.",
                names.join(", ")
            )
        };
        TASK.replace("{{number}}", &self.number.to_string())
            .replace("{{count}}", &self.count.to_string())
            .replace("{{request}}", self.request.trim())
            .replace("{{difficulty}}", self.intent.difficulty.name())
            .replace("{{services}}", &services.join("\n\n"))
            .replace("{{actions}}", &actions.join(", "))
            .replace("{{atoms}}", &atom_lines(&self.intent.atoms))
            .replace("{{focus}}", self.focus())
            .replace("{{avoid}}", &avoid)
            .replace("{{task_id}}", self.task_id)
    }
}

/// The message that sends `problems` (one per line) back for another attempt.
pub fn retry(problems: &[String]) -> String {
    RETRY.replace("{{problems}}", &problems.join("\n"))
}

/// A service as the prompt lists it: its routes with their actions and parameters, and the
/// fixture keys that seed it.
pub(crate) fn describe(service: &ServiceDescription) -> String {
    let mut text = format!("### `{}`: {}\n", service.name, service.description);
    let keys: Vec<String> = service
        .collections
        .iter()
        .flat_map(|collection| collection.fixture_keys.iter())
        .map(|key| format!("`{key}`"))
        .collect();
    if !keys.is_empty() {
        let _ = writeln!(
            text,
            "Fixtures: `fixtures: {{{}: {{KEY: [records]}}}}` with KEY one of {}.",
            service.name,
            keys.join(", ")
        );
    }
    for route in service.routes() {
        let parameters: Vec<String> = route.parameters.iter().map(parameter).collect();
        let _ = writeln!(
            text,
            "- `{} {}` — action `{}` — {}{}",
            route.method,
            route.endpoint,
            route.action,
            route.description,
            if parameters.is_empty() {
                String::new()
            } else {
                format!(" (parameters: {})", parameters.join(", "))
            }
        );
    }
    text.trim_end().to_owned()
}

fn parameter(parameter: &ParameterDescription) -> String {
    let ty = serde_json::to_value(parameter.ty)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{} {ty}{}",
        parameter.name,
        if parameter.required { ", required" } else { "" }
    )
}

/// Fisher–Yates with splitmix64 draws: the same seed, the same order, on every platform.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for index in (1..items.len()).rev() {
        let other = (next() % (index as u64 + 1)) as usize;
        items.swap(index, other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::parse::Difficulty;
    use crate::services::Catalogue;

    fn intent() -> Intent {
        Intent {
            services: vec!["gmail".into(), "calendar".into(), "contacts".into()],
            missing_services: Vec::new(),
            difficulty: Difficulty::Medium,
            atoms: Vec::new(),
        }
    }

    #[test]
    fn the_focus_rotates_over_every_action_and_the_order_follows_the_seed() {
        let catalogue = Catalogue::builtin();
        let services: Vec<&ServiceDescription> = ["gmail", "calendar", "contacts"]
            .iter()
            .filter_map(|name| catalogue.get(name))
            .collect();
        let intent = intent();
        let prompt = |number, seed| TaskPrompt {
            request: "r",
            intent: &intent,
            services: &services,
            number,
            count: 40,
            task_id: "t-001",
            avoid: &[],
            seed,
        };
        let actions = prompt(1, 1).actions().len() as u32;
        assert_eq!(prompt(1, 1).focus(), prompt(1 + actions, 1).focus());
        assert_ne!(prompt(1, 1).focus(), prompt(2, 1).focus());
        assert_eq!(prompt(3, 7).text(), prompt(3, 7).text());
        let orders: std::collections::BTreeSet<String> = (1..8)
            .map(|seed| {
                let text = prompt(1, seed).text();
                let mut found: Vec<(usize, &str)> =
                    ["### `gmail`", "### `calendar`", "### `contacts`"]
                        .iter()
                        .map(|heading| (text.find(heading).unwrap(), *heading))
                        .collect();
                found.sort();
                found.iter().map(|(_, heading)| *heading).collect()
            })
            .collect();
        assert!(
            orders.len() > 1,
            "every seed gave the same order: {orders:?}"
        );
    }

    #[test]
    fn only_the_newest_names_are_passed_as_do_not_repeat() {
        let catalogue = Catalogue::builtin();
        let services = [catalogue.get("todo").unwrap()];
        let intent = intent();
        let avoid: Vec<String> = (1..=12).map(|index| format!("name {index:02}")).collect();
        let text = TaskPrompt {
            request: "r",
            intent: &intent,
            services: &services,
            number: 1,
            count: 1,
            task_id: "t",
            avoid: &avoid,
            seed: 1,
        }
        .text();
        assert!(!text.contains("\"name 02\""), "{text}");
        assert!(text.contains("\"name 03\"") && text.contains("\"name 12\""));
    }
}
