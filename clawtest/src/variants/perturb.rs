//! One variant's surface, drawn from a seed: the typed task in, the perturbed task out, with
//! what was changed. Values are found in the fixtures (people, companies and e-mail addresses
//! under the keys that name them, ids under `id`/`*_id`, ISO dates anywhere) and rewritten as
//! whole tokens in every text the agent or the grader reads (prompt, fixtures, tool
//! descriptions, checks' values, keywords, safety checks, checkpoints, feedback, oracle), each
//! check's by the table of `fields.rs`; the names of tools, services, actions and fields are
//! never touched. A value that occurs in a
//! regex, a hash's file, a command or a workspace file is left alone: those texts cannot be
//! rewritten safely.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::edit::Shape;
use super::fields::{self, Role, Slot};
use super::pools;
use super::survey::{AMOUNT_KEYS, PERSON_KEYS, Survey, id_parts, is_email, is_id_key, is_person};
use super::text::{Boundary, Replacements, Rng, dates, occurs, shift_date};
use super::{Kind, Kinds};
use crate::task::Task;

/// The factors amounts are scaled by.
const SCALES: &[f64] = &[0.5, 0.75, 1.25, 1.5, 2.0, 2.5];

/// What [`perturb`] did.
#[derive(Debug, Clone)]
pub(super) struct Perturbed {
    pub(super) task: Task,
    /// One line per kind that changed something, e.g. `ids: 3 renumbered`.
    pub(super) applied: Vec<String>,
    /// The whole-token replacements made (names, ids, dates), for editing the source's text.
    pub(super) replacements: Replacements,
    /// The opening line put before the prompt, if one was.
    pub(super) opening: Option<String>,
    /// Where the items of the fixtures' lists came from.
    pub(super) shape: Shape,
}

/// Draws one variant of `task` from `seed`: each kind switched on, in [`Kind::ALL`]'s order
/// (the order the seeded draws are made in).
pub(super) fn perturb(task: &Task, survey: &Survey, kinds: Kinds, seed: u64) -> Perturbed {
    let mut draw = Draw {
        rng: Rng::new(seed),
        fresh: Fresh {
            taken: BTreeSet::new(),
            all_text: &survey.all_text,
        },
        survey,
        shape: Shape::of(&task.fixtures),
        task: task.clone(),
        applied: Vec::new(),
        replacements: Replacements::default(),
        opening: None,
    };
    draw.replace(kinds);
    if kinds.has(Kind::Amounts) && survey.amounts_pinned.is_none() {
        draw.scale_amounts();
    }
    if kinds.has(Kind::Shuffle) {
        draw.shuffle();
    }
    if kinds.has(Kind::Distractors) && survey.counts_pinned.is_none() {
        draw.add_distractors();
    }
    if kinds.has(Kind::Wording) {
        draw.open_the_prompt();
    }
    Perturbed {
        task: draw.task,
        applied: draw.applied,
        replacements: draw.replacements,
        opening: draw.opening,
        shape: draw.shape,
    }
}

/// One variant being drawn.
struct Draw<'a> {
    rng: Rng,
    fresh: Fresh<'a>,
    survey: &'a Survey,
    task: Task,
    /// One line per kind that changed something.
    applied: Vec<String>,
    replacements: Replacements,
    opening: Option<String>,
    shape: Shape,
}

