//! Counting the processes a test started, by a marker in their
//! environment (for tests that a child process ends with its owner).

/// The number of live (not zombie) processes whose environment holds
/// `marker` (`NAME=value`).
pub fn processes_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            // Not a zombie waiting to be reaped.
            std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
        })
        .filter_map(|e| std::fs::read(e.path().join("environ")).ok())
        .filter(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
        .count()
}
