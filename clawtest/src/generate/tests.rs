//! The pipeline end to end against hand-written cassettes.
