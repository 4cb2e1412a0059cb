//! The harness × model matrix of `clawtest.toml`: `[harness]` read in either of its two forms
//! (the keys of one unnamed harness, as always, or `[harness.<name>]` tables, one per named
//! harness; a table that mixes them is refused, since a key could be read either way),
//! `[matrix] models`, and the cells they make: every (harness, model) a harness does not
//! exclude, each described by the configuration a run of that cell alone would read
//! ([`Config::for_cell`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};

use super::sections::HarnessConfig;
use super::{Config, ConfigError};

/// The keys of one harness's table (`HarnessConfig`'s fields): a key of `[harness]` that is
/// one of these is the unnamed harness's, any other names a harness. A test checks the list
/// against the fields serde knows.
pub(crate) const HARNESS_KEYS: &[&str] = &[
    "kind",
    "command",
    "build",
    "env",
    "image",
    "dockerfile",
    "context",
    "tier",
    "answer",
    "follow_up",
    "success_exit_codes",
    "build_timeout_seconds",
    "model",
    "files",
    "exclude_models",
];

/// The name the unnamed `[harness]` takes in a matrix (its cassettes' and snapshots' folder).
pub const UNNAMED_HARNESS: &str = "default";

/// The name of a cell's model when no model is given (`CLAWTEST_MODEL` is then unset).
pub const UNNAMED_MODEL: &str = "default";

/// `[harness]` as written: one unnamed harness, or named ones.
#[derive(Debug, Clone)]
pub(super) enum Harnesses {
    /// `[harness]` with the keys of one harness (or no `[harness]` at all).
    One(Box<HarnessConfig>),
    /// `[harness.<name>]` tables, by name.
    Named(BTreeMap<String, HarnessConfig>),
}

impl Harnesses {
    /// Each harness with its table's name in messages (`harness`, `harness.<name>`).
    pub(super) fn by_field(&self) -> Vec<(String, &HarnessConfig)> {
        match self {
            Harnesses::One(harness) => vec![("harness".into(), &**harness)],
            Harnesses::Named(named) => named
                .iter()
                .map(|(name, harness)| (format!("harness.{name}"), harness))
                .collect(),
        }
    }
}

impl Default for Harnesses {
    fn default() -> Harnesses {
        Harnesses::One(Box::default())
    }
}

/// `[matrix]`: the models every harness is run with.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// The models, each passed to the harness as `CLAWTEST_MODEL` (and `{model}` in its
    /// `files`) and priced by `[llm.prices."<model>"]`; empty: each harness's own `model`.
    #[serde(default)]
    pub models: Vec<String>,
}

/// One cell of the matrix, as configured: a harness and the model it is run with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CellSpec {
    /// The harness's name (`[harness.<name>]`; [`UNNAMED_HARNESS`] for `[harness]`).
    pub harness: String,
    /// The model (`[matrix] models`, else the harness's `model`; [`UNNAMED_MODEL`] for none).
    pub model: String,
}

impl CellSpec {
    /// `harness/model`, as `--cell` matches and folders are named.
    pub fn name(&self) -> String {
        format!("{}/{}", self.harness, self.model)
    }
}

impl HarnessConfig {
    /// The first 12 hex digits of the SHA-256 of the harness as configured: its command,
    /// build, image or Dockerfile (by path), tier, answer, environment names and files. Two
    /// results of one harness name with other digests ran other harnesses.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let words = |command: &Option<super::CommandLine>| {
            command
                .as_ref()
                .map(super::CommandLine::words)
                .unwrap_or_default()
                .join("\u{0}")
        };
        let described = [
            format!("command={}", words(&self.command)),
            format!("build={}", words(&self.build)),
            format!("image={}", self.image.as_deref().unwrap_or_default()),
            format!("dockerfile={:?}", self.dockerfile),
            format!("context={:?}", self.context),
            format!("tier={:?}", self.tier),
            format!("answer={:?}", self.answer),
            format!("env={}", self.env.join(",")),
            format!("files={:?}", self.files),
            format!("success_exit_codes={:?}", self.success_exit_codes),
        ]
        .join("\n");
        // Said only when not the default, so that the digests of every harness before it
        // stayed what they were.
        let described = match self.follow_up {
            super::FollowUp::Restart => described,
            follow_up => format!("{described}\nfollow_up={follow_up:?}"),
        };
        let digest = Sha256::digest(described.as_bytes());
        digest
            .iter()
            .take(6)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

impl Config {
    /// Whether the suite is a matrix: named harnesses or `[matrix] models`. A suite that is
    /// not runs and reports exactly as one `[harness]` always has.
    pub fn is_matrix(&self) -> bool {
        !self.harnesses.is_empty() || !self.matrix.models.is_empty()
    }

