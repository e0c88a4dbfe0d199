//! Execution segments: running an exact fraction of a scenario, so that a
//! run can later be split across machines (k6's `--execution-segment`).
//!
//! A segment is `(from, to]` with rational bounds in [0, 1]. Counts scale
//! by `floor(n·to) − floor(n·from)`, and iteration `i` of a global
//! sequence belongs to the segment when that difference grows between `i`
//! and `i + 1`. Both are exact: segments that tile (0, 1] get every VU and
//! every iteration exactly once, with no rounding drift.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

impl Ratio {
    fn floor_times(self, n: u64) -> u64 {
        ((u128::from(n) * u128::from(self.num)) / u128::from(self.den)) as u64
    }
}

/// The part `(from, to]` of every scenario this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub from: Ratio,
    pub to: Ratio,
}

impl Default for Segment {
    fn default() -> Self {
        Segment::FULL
    }
}

impl Segment {
    pub const FULL: Segment = Segment {
        from: Ratio { num: 0, den: 1 },
        to: Ratio { num: 1, den: 1 },
    };

    /// Parse `from:to` where each is `a/b`, a decimal or a percentage:
    /// `0:1/3`, `1/3:2/3`, `0.5:1`, `50%:100%`.
    pub fn parse(text: &str) -> Result<Segment, String> {
        let err = || {
            format!("invalid execution segment {text:?}: expected from:to such as 0:1/3 or 1/3:2/3")
        };
        let (a, b) = text.split_once(':').ok_or_else(err)?;
        let (from, to) = (
            parse_ratio(a).ok_or_else(err)?,
            parse_ratio(b).ok_or_else(err)?,
        );
        let lt = |x: Ratio, y: Ratio| {
            u128::from(x.num) * u128::from(y.den) < u128::from(y.num) * u128::from(x.den)
        };
        if !lt(from, to) || lt(Ratio { num: 1, den: 1 }, to) {
            return Err(format!(
                "invalid execution segment {text:?}: need 0 ≤ from < to ≤ 1"
            ));
        }
        Ok(Segment { from, to })
    }

    /// This segment's share of `n` (VUs, iterations).
    pub fn scale(&self, n: u64) -> u64 {
        self.to.floor_times(n) - self.from.floor_times(n)
    }

    /// This segment's share of a VU count.
    pub fn scale_vus(&self, vus: u32) -> u32 {
        // The share of a u32 fits a u32.
        self.scale(u64::from(vus)) as u32
    }

    /// Whether iteration `i` (0-based) of a global sequence is ours.
    pub fn owns(&self, i: u64) -> bool {
        self.scale(i + 1) > self.scale(i)
    }

    pub fn is_full(&self) -> bool {
        *self == Segment::FULL
    }
}

fn parse_ratio(s: &str) -> Option<Ratio> {
    let s = s.trim();
    if let Some((n, d)) = s.split_once('/') {
        let (num, den) = (n.trim().parse().ok()?, d.trim().parse::<u64>().ok()?);
        return (den > 0 && num <= den).then_some(Ratio { num, den });
    }
    let (text, scale) = match s.strip_suffix('%') {
        Some(p) => (p, 100u64),
        None => (s, 1),
    };
    // Decimals: exact in base 10.
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let den = 10u64
        .checked_pow(u32::try_from(frac.len()).ok()?)?
        .checked_mul(scale)?;
    let num = format!("{int}{frac}").parse::<u64>().ok()?;
    (num <= den).then_some(Ratio { num, den })
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}:{}/{}",
            self.from.num, self.from.den, self.to.num, self.to.den
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirds_tile_counts_and_iterations_exactly() {
        let parts = ["0:1/3", "1/3:2/3", "2/3:1"].map(|s| Segment::parse(s).unwrap());
        for n in [0u64, 1, 2, 3, 10, 50_000, 1_000_001] {
            assert_eq!(parts.iter().map(|p| p.scale(n)).sum::<u64>(), n, "n={n}");
        }
        for i in 0..3000 {
            assert_eq!(parts.iter().filter(|p| p.owns(i)).count(), 1, "i={i}");
        }
        // Each third owns a third of every prefix, to within one.
        let owned = (0..3000).filter(|&i| parts[1].owns(i)).count();
        assert_eq!(owned, 1000);
    }

    #[test]
    fn segments_parse_in_several_notations() {
        assert_eq!(Segment::parse("0:1").unwrap(), Segment::FULL);
        assert_eq!(Segment::parse("50%:100%").unwrap().scale(10), 5);
        assert_eq!(Segment::parse("0.25:0.5").unwrap().scale(100), 25);
        for bad in ["", "1", "2/3:1/3", "0:2", "a:b", "0:1/0"] {
            assert!(Segment::parse(bad).is_err(), "{bad}");
        }
    }
}
