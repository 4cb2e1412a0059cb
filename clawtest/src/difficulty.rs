//! How hard a task is (`easy`, `medium`, `hard`): one type for a task's `difficulty`, the
//! `[generate] difficulty` of clawtest.toml, `generate --difficulty` and the parser's intent.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How hard the tasks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Difficulty {
    /// One step.
    Easy,
    /// Several steps and some judgement.
    Medium,
    /// Several services, traps and edge cases.
    Hard,
}

impl Difficulty {
    /// Every difficulty, easiest first.
    pub const ALL: [Difficulty; 3] = [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard];

    /// The difficulty a name stands for (`easy`, `medium`, `hard`).
    pub fn from_name(name: &str) -> Option<Difficulty> {
        Difficulty::ALL
            .into_iter()
            .find(|difficulty| difficulty.name() == name)
    }

    /// Its name in task.yaml and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }
}

impl fmt::Display for Difficulty {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl TryFrom<String> for Difficulty {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Difficulty::from_name(&name)
            .ok_or_else(|| format!("must be easy, medium or hard, found `{name}`"))
    }
}

impl From<Difficulty> for &'static str {
    fn from(difficulty: Difficulty) -> Self {
        difficulty.name()
    }
}

#[cfg(test)]
mod tests {
    use super::Difficulty;

    #[test]
    fn a_difficulty_reads_back_from_its_name_and_nothing_else_reads() {
        for difficulty in Difficulty::ALL {
            assert_eq!(Difficulty::from_name(difficulty.name()), Some(difficulty));
            let json = serde_json::to_string(&difficulty).unwrap();
            assert_eq!(json, format!("\"{difficulty}\""));
            assert_eq!(
                serde_json::from_str::<Difficulty>(&json).unwrap(),
                difficulty
            );
        }
        let error = serde_json::from_str::<Difficulty>("\"moderate\"").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("must be easy, medium or hard, found `moderate`"),
            "{error}"
        );
        assert_eq!(Difficulty::from_name("Easy"), None);
    }
}