impl Draw<'_> {
    /// Names, ids and dates: new values drawn, then replaced as whole tokens everywhere.
    fn replace(&mut self, kinds: Kinds) {
        let survey = self.survey;
        let rng = &mut self.rng;
        let mut replacements = Replacements::default();
        if kinds.has(Kind::Names) {
            let count = rename(survey, rng, &mut self.fresh, &mut replacements);
            if count > 0 {
                self.applied.push(format!("names: {count} renamed"));
            }
        }
        if kinds.has(Kind::Ids) && !survey.ids.is_empty() {
            for id in &survey.ids {
                if let Some(new) = self.fresh.id(id, rng) {
                    replacements.insert(id, &new, Boundary::Word);
                }
            }
            self.applied
                .push(format!("ids: {} renumbered", survey.ids.len()));
        }
        if kinds.has(Kind::Dates) && !survey.dates.is_empty() {
            let weeks = (1 + rng.below(8)) as i64 * if rng.below(2) == 0 { 1 } else { -1 };
            for date in &survey.dates {
                if let Some(new) = shift_date(date, weeks * 7) {
                    replacements.insert(date, &new, Boundary::Digit);
                }
            }
            // Written out (`March 20th`) as the ISO dates move; whole weeks keep `Friday` true.
            for (date, year) in &survey.written {
                if let Some(new) = date.shifted(*year, weeks * 7) {
                    replacements.insert(&date.text, &new, Boundary::Word);
                }
            }
            self.applied.push(format!("dates: shifted {weeks:+} weeks"));
        }
        if !replacements.is_empty() {
            rewrite_task(&mut self.task, &replacements);
        }
        self.replacements = replacements;
    }

    /// The fixtures' amounts scaled by one drawn factor.
    fn scale_amounts(&mut self) {
        let factor = SCALES[self.rng.below(SCALES.len())];
        let mut scaled = 0;
        let task = &mut self.task;
        scale(&mut task.fixtures, None, factor, &task.prompt, &mut scaled);
        if scaled > 0 {
            self.applied
                .push(format!("amounts: {scaled} scaled by {factor}"));
        }
    }

    /// The fixtures' lists of records put in another order.
    fn shuffle(&mut self) {
        let mut lists = 0;
        let rng = &mut self.rng;
        for_each_list(
            &mut self.task.fixtures,
            &mut self.shape,
            &mut |list, origins| {
                if list.len() > 1 {
                    // The indices shuffled, not the items: the same draws, and the order known.
                    let mut order: Vec<usize> = (0..list.len()).collect();
                    rng.shuffle(&mut order);
                    *list = order.iter().map(|index| list[*index].clone()).collect();
                    *origins = order.iter().map(|index| origins[*index].clone()).collect();
                    lists += 1;
                }
            },
        );
        if lists > 0 {
            self.applied.push(format!("shuffle: {lists} fixture lists"));
        }
    }

    /// Up to three records no check refers to, each shaped like one of its list.
    fn add_distractors(&mut self) {
        let mut added = 0;
        let referenced = &self.survey.referenced;
        let (rng, fresh) = (&mut self.rng, &mut self.fresh);
        for_each_list(
            &mut self.task.fixtures,
            &mut self.shape,
            &mut |list, origins| {
                if list.is_empty() || added >= 3 {
                    return;
                }
                let chosen = rng.below(list.len());
                let template = list[chosen].clone();
                let record = distractor(&template, None, rng, fresh);
                let text = record.to_string().to_lowercase();
                if referenced.iter().any(|value| text.contains(value.as_str())) {
                    return;
                }
                let at = rng.below(list.len() + 1);
                list.insert(at, record);
                // Written as the record it was made from is.
                origins.insert(at, origins[chosen].clone());
                added += 1;
            },
        );
        if added > 0 {
            self.applied.push(format!("distractors: {added} records"));
        }
    }

    /// An opening line before the prompt that names nothing a check looks for.
    fn open_the_prompt(&mut self) {
        let start = self.rng.below(pools::OPENINGS.len());
        let referenced = &self.survey.referenced;
        let opening = (0..pools::OPENINGS.len())
            .map(|offset| pools::OPENINGS[(start + offset) % pools::OPENINGS.len()])
            .find(|opening| {
                let lower = opening.to_lowercase();
                !referenced
                    .iter()
                    .any(|value| lower.contains(value.as_str()))
            });
        if let Some(opening) = opening {
            self.task.prompt = format!("{opening} {}", self.task.prompt);
            self.opening = Some(opening.to_owned());
            self.applied.push("wording: an opening line".into());
        }
    }
}