    /// Every harness of the suite: the named ones, else the unnamed one.
    pub fn every_harness(&self) -> Vec<&HarnessConfig> {
        if self.harnesses.is_empty() {
            vec![&self.harness]
        } else {
            self.harnesses.values().collect()
        }
    }

    /// Every cell, harnesses by name then models in `[matrix]` order, but for the models a
    /// harness excludes. One cell (the unnamed harness, its model) when the suite is not a
    /// matrix.
    pub fn cells(&self) -> Vec<CellSpec> {
        let harnesses: Vec<(&str, &HarnessConfig)> = if self.harnesses.is_empty() {
            vec![(UNNAMED_HARNESS, &self.harness)]
        } else {
            self.harnesses
                .iter()
                .map(|(name, harness)| (name.as_str(), harness))
                .collect()
        };
        let mut cells = Vec::new();
        for (name, harness) in harnesses {
            let models: Vec<String> = if self.matrix.models.is_empty() {
                vec![harness.model.clone().unwrap_or(UNNAMED_MODEL.into())]
            } else {
                self.matrix.models.clone()
            };
            for model in models {
                if !harness.exclude_models.contains(&model) {
                    cells.push(CellSpec {
                        harness: name.to_string(),
                        model,
                    });
                }
            }
        }
        cells
    }

    /// The configuration a run of `cell` alone reads: its harness as `[harness]`, its model as
    /// the harness's `model`. The cassettes and snapshots folders are the run's to choose.
    pub fn for_cell(&self, cell: &CellSpec) -> Config {
        let mut config = self.clone();
        if let Some(harness) = self.harnesses.get(&cell.harness) {
            config.harness = harness.clone();
        }
        config.harness.model = (cell.model != UNNAMED_MODEL || config.harness.model.is_some())
            .then(|| cell.model.clone());
        config.harnesses = BTreeMap::new();
        config.matrix = MatrixConfig::default();
        config
    }

