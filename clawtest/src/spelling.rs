//! "Did you mean": the known word nearest to a misspelt one, for every error that names a
//! word the user wrote (a service, an action, a check's parameter, a route's field).

/// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (edit_distance(word, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// "did you mean `x`?", else `list_intro` and every candidate.
pub fn suggestion(word: &str, candidates: &[&str], list_intro: &str) -> String {
    match nearest(word, candidates) {
        Some(near) => format!("did you mean `{near}`?"),
        None => format!("{list_intro}: {}", candidates.join(", ")),
    }
}

fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    for (row, left_char) in left.chars().enumerate() {
        let mut current = vec![row + 1; right.len() + 1];
        for (column, right_char) in right.iter().enumerate() {
            let substitution = previous[column] + usize::from(left_char != *right_char);
            current[column + 1] = substitution
                .min(previous[column + 1] + 1)
                .min(current[column] + 1);
        }
        previous = current;
    }
    previous[right.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_nearest_word_and_a_stranger_the_list() {
        assert_eq!(nearest("taskid", &["task_id", "title"]), Some("task_id"));
        assert_eq!(
            suggestion("zebra", &["task_id", "title"], "the fields are"),
            "the fields are: task_id, title"
        );
    }
}
