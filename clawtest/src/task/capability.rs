//! `capability` (a clawtest extension): the skill a task exercises, by which results are
//! grouped.

use serde::{Deserialize, Serialize};

/// The skill a task exercises (docs/task-format.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Using the tools (skills) offered well.
    SkillUsage,
    /// Finding what is not given: searching, reading, asking.
    Exploration,
    /// Working with much more text than one screen.
    LongContext,
    /// Images and other media beside text.
    Multimodal,
    /// Several services or platforms in one task.
    CrossPlatform,
}

impl Capability {
    /// Every capability, in the order the task format lists them.
    pub const ALL: [Capability; 5] = [
        Capability::SkillUsage,
        Capability::Exploration,
        Capability::LongContext,
        Capability::Multimodal,
        Capability::CrossPlatform,
    ];

    /// Its name in task.yaml and the results.
    pub const fn name(self) -> &'static str {
        match self {
            Capability::SkillUsage => "skill_usage",
            Capability::Exploration => "exploration",
            Capability::LongContext => "long_context",
            Capability::Multimodal => "multimodal",
            Capability::CrossPlatform => "cross_platform",
        }
    }

    /// The capability a name stands for.
    pub fn from_name(name: &str) -> Option<Capability> {
        Capability::ALL
            .into_iter()
            .find(|capability| capability.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::Capability;

    #[test]
    fn a_capability_is_its_name_in_json() {
        for capability in Capability::ALL {
            let json = serde_json::to_value(capability).unwrap();
            assert_eq!(json, capability.name());
            assert_eq!(Capability::from_name(capability.name()), Some(capability));
            assert_eq!(
                serde_json::from_value::<Capability>(json).unwrap(),
                capability
            );
        }
        assert_eq!(Capability::from_name("skills"), None);
    }
}