/// Draws new given and family names (consistently per word, so two people sharing a given
/// name still do), companies and e-mail addresses.
fn rename(
    survey: &Survey,
    rng: &mut Rng,
    fresh: &mut Fresh,
    replacements: &mut Replacements,
) -> usize {
    let mut words: BTreeMap<String, String> = BTreeMap::new();
    for person in &survey.people {
        for (index, part) in person.split(' ').enumerate() {
            word(&mut words, part, index == 0, rng, fresh);
        }
    }
    for (part, given) in &survey.name_parts {
        word(&mut words, part, *given, rng, fresh);
    }
    let mut companies: BTreeMap<String, String> = BTreeMap::new();
    for company in &survey.companies {
        if let Some(new) = fresh.pick(pools::COMPANIES, rng) {
            companies.insert(company.clone(), new);
        }
    }
    let domains: BTreeMap<String, String> = companies
        .iter()
        .map(|(old, new)| (compact(old), compact(new)))
        .collect();
    let mut count = 0;
    for email in &survey.emails {
        let Some((local, domain)) = email.rsplit_once('@') else {
            continue;
        };
        let (first_label, rest_of_domain) = domain.split_once('.').unwrap_or((domain, ""));
        let new_domain = match domains.get(&first_label.to_lowercase()) {
            Some(new) if !rest_of_domain.is_empty() => format!("{new}.{rest_of_domain}"),
            _ => domain.to_owned(),
        };
        // A team's or a machine's address (`billing@`, `noreply@`) is no person: kept, only
        // its domain following its company.
        if pools::is_role_address(local) {
            if new_domain != domain {
                replacements.insert(email, &format!("{local}@{new_domain}"), Boundary::Word);
                count += 1;
            }
            continue;
        }
        // Each word of the local part is a name (`maria.lopez`, `alice`): renamed as the
        // person is, so `Alice` in a keyword follows `alice@…`; anything else is drawn anew.
        let parts: Vec<&str> = local.split(['.', '_', '-']).collect();
        let named = parts
            .iter()
            .all(|part| part.len() >= 2 && part.chars().all(|c| c.is_ascii_alphabetic()));
        let new_local = if named {
            let mut new = String::new();
            let mut rest = local;
            for (index, part) in parts.iter().enumerate() {
                let known = words
                    .iter()
                    .find(|(old, _)| old.eq_ignore_ascii_case(part))
                    .map(|(_, new)| new.clone());
                let replacement = match known {
                    Some(new) => new,
                    None => word(&mut words, &capitalised(part), index == 0, rng, fresh),
                };
                new.push_str(&replacement.to_lowercase());
                rest = &rest[part.len()..];
                if let Some(separator) = rest.chars().next() {
                    new.push(separator);
                    rest = &rest[1..];
                }
            }
            new
        } else {
            let given = fresh
                .pick(pools::UNISEX_NAMES, rng)
                .unwrap_or_else(|| "user".into());
            let family = fresh.pick(pools::FAMILY_NAMES, rng).unwrap_or_default();
            format!("{}.{}", given.to_lowercase(), family.to_lowercase())
        };
        let new = format!("{new_local}@{new_domain}");
        fresh.taken.insert(new.to_lowercase());
        replacements.insert(email, &new, Boundary::Word);
        count += 1;
    }
    for (old, new) in &words {
        replacements.insert(old, new, Boundary::Word);
    }
    for (old, new) in &companies {
        replacements.insert(old, new, Boundary::Word);
    }
    count + words.len() + companies.len()
}

/// The new name for the name word `old` (a given name when `given`), the same each time.
fn word(
    words: &mut BTreeMap<String, String>,
    old: &str,
    given: bool,
    rng: &mut Rng,
    fresh: &mut Fresh,
) -> String {
    if let Some(new) = words.get(old) {
        return new.clone();
    }
    // A given name is drawn from its own pool, so the pronouns the task uses for the person
    // stay right: feminine for a known feminine name, masculine for a masculine one, unisex
    // for a name the pools do not know.
    let pool = match given {
        true => pools::given_pool(old),
        false => pools::FAMILY_NAMES,
    };
    let new = fresh.pick(pool, rng).unwrap_or_else(|| old.to_owned());
    words.insert(old.to_owned(), new.clone());
    new
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect()
    })
}

