//! The host's IANA timezone, which the box gets as `TZ` so dates in tests match the person's.

use std::path::Path;

/// The host's IANA timezone (`Asia/Karachi`): `tz_variable` (the caller's `TZ`, which the
/// facade reads and passes: this crate reads no variable) when it names one, then
/// `/etc/timezone`, then the target of `/etc/localtime`; `UTC` when none says.
pub fn host_timezone(tz_variable: Option<&str>) -> String {
    let from_env = tz_variable.map(|tz| tz.trim_start_matches(':').to_owned());
    let from_file = || {
        std::fs::read_to_string("/etc/timezone")
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let from_link = || {
        let target = std::fs::read_link(Path::new("/etc/localtime")).ok()?;
        let text = target.to_string_lossy().into_owned();
        text.split_once("zoneinfo/")
            .map(|(_, zone)| zone.to_owned())
    };
    from_env
        .filter(|z| is_iana_name(z))
        .or_else(|| from_file().filter(|z| is_iana_name(z)))
        .or_else(|| from_link().filter(|z| is_iana_name(z)))
        .unwrap_or_else(|| "UTC".to_owned())
}

/// Whether `zone` looks like an IANA name (`Europe/Berlin`, `UTC`, `Etc/GMT+5`):
/// letters, digits, `_`, `-`, `+` and `/` between parts, no `..`.
pub fn is_iana_name(zone: &str) -> bool {
    !zone.is_empty()
        && zone.len() <= 64
        && zone.split('/').all(|part| {
            !part.is_empty()
                && part != ".."
                && part != "."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in [
            "UTC",
            "Asia/Karachi",
            "America/Argentina/Buenos_Aires",
            "Etc/GMT+5",
        ] {
            assert!(is_iana_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "Asia//Karachi",
            "A B",
            "Pacific Standard Time",
        ] {
            assert!(!is_iana_name(bad), "{bad}");
        }
        assert!(is_iana_name(&host_timezone(None)));
        assert_eq!(host_timezone(Some(":Asia/Karachi")), "Asia/Karachi");
        assert!(is_iana_name(&host_timezone(Some("Pacific Standard Time"))));
    }
}
