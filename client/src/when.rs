//! Times as `weft schedules` reads and writes them: `--every` lengths (`1h`,
//! `90m`, `3600s`, `1h30m`), and the gateway's RFC 3339 stamps shown the way
//! people read a calendar (`Mon 2026-01-05 09:00 +08:00`) or a delay (`2m 5s`).
//!
//! The gateway renders every time, next fires already in the schedule's own
//! timezone, so the client needs no timezone database: it only re-spells what
//! it is given and subtracts two instants.

/// `--every`: whole numbers with a unit each — `d`, `h`, `m`, `s` — summed
/// (`1h30m`); the result in seconds. The gateway's floor (a minute) is its to
/// say: a shorter one comes back as a 422 naming `trigger.every_secs`.
pub fn parse_every(text: &str) -> Result<u64, String> {
    let wrong = || format!("{text:?} is not a length of time: write e.g. 1h, 90m, 3600s or 1h30m");
    let s = text.trim();
    if s.is_empty() {
        return Err(wrong());
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit: u64 = match c.to_ascii_lowercase() {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return Err(wrong()),
        };
        let n: u64 = digits.parse().map_err(|_| wrong())?;
        digits.clear();
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(wrong)?;
    }
    if !digits.is_empty() || total == 0 {
        return Err(wrong());
    }
    Ok(total)
}

/// An RFC 3339 stamp taken apart: the wall clock it names and its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
    /// East of UTC; `None` for `Z`.
    offset_minutes: Option<i32>,
}

impl Stamp {
    /// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`, as the gateway writes them.
    fn parse(s: &str) -> Option<Stamp> {
        let s = s.trim();
        let num = |a: usize, b: usize| s.get(a..b)?.parse::<u32>().ok();
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let mut rest = &s[19..];
        let mut millis = 0;
        if let Some(frac) = rest.strip_prefix('.') {
            let len = frac.bytes().take_while(u8::is_ascii_digit).count();
            let digits = &frac[..len];
            let three: String = digits.chars().chain("000".chars()).take(3).collect();
            millis = three.parse().ok()?;
            rest = &frac[len..];
        }
        let offset_minutes = match rest {
            "Z" | "z" => None,
            o if o.len() == 6 && o.as_bytes()[3] == b':' => {
                let sign = match &o[..1] {
                    "+" => 1,
                    "-" => -1,
                    _ => return None,
                };
                let h: i32 = o[1..3].parse().ok()?;
                let m: i32 = o[4..6].parse().ok()?;
                Some(sign * (h * 60 + m))
            }
            _ => return None,
        };
        let stamp = Stamp {
            year: i64::from(num(0, 4)?),
            month: num(5, 7)?,
            day: num(8, 10)?,
            hour: num(11, 13)?,
            minute: num(14, 16)?,
            second: num(17, 19)?,
            millis,
            offset_minutes,
        };
        let valid = (1..=12).contains(&stamp.month)
            && (1..=31).contains(&stamp.day)
            && stamp.hour < 24
            && stamp.minute < 60
            && stamp.second < 61;
        valid.then_some(stamp)
    }

    /// Days from 1970-01-01 to its wall-clock date (H. Hinnant's `days_from_civil`).
    fn days(&self) -> i64 {
        let y = if self.month <= 2 {
            self.year - 1
        } else {
            self.year
        };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    fn unix_ms(&self) -> i64 {
        let secs = self.days() * 86_400
            + i64::from(self.hour) * 3_600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_minutes.unwrap_or(0)) * 60;
        secs * 1_000 + i64::from(self.millis)
    }

    fn weekday(&self) -> &'static str {
        const NAMES: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        NAMES[self.days().rem_euclid(7) as usize]
    }
}

/// A stamp as a person reads it, in the offset it was written in:
/// `Mon 2026-01-05 09:00 +08:00` (seconds only when there are some; `UTC`
/// for `Z`). Anything that does not parse is shown as it came.
pub fn local(rfc3339: &str) -> String {
    let Some(t) = Stamp::parse(rfc3339) else {
        return rfc3339.to_string();
    };
    let clock = if t.second == 0 {
        format!("{:02}:{:02}", t.hour, t.minute)
    } else {
        format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second)
    };
    let zone = match t.offset_minutes {
        None => "UTC".to_string(),
        Some(m) => {
            let sign = if m < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60)
        }
    };
    format!(
        "{} {:04}-{:02}-{:02} {clock} {zone}",
        t.weekday(),
        t.year,
        t.month,
        t.day
    )
}

/// How long after `due` a fire was claimed (`fired`): `0.4s`, `12s`, `3m 5s`,
/// `2h 10m`, `1d 3h`; `?` when either stamp does not parse.
pub fn lateness(due: &str, fired: &str) -> String {
    let (Some(due), Some(fired)) = (Stamp::parse(due), Stamp::parse(fired)) else {
        return "?".into();
    };
    let ms = (fired.unix_ms() - due.unix_ms()).max(0);
    let secs = ms / 1_000;
    match secs {
        0..10 => format!("{}.{}s", secs, (ms % 1_000) / 100),
        10..60 => format!("{secs}s"),
        60..3_600 => format!("{}m {}s", secs / 60, secs % 60),
        3_600..86_400 => format!("{}h {}m", secs / 3_600, secs % 3_600 / 60),
        _ => format!("{}d {}h", secs / 86_400, secs % 86_400 / 3_600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_takes_units_and_sums_them() {
        assert_eq!(parse_every("1h"), Ok(3_600));
        assert_eq!(parse_every("90m"), Ok(5_400));
        assert_eq!(parse_every("3600s"), Ok(3_600));
        assert_eq!(parse_every("1h30m"), Ok(5_400));
        assert_eq!(parse_every("2d"), Ok(172_800));
        assert_eq!(parse_every(" 1H "), Ok(3_600));
        for bad in [
            "",
            "90",
            "h",
            "1x",
            "1.5h",
            "-1h",
            "0m",
            "1h 30m",
            "99999999999999999999d",
        ] {
            let err = parse_every(bad).expect_err(bad);
            assert!(err.contains("1h, 90m, 3600s"), "{bad}: {err}");
        }
    }

    #[test]
    fn stamps_read_as_a_calendar_in_their_own_offset() {
        assert_eq!(
            local("2026-12-07T09:00:00+08:00"),
            "Mon 2026-12-07 09:00 +08:00"
        );
        assert_eq!(
            local("2026-03-29T01:30:15-04:30"),
            "Sun 2026-03-29 01:30:15 -04:30"
        );
        assert_eq!(local("1970-01-01T00:00:00Z"), "Thu 1970-01-01 00:00 UTC");
        assert_eq!(
            local("2000-02-29T23:59:00.250Z"),
            "Tue 2000-02-29 23:59 UTC"
        );
        assert_eq!(local("soon"), "soon");
    }

    #[test]
    fn lateness_is_the_claim_minus_the_due_time_across_offsets() {
        assert_eq!(
            lateness("2026-12-07T01:00:00Z", "2026-12-07T01:00:00.412Z"),
            "0.4s"
        );
        assert_eq!(
            lateness("2026-12-07T09:00:00+08:00", "2026-12-07T01:03:05Z"),
            "3m 5s"
        );
        assert_eq!(
            lateness("2026-12-31T23:00:00Z", "2027-01-01T01:10:00Z"),
            "2h 10m"
        );
        assert_eq!(
            lateness("2026-02-27T00:00:00Z", "2026-03-01T03:00:00Z"),
            "2d 3h"
        );
        assert_eq!(lateness("x", "2026-03-01T03:00:00Z"), "?");
    }
}