/// New values that occur nowhere in the task and were not drawn before.
struct Fresh<'a> {
    taken: BTreeSet<String>,
    all_text: &'a str,
}

impl Fresh<'_> {
    fn free(&self, value: &str) -> bool {
        let lower = value.to_lowercase();
        !self.taken.contains(&lower) && !occurs(self.all_text, &lower, Boundary::Word)
    }

    fn pick(&mut self, pool: &[&str], rng: &mut Rng) -> Option<String> {
        let start = rng.below(pool.len());
        let found = (0..pool.len())
            .map(|offset| pool[(start + offset) % pool.len()])
            .find(|candidate| self.free(candidate))?;
        self.taken.insert(found.to_lowercase());
        Some(found.to_owned())
    }

    /// `old`'s prefix with a new number: three digits at least (`t-1` → `t-417`), as many as
    /// `old` had, zero-padded when it was.
    fn id(&mut self, old: &str, rng: &mut Rng) -> Option<String> {
        let (prefix, digits) = id_parts(old)?;
        let width = digits.len().clamp(3, 9);
        let low = if digits.starts_with('0') {
            1
        } else {
            10u64.pow(width as u32 - 1)
        };
        let high = 10u64.pow(width as u32);
        for _ in 0..64 {
            let number = low + rng.next() % (high - low);
            let candidate = format!("{prefix}{number:0width$}");
            if self.free(&candidate) {
                self.taken.insert(candidate.to_lowercase());
                return Some(candidate);
            }
        }
        None
    }

    fn email(&mut self, old: &str, rng: &mut Rng) -> String {
        let domain = old
            .rsplit_once('@')
            .map_or("example.com", |(_, domain)| domain);
        let given = self
            .pick(pools::GIVEN_NAMES, rng)
            .unwrap_or_else(|| "someone".into());
        let family = self.pick(pools::FAMILY_NAMES, rng).unwrap_or_default();
        let new = format!(
            "{}.{}@{domain}",
            given.to_lowercase(),
            family.to_lowercase()
        );
        self.taken.insert(new.clone());
        new
    }
}

