//! The built-in pools that new surface is drawn from: given names, family names, companies,
//! neutral filler text for distractor records and opening lines for prompts. None of these
//! words is special to any check; a draw that already occurs in a task is passed over.

/// Given names for renamed people.
pub(super) const GIVEN_NAMES: &[&str] = &[
    "Amara", "Bjorn", "Camila", "Dmitri", "Elif", "Farid", "Greta", "Hiroshi", "Ines", "Jonas",
    "Keiko", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Stefan", "Tamsin",
    "Umar", "Vera", "Wendell", "Ximena", "Yusuf", "Zora", "Anselm", "Beatriz", "Cyrus", "Dalia",
    "Emeka", "Freya", "Gideon", "Halima", "Ivo", "Juno", "Kofi", "Leontine", "Milos", "Noor",
];

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
