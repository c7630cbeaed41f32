//! Session ids: short, sortable by creation time, unique without coordination.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// Crockford's base32 in lower case: no `i`, `l`, `o` or `u`, so ids read aloud and typed by hand
/// survive, and byte order equals numeric order.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
/// 9 characters = 45 bits of milliseconds since 1970, enough until the year 3084.
const TIME_CHARS: usize = 9;
/// 4 characters = 20 bits of randomness: two processes creating a session in the same
/// millisecond collide once in a million times, and the store retries on a collision.
const RANDOM_CHARS: usize = 4;
const RANDOM_RANGE: u32 = 1 << (RANDOM_CHARS * 5);

/// The id of a session: 13 characters of lower-case base32, a millisecond timestamp followed by
/// random bits, so ids sort by creation time.
///
/// Users may type a unique prefix of it; see [`Store::session`](crate::Store::session).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A fresh id for a session created at `now`. Ids made by one process strictly increase,
    /// even within a millisecond or when the clock steps back.
    pub(crate) fn generate(now: Timestamp) -> Self {
        static LAST: Mutex<u128> = Mutex::new(0);
        let random = fastrand::u32(..RANDOM_RANGE);
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        SessionId::next(now, random, &mut last)
    }

    /// The id for `now` and `random`, or one past `last` if that is not greater; updates `last`.
    fn next(now: Timestamp, random: u32, last: &mut u128) -> Self {
        let millis = u128::from(u64::try_from(now.as_millis()).unwrap_or(0));
        let mut value = (millis << (RANDOM_CHARS * 5)) | u128::from(random);
        if value <= *last {
            value = *last + 1;
        }
        *last = value;
        let mut id = String::with_capacity(TIME_CHARS + RANDOM_CHARS);
        for i in (0..TIME_CHARS + RANDOM_CHARS).rev() {
            let digit = (value >> (i * 5)) & 0x1f;
            id.push(char::from(ALPHABET[digit as usize]));
        }
        SessionId(id)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        SessionId(id)
    }
}

impl From<&str> for SessionId {
    fn from(id: &str) -> Self {
        SessionId(id.to_owned())
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl ToSql for SessionId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0.as_str()))
    }
}

impl FromSql for SessionId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        String::column_result(value).map(SessionId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_lowercase_base32() {
        let id = SessionId::generate(Timestamp::now());
        assert_eq!(id.as_str().len(), TIME_CHARS + RANDOM_CHARS);
        assert!(id.as_str().bytes().all(|b| ALPHABET.contains(&b)), "{id}");
    }

    #[test]
    fn ids_sort_by_creation_time() {
        let mut last = 0;
        let times = [0, 1, 31, 32, 999, 1_700_000_000_000, 1_700_000_000_001];
        let ids: Vec<SessionId> = times
            .iter()
            .map(|&ms| SessionId::next(Timestamp::from_millis(ms), RANDOM_RANGE - 1, &mut last))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert!(ids.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn time_part_encodes_milliseconds_and_random_part_follows() {
        let id = SessionId::next(Timestamp::from_millis(33), 32 * 32 + 2, &mut 0);
        assert_eq!(id.as_str(), "0000000110102");
    }

    #[test]
    fn ids_increase_within_a_millisecond_and_when_the_clock_steps_back() {
        let mut last = 0;
        let now = Timestamp::from_millis(1_700_000_000_000);
        let mut ids: Vec<SessionId> = (0..100)
            .map(|_| SessionId::next(now, 7, &mut last))
            .collect();
        ids.push(SessionId::next(Timestamp::from_millis(1), 7, &mut last));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    }

    #[test]
    fn generated_ids_increase() {
        let now = Timestamp::now();
        let ids: Vec<SessionId> = (0..50).map(|_| SessionId::generate(now)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    }
}
