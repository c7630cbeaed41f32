//! Reading a command's output back, running or finished: by byte range or by regex.

use std::fs::File;

use crate::command::{CommandId, lock};
use crate::error::ExecError;
use crate::output::{
    self, DEFAULT_READ_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_READ_LIMIT, OutputPage, SearchResult,
};
use crate::search;
use crate::supervisor::Supervisor;

impl Supervisor {
    /// Reads `limit` bytes (by default 40 KiB, at most 4 MiB) of command `id`'s output from
    /// `offset`, with the number of the line the range starts in.
    pub async fn read_output(
        &self,
        id: CommandId,
        offset: u64,
        limit: Option<usize>,
    ) -> Result<OutputPage, ExecError> {
        let entry = self.entry(id)?;
        let limit = limit.unwrap_or(DEFAULT_READ_LIMIT).clamp(1, MAX_READ_LIMIT);
        let status = entry.status();
        let (available, base, total_bytes, complete) = {
            let capture = lock(&entry.capture);
            let available = capture.kept_bytes();
            (
                available,
                capture.line_index_base(offset.min(available)),
                capture.total_bytes(),
                capture.is_closed(),
            )
        };
        let mut page = OutputPage {
            id,
            offset: offset.min(available),
            bytes: Vec::new(),
            first_line: 1,
            available,
            total_bytes,
            status,
            complete,
        };
        if available == 0 || offset >= available {
            page.offset = offset;
            return Ok(page);
        }
        let path = entry.artifact_path.clone();
        let read = tokio::task::spawn_blocking(move || {
            let file = File::open(&path)?;
            output::read_page(&file, offset, limit, available, base)
        })
        .await
        .map_err(|e| ExecError::Internal(format!("reading command {id}: {e}")))?;
        let (bytes, first_line) = read.map_err(|source| ExecError::Artifact {
            id,
            path: entry.artifact_path.clone(),
            source,
        })?;
        page.bytes = bytes;
        page.first_line = first_line;
        Ok(page)
    }

    /// Searches command `id`'s output from byte `offset` for lines matching `pattern`
    /// (case-insensitive regex; an invalid one is searched as literal text). Returns the first
    /// `limit` (by default 100) numbered lines and the total count.
    pub async fn search_output(
        &self,
        id: CommandId,
        pattern: &str,
        offset: u64,
        limit: Option<usize>,
    ) -> Result<SearchResult, ExecError> {
        let entry = self.entry(id)?;
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT).max(1);
        let (regex, literal_because) = search::compile_pattern(pattern);
        let status = entry.status();
        let (available, total_bytes, base) = {
            let capture = lock(&entry.capture);
            let available = capture.kept_bytes();
            (
                available,
                capture.total_bytes(),
                capture.line_index_base(offset.min(available)),
            )
        };
        let start = offset.min(available);
        let mut result = SearchResult {
            id,
            pattern: pattern.to_owned(),
            literal_because,
            start,
            end: available,
            total_bytes,
            matches: Vec::new(),
            total_matches: 0,
            next_offset: None,
            status,
        };
        if start >= available {
            return Ok(result);
        }
        let path = entry.artifact_path.clone();
        let scan = tokio::task::spawn_blocking(move || {
            let file = File::open(&path)?;
            let newlines = base.1 + output::count_newlines_in(&file, base.0.min(start), start)?;
            search::search_range(&file, start, available, newlines + 1, &regex, limit)
        })
        .await
        .map_err(|e| ExecError::Internal(format!("searching command {id}: {e}")))?
        .map_err(|source| ExecError::Artifact {
            id,
            path: entry.artifact_path.clone(),
            source,
        })?;
        result.matches = scan.matches;
        result.total_matches = scan.total;
        result.next_offset = scan.next_offset;
        Ok(result)
    }
}
