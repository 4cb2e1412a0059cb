//! The built-in pools that new surface is drawn from: given names, family names, companies,
//! neutral filler text for distractor records and opening lines for prompts. None of these
//! words is special to any check; a draw that already occurs in a task is passed over.

/// Given names for distractor records and new addresses: every pool below.
pub(super) const GIVEN_NAMES: &[&str] = &[
    "Amara", "Bjorn", "Camila", "Dmitri", "Elif", "Farid", "Greta", "Hiroshi", "Ines", "Jonas",
    "Keiko", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Stefan", "Tamsin",
    "Umar", "Vera", "Wendell", "Ximena", "Yusuf", "Zora", "Anselm", "Beatriz", "Cyrus", "Dalia",
    "Emeka", "Freya", "Gideon", "Halima", "Ivo", "Juno", "Kofi", "Leontine", "Milos", "Noor",
];

/// Feminine given names: a person with a feminine name is renamed from these.
pub(super) const FEMININE_NAMES: &[&str] = &[
    "Amara", "Camila", "Elif", "Greta", "Ines", "Keiko", "Lucia", "Nadia", "Priya", "Rosa",
    "Tamsin", "Vera", "Ximena", "Zora", "Beatriz", "Dalia", "Freya", "Halima", "Leontine", "Noor",
];

/// Masculine given names: a person with a masculine name is renamed from these.
pub(super) const MASCULINE_NAMES: &[&str] = &[
    "Bjorn", "Dmitri", "Farid", "Hiroshi", "Jonas", "Mateo", "Oskar", "Quentin", "Stefan", "Umar",
    "Wendell", "Yusuf", "Anselm", "Cyrus", "Emeka", "Gideon", "Ivo", "Kofi", "Milos", "Tobias",
];

/// Given names used for anyone: a person whose name the lists below do not know is renamed
/// from these, so that whatever pronoun the task uses still fits.
pub(super) const UNISEX_NAMES: &[&str] = &[
    "Avery", "Rowan", "Sasha", "Robin", "Quinn", "Morgan", "Riley", "Kai", "Noa", "Dana", "Jamie",
    "Remy", "Eden", "Ari", "Tenzin", "Nikita", "Emerson", "Shay", "Lior", "Marlowe",
];

/// Given names common in tasks, by the pool their replacement comes from (the pools' own names
/// count too, so a variant of a variant keeps them).
const KNOWN_FEMININE: &[&str] = &[
    "alice",
    "amy",
    "ana",
    "anna",
    "beth",
    "carol",
    "catherine",
    "chloe",
    "claire",
    "diana",
    "elena",
    "ella",
    "ellen",
    "emily",
    "emma",
    "eva",
    "fatima",
    "fiona",
    "grace",
    "hannah",
    "helen",
    "irene",
    "jane",
    "jennifer",
    "jessica",
    "joan",
    "julia",
    "karen",
    "kate",
    "laura",
    "linda",
    "lisa",
    "lucy",
    "maria",
    "mary",
    "mia",
    "nancy",
    "nina",
    "olivia",
    "patricia",
    "rachel",
    "rebecca",
    "sara",
    "sarah",
    "sofia",
    "sophie",
    "susan",
    "tina",
    "victoria",
    "wendy",
    "zoe",
    "aisha",
    "mei",
    "yuki",
    "ingrid",
    "sandra",
    "monica",
    "megan",
    "natalie",
];

const KNOWN_MASCULINE: &[&str] = &[
    "adam", "ahmed", "alan", "ben", "bob", "brian", "carlos", "charles", "dan", "daniel", "david",
    "edward", "eric", "frank", "george", "henry", "ivan", "jack", "james", "jason", "john", "jose",
    "kevin", "luis", "marco", "mark", "michael", "mike", "nick", "oliver", "paul", "peter", "raj",
    "richard", "robert", "steve", "steven", "thomas", "tim", "tom", "victor", "william", "hans",
    "omar", "lars", "pedro", "andrew", "joseph", "greg", "ken",
];

/// The pool a replacement for the given name `old` is drawn from.
pub(super) fn given_pool(old: &str) -> &'static [&'static str] {
    let lower = old.to_lowercase();
    let known = |list: &[&str]| list.iter().any(|name| name.eq_ignore_ascii_case(&lower));
    if known(KNOWN_FEMININE) || known(FEMININE_NAMES) {
        FEMININE_NAMES
    } else if known(KNOWN_MASCULINE) || known(MASCULINE_NAMES) {
        MASCULINE_NAMES
    } else {
        UNISEX_NAMES
    }
}

