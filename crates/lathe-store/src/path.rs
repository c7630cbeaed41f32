//! Paths in the database, exactly: UTF-8 paths as TEXT (readable with any SQLite tool), others as
//! a BLOB of their raw bytes, so a checkpoint restores to the very file it was taken from.

use std::path::{Path, PathBuf};

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, Value, ValueRef};

/// The SQL value stored for `path`. Equal paths give equal values, so it can be compared in SQL.
pub(crate) fn to_sql(path: &Path) -> Value {
    match path.to_str() {
        Some(text) => Value::Text(text.to_owned()),
        None => Value::Blob(raw_bytes(path)),
    }
}

/// A path read back from a value stored by [`to_sql`].
pub(crate) struct SqlPath(pub(crate) PathBuf);

impl FromSql for SqlPath {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Ok(SqlPath(from_raw_bytes(bytes))),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}

/// Serializes a path as text, replacing what is not UTF-8, for JSON output.
pub(crate) fn serialize_lossy<S: serde::Serializer>(
    path: &Path,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
}

#[cfg(unix)]
fn raw_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(unix)]
fn from_raw_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn raw_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

#[cfg(not(unix))]
fn from_raw_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(path: &Path) -> PathBuf {
        let value = to_sql(path);
        SqlPath::column_result(ValueRef::from(&value)).unwrap().0
    }

    #[test]
    fn utf8_paths_are_text() {
        let path = Path::new("src/naïve main.rs");
        assert_eq!(to_sql(path), Value::Text("src/naïve main.rs".into()));
        assert_eq!(round_trip(path), path);
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_round_trip_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"dir/\xff\xfe.txt"));
        assert!(matches!(to_sql(path), Value::Blob(_)));
        assert_eq!(round_trip(path), path);
    }
}
