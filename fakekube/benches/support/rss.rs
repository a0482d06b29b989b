//! The resident memory of a process, as the kernel reports it (`VmRSS` of `/proc/PID/status`),
//! for the benches that report the server's memory.

/// The resident set of process `pid` (`"self"` for this one), in bytes; `None` when the
/// process is gone or reports none.
pub fn resident_bytes(pid: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()
        .map(|kib| kib * 1024)
}