/// The local parts of role and system addresses: a team's or a machine's, not a person's. An
/// address whose local part is one of these, or made of them (`it-support`, `billing.team`), is
/// kept; a name made with one (`Support Team`) is not taken for a person's.
pub(super) const ROLE_WORDS: &[&str] = &[
    "accounts",
    "accounting",
    "admin",
    "alerts",
    "billing",
    "bot",
    "careers",
    "compliance",
    "contact",
    "customerservice",
    "daemon",
    "department",
    "desk",
    "do",
    "donotreply",
    "feedback",
    "finance",
    "help",
    "helpdesk",
    "hello",
    "hr",
    "info",
    "invoices",
    "it",
    "jobs",
    "legal",
    "mailer",
    "marketing",
    "media",
    "news",
    "newsletter",
    "no",
    "noreply",
    "notifications",
    "office",
    "ops",
    "orders",
    "payments",
    "payroll",
    "postmaster",
    "press",
    "privacy",
    "procurement",
    "reception",
    "recruiting",
    "reply",
    "root",
    "sales",
    "security",
    "service",
    "services",
    "support",
    "system",
    "team",
    "webmaster",
];

/// Whether `local` (an address's part before `@`) is a role's, by [`ROLE_WORDS`].
pub(super) fn is_role_address(local: &str) -> bool {
    let lower = local.to_lowercase();
    let words: Vec<&str> = lower.split(['.', '_', '-', '+']).collect();
    // `no` and `do` are role words only with the rest of `no-reply`, `do-not-reply`.
    let real = words
        .iter()
        .any(|word| !matches!(*word, "no" | "do" | "not" | "reply"));
    words
        .iter()
        .all(|word| *word == "not" || ROLE_WORDS.contains(word))
        && (real || lower.contains("reply"))
}

/// Whether `name` (two or three capitalised words) names a team rather than a person.
pub(super) fn is_role_name(name: &str) -> bool {
    name.split(' ')
        .any(|word| ROLE_WORDS.contains(&word.to_lowercase().as_str()) && word.len() > 2)
}

/// Family names for renamed people.
pub(super) const FAMILY_NAMES: &[&str] = &[
    "Achterberg",
    "Bianchi",
    "Castellanos",
    "Dubois",
    "Eriksen",
    "Fonseca",
    "Gallagher",
    "Haddad",
    "Ivanova",
    "Jansen",
    "Kowalczyk",
    "Lindqvist",
    "Mwangi",
    "Nakashima",
    "Okafor",
    "Petrov",
    "Quispe",
    "Rasmussen",
    "Szabo",
    "Takahashi",
    "Urquhart",
    "Varga",
    "Whitcombe",
    "Xiang",
    "Yilmaz",
    "Zielinski",
    "Abernathy",
    "Brennan",
    "Cardoso",
    "Delacroix",
];

/// Companies (each one word, so its e-mail domain is its lowercase form).
pub(super) const COMPANIES: &[&str] = &[
    "Aldermoor",
    "Brightwell",
    "Cobaltline",
    "Dunmore",
    "Eastmere",
    "Fernhollow",
    "Glenrock",
    "Harborview",
    "Ironbridge",
    "Juniperia",
    "Kestrelworks",
    "Larkspur",
    "Meridian Forge",
    "Northwind Labs",
    "Oakhaven",
    "Pinecrest",
    "Quarrystone",
    "Redfern Systems",
    "Silverbirch",
    "Thistledown",
    "Umberfield",
    "Vantage Row",
    "Willowmere",
    "Yarrow & Co",
];

/// Text for distractor records: statements that ask nothing of anyone.
pub(super) const FILLER: &[&str] = &[
    "The office plants are watered on Fridays",
    "Parking level two is being repainted this month",
    "The coffee machine on floor three has been serviced",
    "Photos from the summer picnic are on the shared drive",
    "The lobby music playlist was refreshed",
    "Bicycle racks were added behind the building",
    "The library corner has new magazines",
    "Window cleaning is scheduled for the weekend",
    "The kitchen now stocks oat milk",
    "Lost and found is at the front desk",
    "The elevator inspection certificate was renewed",
    "A new mural went up in the stairwell",
];

/// Opening lines for prompts: polite framing that changes no instruction.
pub(super) const OPENINGS: &[&str] = &[
    "Hi there.",
    "Hello!",
    "Good morning.",
    "Thanks for helping out today.",
    "I have a request for you.",
    "When you get a moment, please help with this.",
    "Here is something I need done.",
    "Quick favour to ask.",
    "Hope your day is going well.",
    "I'd appreciate your help with the following.",
    "Small task for you.",
    "Here's what I need.",
];
