//! The `category` and `capability` a generated task is grouped by when its answer names none:
//! derived from the services it uses, so the same task gets the same groups on every run and
//! the results' breakdowns (by category, by capability) hold generated suites too.
//!
//! Categories are ClawEnvKit's cross-service categories (`CROSS_SERVICE_CATEGORIES` in its
//! `task_generator.py`, the names its `--category` writes): the smallest whose services cover
//! the task's, in ClawEnvKit's order; a single-service task outside them is grouped under its
//! service (ClawEnvKit's `domain`), and a multi-service task outside them under `workflow`.

use crate::task::Capability;

/// ClawEnvKit's cross-service categories and their services, in its order.
const CATEGORIES: [(&str, &[&str]); 8] = [
    ("communication", &["gmail", "contacts"]),
    ("productivity", &["calendar", "todo", "notes"]),
    ("operations", &["helpdesk", "inventory", "crm"]),
    ("workflow", &["calendar", "contacts", "gmail"]),
    (
        "ops_dashboard",
        &["helpdesk", "crm", "inventory", "kb", "scheduler", "config"],
    ),
    ("procurement", &["crm", "finance", "inventory", "kb", "rss"]),
    ("safety", &["config", "gmail"]),
    ("knowledge", &["kb", "rss"]),
];

/// The category of a task that uses `services`.
pub(super) fn category(services: &[String]) -> String {
    let covering = CATEGORIES
        .iter()
        .filter(|(_, members)| {
            services
                .iter()
                .all(|service| members.contains(&service.as_str()))
        })
        .min_by_key(|(_, members)| members.len());
    match (covering, services) {
        (Some((name, _)), _) => (*name).to_string(),
        (None, [only]) => only.clone(),
        _ => "workflow".to_string(),
    }
}

/// The capability of a task that uses `services`: several services are UniClawBench's
/// cross-platform capability; one is skill usage (using the offered tools well).
pub(super) fn capability(services: &[String]) -> Capability {
    if services.len() > 1 {
        Capability::CrossPlatform
    } else {
        Capability::SkillUsage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(services: &[&str]) -> Vec<String> {
        services.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_smallest_clawenvkit_category_covering_the_services_else_the_service_or_workflow() {
        assert_eq!(category(&names(&["gmail", "contacts"])), "communication");
        assert_eq!(category(&names(&["contacts", "calendar"])), "workflow");
        assert_eq!(category(&names(&["todo"])), "productivity");
        assert_eq!(category(&names(&["kb"])), "knowledge");
        assert_eq!(category(&names(&["weather"])), "weather");
        assert_eq!(category(&names(&["todo", "weather"])), "workflow");
    }

    #[test]
    fn several_services_are_cross_platform_and_one_is_skill_usage() {
        assert_eq!(
            capability(&names(&["gmail", "todo"])),
            Capability::CrossPlatform
        );
        assert_eq!(capability(&names(&["todo"])), Capability::SkillUsage);
    }
}