    /// The cells `patterns` select (`--cell HARNESS/MODEL`, globs); all when none is given.
    pub fn select_cells(&self, patterns: &[String]) -> Result<Vec<CellSpec>, ConfigError> {
        let cells = self.cells();
        if patterns.is_empty() {
            return Ok(cells);
        }
        let mut set = globset::GlobSetBuilder::new();
        for pattern in patterns {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|error| ConfigError::Value {
                    origin: "--cell".into(),
                    field: pattern.clone(),
                    message: format!("is not a glob: {error}"),
                })?;
            set.add(glob);
        }
        let set = set.build().map_err(|error| ConfigError::Value {
            origin: "--cell".into(),
            field: patterns.join(", "),
            message: error.to_string(),
        })?;
        let chosen: Vec<CellSpec> = cells
            .iter()
            .filter(|cell| set.is_match(cell.name()))
            .cloned()
            .collect();
        if chosen.is_empty() {
            return Err(ConfigError::Value {
                origin: self.origin.clone(),
                field: "--cell".into(),
                message: format!(
                    "{} matched no cell; the cells are {}",
                    patterns.join(", "),
                    cells
                        .iter()
                        .map(CellSpec::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        Ok(chosen)
    }
}

impl<'de> Deserialize<'de> for Harnesses {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Harnesses, D::Error> {
        deserializer.deserialize_map(HarnessesVisitor)
    }
}

struct HarnessesVisitor;

impl<'de> Visitor<'de> for HarnessesVisitor {
    type Value = Harnesses;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("the keys of one harness, or [harness.NAME] tables")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Harnesses, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Ok(Harnesses::default());
        };
        if HARNESS_KEYS.contains(&first.as_str()) {
            // The unnamed harness: its derived reader reads the whole table, this key first.
            let resumed = Resume {
                first: Some(first),
                map,
            };
            return HarnessConfig::deserialize(de::value::MapAccessDeserializer::new(resumed))
                .map(|harness| Harnesses::One(Box::new(harness)));
        }
        let mut named = BTreeMap::new();
        let mut key = Some(first);
        while let Some(name) = key {
            if HARNESS_KEYS.contains(&name.as_str()) {
                return Err(de::Error::custom(mixed(&name, named.keys())));
            }
            let harness = map.next_value::<NamedHarness>()?.0;
            named.insert(name, harness);
            key = map.next_key::<String>()?;
        }
        Ok(Harnesses::Named(named))
    }
}

/// The message for a `[harness]` with both a harness's key and named harnesses.
fn mixed<'a>(key: &str, names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<String> = names.map(|name| format!("[harness.{name}]")).collect();
    format!(
        "`{key}` is a key of one harness, but [harness] also names harnesses ({}): give every harness a name, [harness.NAME], or write one [harness] without names",
        names.join(", ")
    )
}

/// A map whose first key was already read, handed on whole.
struct Resume<A> {
    first: Option<String>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Resume<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let key = match self.first.take() {
            Some(first) => first,
            // Checked as it is read, so that an error points at the key itself.
            None => match self.map.next_key_seed(HarnessKey)? {
                Some(key) => key,
                None => return Ok(None),
            },
        };
        let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key of the unnamed harness's table, refused when it is not one of a harness's keys.
struct HarnessKey;

impl<'de> DeserializeSeed<'de> for HarnessKey {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        let key = String::deserialize(deserializer)?;
        if HARNESS_KEYS.contains(&key.as_str()) {
            return Ok(key);
        }
        Err(de::Error::custom(format!(
            "unknown key `{key}` of [harness]: {}; or, if `{key}` names a harness, give every harness a name, [harness.NAME], instead of keys of one [harness] beside them",
            crate::spelling::suggestion(&key, HARNESS_KEYS, "a harness's keys are")
        )))
    }
}

/// A named harness's table; anything but a table is a key of one harness misspelt, or a
/// harness written without its table.
struct NamedHarness(HarnessConfig);

impl<'de> Deserialize<'de> for NamedHarness {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<NamedHarness, D::Error> {
        deserializer.deserialize_any(NamedHarnessVisitor)
    }
}

struct NamedHarnessVisitor;

impl NamedHarnessVisitor {
    fn refuse<E: de::Error>(what: &str) -> Result<NamedHarness, E> {
        Err(E::custom(format!(
            "a key of [harness] that is not one of a harness's keys ({}) names a harness and must be a table [harness.NAME], found {what}",
            HARNESS_KEYS.join(", ")
        )))
    }
}

impl<'de> Visitor<'de> for NamedHarnessVisitor {
    type Value = NamedHarness;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a harness's table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NamedHarness, A::Error> {
        HarnessConfig::deserialize(de::value::MapAccessDeserializer::new(map)).map(NamedHarness)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<NamedHarness, E> {
        Self::refuse("a string")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<NamedHarness, E> {
        Self::refuse("a boolean")
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<NamedHarness, E> {
        Self::refuse("a number")
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<NamedHarness, E> {
        Self::refuse("a number")
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<NamedHarness, E> {
        Self::refuse("a number")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<NamedHarness, A::Error> {
        Self::refuse("a list")
    }
}

/// The checks of the matrix: harness names that can name a folder, models given once and
/// able to name one, excluded models that are models, no harness `model` beside `[matrix]`
/// models, and at least one cell.
pub(super) fn check(
    harnesses: &Harnesses,
    matrix: &MatrixConfig,
    value_error: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let named = harnesses.by_field();
    if let Harnesses::Named(named) = harnesses {
        for name in named.keys() {
            if !is_folder_name(name) {
                return Err(value_error(
                    &format!("harness.{name}"),
                    "a harness's name names its cassettes' folder: letters, digits, `_`, `-` and `.` (not starting with `.`), at most 60".into(),
                ));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for model in &matrix.models {
        if !is_folder_name(model) {
            return Err(value_error(
                "matrix.models",
                format!(
                    "`{model}` cannot name its cassettes' folder: letters, digits, `_`, `-` and `.` (not starting with `.`), at most 60"
                ),
            ));
        }
        if !seen.insert(model) {
            return Err(value_error(
                "matrix.models",
                format!("`{model}` is given twice"),
            ));
        }
    }
    for (field, harness) in &named {
        if !matrix.models.is_empty() && harness.model.is_some() {
            return Err(value_error(
                &format!("{field}.model"),
                "[matrix] models gives each cell its model: remove the harness's `model`, or `[matrix] models`".into(),
            ));
        }
        for excluded in &harness.exclude_models {
            if !matrix.models.contains(excluded) {
                return Err(value_error(
                    &format!("{field}.exclude_models"),
                    format!(
                        "`{excluded}` is not one of [matrix] models: {}",
                        crate::spelling::suggestion(
                            excluded,
                            &matrix.models.iter().map(String::as_str).collect::<Vec<_>>(),
                            "they are"
                        )
                    ),
                ));
            }
        }
        if !matrix.models.is_empty()
            && matrix
                .models
                .iter()
                .all(|model| harness.exclude_models.contains(model))
        {
            return Err(value_error(
                &format!("{field}.exclude_models"),
                "excludes every model: the harness would never run; remove it or keep a model"
                    .into(),
            ));
        }
        // A named harness's own model names its cells' folder.
        if let Some(model) = &harness.model
            && matches!(harnesses, Harnesses::Named(_))
            && !is_folder_name(model)
        {
            return Err(value_error(
                &format!("{field}.model"),
                format!(
                    "`{model}` cannot name its cassettes' folder: letters, digits, `_`, `-` and `.`"
                ),
            ));
        }
    }
    Ok(())
}

/// A name that can be one folder of a path: no separator, no `..`, nothing hidden.
fn is_folder_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 60
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}
