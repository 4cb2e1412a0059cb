//! Money as whole nano-dollars: a sum of integers is the same in any order, so the run's
//! total does not depend on which parallel trial's call finished first (a float total did:
//! `0.0007065` one run, `0.0007065000000000001` the next). Floats appear only at the edges:
//! prices as configured, and US dollars as the results show them.

use std::ops::{Add, AddAssign};

/// Nano-dollars per US dollar.
const NANOS_PER_USD: f64 = 1e9;

/// An amount of money, in whole nano-dollars (10⁻⁹ US dollars).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money {
    nanos: u64,
}

impl Money {
    /// No money.
    pub const ZERO: Money = Money { nanos: 0 };

    /// `nanos` nano-dollars.
    pub const fn from_nanos(nanos: u64) -> Money {
        Money { nanos }
    }

    /// `usd` US dollars, to the nearest nano-dollar (nothing for a negative or NaN amount,
    /// the most a `u64` holds for a huge one).
    pub fn from_usd(usd: f64) -> Money {
        // `as` saturates: NaN and negatives become 0, too large becomes `u64::MAX`.
        Money {
            nanos: (usd * NANOS_PER_USD).round() as u64,
        }
    }

    /// The amount in nano-dollars.
    pub const fn nanos(self) -> u64 {
        self.nanos
    }

    /// The amount in US dollars, as the results show it: the float nearest to the exact
    /// decimal (so `706500` nano-dollars is `0.0007065`).
    pub fn usd(self) -> f64 {
        self.nanos as f64 / NANOS_PER_USD
    }

    /// The cost of `tokens` at `usd_per_million` US dollars per million tokens, before
    /// rounding: in 10⁻¹⁵ dollars (the price is kept to the nano-dollar per million tokens).
    pub(crate) fn femtos(tokens: u64, usd_per_million: f64) -> u128 {
        let nanos_per_million = (usd_per_million * NANOS_PER_USD).round() as u128;
        u128::from(tokens) * nanos_per_million
    }

    /// An amount of 10⁻¹⁵ dollars, to the nearest nano-dollar.
    pub(crate) fn from_femtos(femtos: u128) -> Money {
        let nanos = (femtos + 500_000) / 1_000_000;
        Money {
            nanos: u64::try_from(nanos).unwrap_or(u64::MAX),
        }
    }
}

/// `usd` US dollars as every output shows them: `$` and four decimals, more for an amount
/// that four would show as (nearly) nothing — two significant digits, down to the
/// nano-dollar — so `$0.00004` is `$0.000040`, not `$0.0000`.
pub fn dollars(usd: f64) -> String {
    let nanos = Money::from_usd(usd).nanos();
    let fraction = nanos % 1_000_000_000;
    // The decimal place of the first digit that is not 0 (1 for tenths); none for whole dollars.
    let first = (1..=9u32).find(|place| fraction / 10u64.pow(9 - place) > 0);
    let decimals = first.map_or(4, |first| (first + 1).clamp(4, 9));
    let unit = 10u64.pow(9 - decimals);
    let rounded = (nanos / unit + u64::from(nanos % unit * 2 >= unit)) * unit;
    let shown = rounded % 1_000_000_000 / unit;
    format!(
        "${}.{shown:0width$}",
        rounded / 1_000_000_000,
        width = decimals as usize
    )
}

impl Add for Money {
    type Output = Money;

    fn add(self, other: Money) -> Money {
        Money {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
}

impl AddAssign for Money {
    fn add_assign(&mut self, other: Money) {
        *self = *self + other;
    }
}

impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(amounts: I) -> Money {
        amounts.fold(Money::ZERO, Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sum_is_the_same_in_any_order_and_shows_the_exact_decimal() {
        let amounts = [0.1, 0.2, 0.3].map(Money::from_usd);
        // As floats, the order shows: (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3).
        assert_ne!((0.1 + 0.2) + 0.3, 0.1 + (0.2 + 0.3));
        let forward: Money = amounts.iter().copied().sum();
        let backward: Money = amounts.iter().rev().copied().sum();
        assert_eq!(forward, backward);
        assert_eq!(forward.usd(), 0.6);
        assert_eq!(Money::from_nanos(706_500).usd().to_string(), "0.0007065");
    }

    #[test]
    fn dollars_show_four_decimals_or_two_significant_digits() {
        assert_eq!(dollars(0.0), "$0.0000");
        assert_eq!(dollars(1.23456), "$1.2346");
        assert_eq!(dollars(12.0), "$12.0000");
        assert_eq!(dollars(0.00004), "$0.000040");
        assert_eq!(dollars(0.0007065), "$0.00071");
        assert_eq!(dollars(0.000000001), "$0.000000001");
        assert_eq!(dollars(0.99996), "$1.0000");
    }

    #[test]
    fn a_cost_is_rounded_once_to_the_nano_dollar() {
        // 1817 tokens at $0.15 per million: $0.00027255 exactly.
        let cost = Money::from_femtos(Money::femtos(1817, 0.15));
        assert_eq!(cost, Money::from_nanos(272_550));
        // Sub-nano-dollar remainders round to the nearest nano-dollar, once per call.
        assert_eq!(Money::from_femtos(Money::femtos(1, 0.0004)), Money::ZERO);
        assert_eq!(
            Money::from_femtos(Money::femtos(2, 0.0004)),
            Money::from_nanos(1)
        );
        assert_eq!(
            Money::from_femtos(Money::femtos(5_000, 0.0001)),
            Money::from_nanos(500)
        );
    }

    #[test]
    fn no_amount_overflows_or_goes_below_zero() {
        assert_eq!(Money::from_usd(-1.0), Money::ZERO);
        assert_eq!(Money::from_usd(f64::NAN), Money::ZERO);
        assert_eq!(
            Money::from_nanos(u64::MAX) + Money::from_nanos(1),
            Money::from_nanos(u64::MAX)
        );
    }
}
