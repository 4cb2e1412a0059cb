//! The few date-time conversions the services need, on Unix time in whole seconds plus
//! nanoseconds. Kept here (not a date crate) because the services only parse ISO 8601
//! dates from fixtures and print UTC instants.

/// An instant as nanoseconds since the Unix epoch, UTC.
pub(crate) type Instant = i128;

const NANOS: i128 = 1_000_000_000;
pub(crate) const DAY: i128 = 86_400 * NANOS;
pub(crate) const SECOND: i128 = NANOS;

/// Parses what Python's `datetime.fromisoformat` reads in fixtures: `YYYY-MM-DD`, then
/// optionally `T` or a space, `HH:MM[:SS[.fraction]]`, then optionally `Z` or `±HH:MM`.
/// A date without an offset is taken as UTC.
pub(crate) fn parse(text: &str) -> Option<Instant> {
    let b = text.trim().as_bytes();
    let num = |s: &[u8]| -> Option<i64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut rest = &b[10..];
    let (mut h, mut m, mut s, mut frac) = (0, 0, 0, 0i128);
    if let Some((&sep, tail)) = rest.split_first()
        && (sep == b'T' || sep == b' ')
    {
        if tail.len() < 5 || tail[2] != b':' {
            return None;
        }
        h = num(&tail[0..2])?;
        m = num(&tail[3..5])?;
        rest = &tail[5..];
        if rest.first() == Some(&b':') {
            s = num(rest.get(1..3)?)?;
            rest = &rest[3..];
            if rest.first() == Some(&b'.') {
                let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 {
                    return None;
                }
                let mut nanos = 0i128;
                for (i, d) in rest[1..=digits].iter().enumerate() {
                    if i < 9 {
                        nanos = nanos * 10 + i128::from(d - b'0');
                    }
                }
                for _ in digits..9 {
                    nanos *= 10;
                }
                frac = nanos;
                rest = &rest[1 + digits..];
            }
        }
        if h > 23 || m > 59 || s > 59 {
            return None;
        }
    }
    let offset_secs = match rest {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (oh, om) = match tail {
                [a, b, b':', c, d] | [a, b, c, d] => (num(&[*a, *b])?, num(&[*c, *d])?),
                [a, b] => (num(&[*a, *b])?, 0),
                _ => return None,
            };
            let secs = oh * 3600 + om * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - offset_secs;
    Some(i128::from(secs) * NANOS + frac)
}

/// `YYYY-MM-DDTHH:MM:SSZ`, truncating the fraction (Python `strftime("%Y-%m-%dT%H:%M:%SZ")`).
pub(crate) fn format_z(t: Instant) -> String {
    let (date, time, _) = split(t);
    format!("{date}T{time}Z")
}

/// Python's `datetime.now(timezone.utc).isoformat()`: `…+00:00`, microseconds only when
/// non-zero.
pub(crate) fn format_python_iso(t: Instant) -> String {
    let (date, time, nanos) = split(t);
    let micros = nanos / 1_000;
    if micros == 0 {
        format!("{date}T{time}+00:00")
    } else {
        format!("{date}T{time}.{micros:06}+00:00")
    }
}

fn split(t: Instant) -> (String, String, i128) {
    let secs = t.div_euclid(NANOS);
    let nanos = t.rem_euclid(NANOS);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days as i64);
    (
        format!("{y:04}-{mo:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", sod / 3600, sod % 3600 / 60, sod % 60),
        nanos,
    )
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub(crate) fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days.
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_iso_shapes_fixtures_use() {
        let z = parse("2026-01-02T09:00:00Z").unwrap();
        assert_eq!(z, 1_767_344_400 * NANOS);
        assert_eq!(parse("2026-01-02T10:00:00+01:00"), Some(z));
        assert_eq!(parse("2026-01-02 09:00:00"), Some(z));
        assert_eq!(parse("2026-01-02T09:00"), Some(z));
        assert_eq!(parse("2026-01-02T09:00:00.5Z"), Some(z + NANOS / 2));
        assert_eq!(parse("2026-01-02"), Some(z - 9 * 3600 * NANOS));
        assert_eq!(parse(""), None);
        assert_eq!(parse("2026-02-30"), None);
        assert_eq!(parse("yesterday"), None);
    }

    #[test]
    fn formats_like_python() {
        let t = parse("2024-02-29T23:59:59.25Z").unwrap();
        assert_eq!(format_z(t), "2024-02-29T23:59:59Z");
        assert_eq!(format_python_iso(t), "2024-02-29T23:59:59.250000+00:00");
        assert_eq!(
            format_python_iso(parse("1969-12-31T00:00:00Z").unwrap()),
            "1969-12-31T00:00:00+00:00"
        );
    }
}