/// A record shaped like `template` that nothing refers to: new ids, people and addresses,
/// filler text, dates a few weeks away; one-word values (states, tags) kept as they are.
fn distractor(template: &Value, key: Option<&str>, rng: &mut Rng, fresh: &mut Fresh) -> Value {
    match template {
        Value::String(text) => {
            let id_key = key.is_some_and(is_id_key);
            let key = key.unwrap_or_default().to_ascii_lowercase();
            if is_email(text) {
                Value::from(fresh.email(text, rng))
            } else if id_key && id_parts(text).is_some() {
                Value::from(fresh.id(text, rng).unwrap_or_else(|| text.clone()))
            } else if PERSON_KEYS.contains(&key.as_str()) && is_person(text) {
                let given = fresh.pick(pools::GIVEN_NAMES, rng).unwrap_or_default();
                let family = fresh.pick(pools::FAMILY_NAMES, rng).unwrap_or_default();
                Value::from(format!("{given} {family}"))
            } else if !dates(text).is_empty() {
                let mut replacements = Replacements::default();
                let days = 7 * (3 + rng.below(6)) as i64;
                for date in dates(text) {
                    if let Some(new) = shift_date(date, days) {
                        replacements.insert(date, &new, Boundary::Digit);
                    }
                }
                Value::from(replacements.apply(text))
            } else if text.contains(' ') {
                Value::from(pools::FILLER[rng.below(pools::FILLER.len())])
            } else {
                Value::from(text.clone())
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| distractor(item, key, rng, fresh))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), distractor(item, Some(key), rng, fresh)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Applies `replacements` to every text of the task that holds values: the prompt, the name,
/// the fixtures, the tools' descriptions, the checks' values and prose (by the table of
/// `fields.rs`), the checkpoints' feedback, the follow-up messages and persona, the oracle's
/// arguments, answer and files.
fn rewrite_task(task: &mut Task, replacements: &Replacements) {
    task.prompt = replacements.apply(&task.prompt);
    task.name = replacements.apply(&task.name);
    rewrite_all(&mut task.fixtures, replacements);
    for tool in &mut task.tools {
        tool.description = replacements.apply(&tool.description);
    }
    for checkpoint in &mut task.checkpoints {
        if let Some(feedback) = &mut checkpoint.feedback {
            *feedback = replacements.apply(feedback);
        }
    }
    for (_, mut check) in fields::checks_mut(task) {
        for (role, slot) in check.slots() {
            if matches!(role, Role::Regex | Role::Command) {
                continue;
            }
            match slot {
                Slot::Text(text) => *text = replacements.apply(text),
                Slot::Texts(texts) => texts
                    .iter_mut()
                    .for_each(|text| *text = replacements.apply(text)),
                Slot::Data(value) => rewrite_all(value, replacements),
            }
        }
    }
    if let Some(feedback) = &mut task.feedback {
        for message in &mut feedback.messages {
            *message = replacements.apply(message);
        }
        if let Some(persona) = &mut feedback.persona {
            *persona = replacements.apply(persona);
        }
    }
    if let Some(oracle) = &mut task.oracle {
        for call in oracle.calls.iter_mut().flatten() {
            call.arguments
                .values_mut()
                .for_each(|argument| rewrite_all(argument, replacements));
        }
        if let Some(answer) = &mut oracle.answer {
            *answer = replacements.apply(answer);
        }
        for file in &mut oracle.files {
            file.content = replacements.apply(&file.content);
        }
    }
}

fn rewrite_all(value: &mut Value, replacements: &Replacements) {
    match value {
        Value::String(text) => *text = replacements.apply(text),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| rewrite_all(item, replacements)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| rewrite_all(item, replacements)),
        _ => {}
    }
}

/// Where a list's items came from, in [`Shape::List`]'s form.
type Origins = Vec<(usize, Shape)>;

/// Every list of records (objects) in the fixtures, innermost first, with where its items came
/// from (`shape`, which the callback keeps in step with the list).
fn for_each_list(
    value: &mut Value,
    shape: &mut Shape,
    each: &mut dyn FnMut(&mut Vec<Value>, &mut Origins),
) {
    match (value, shape) {
        (Value::Array(items), Shape::List(origins)) if items.len() == origins.len() => {
            for (item, (_, shape)) in items.iter_mut().zip(origins.iter_mut()) {
                for_each_list(item, shape, each);
            }
            if !items.is_empty() && items.iter().all(Value::is_object) {
                each(items, origins);
            }
        }
        (Value::Object(map), Shape::Map(shapes)) => {
            for (key, item) in map.iter_mut() {
                if let Some(shape) = shapes.get_mut(key) {
                    for_each_list(item, shape, each);
                }
            }
        }
        _ => {}
    }
}

fn scale(value: &mut Value, key: Option<&str>, factor: f64, prompt: &str, scaled: &mut usize) {
    match value {
        Value::Number(number) if key.is_some_and(|key| AMOUNT_KEYS.contains(&key)) => {
            // An amount the prompt states is pinned by the prompt.
            if occurs(prompt, &number.to_string(), Boundary::Digit) {
                return;
            }
            let new = if let Some(integer) = number.as_i64() {
                Value::from((integer as f64 * factor).round() as i64)
            } else if let Some(float) = number.as_f64() {
                Value::from((float * factor * 100.0).round() / 100.0)
            } else {
                return;
            };
            if new != *value {
                *value = new;
                *scaled += 1;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| scale(item, key, factor, prompt, scaled)),
        Value::Object(map) => map
            .iter_mut()
            .for_each(|(key, item)| scale(item, Some(key), factor, prompt, scaled)),
        _ => {}
    }
}

fn compact(company: &str) -> String {
    company
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_lowercase()
}
