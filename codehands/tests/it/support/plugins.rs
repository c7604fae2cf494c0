//! The sample plugin libraries (agent-plugin-abi/samples/), built by cargo for the
//! profile these tests run in, so every test loads real shared libraries.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The samples, by folder name.
const SAMPLES: &[&str] = &["tee", "panics", "garbage", "abi-v99", "no-entry"];

/// The library of the sample `name` (for example `tee`), built on first use.
pub fn sample(name: &str) -> PathBuf {
    assert!(SAMPLES.contains(&name), "no sample plugin {name}");
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let folder = BUILT.get_or_init(|| {
        let packages: Vec<String> = SAMPLES
            .iter()
            .map(|s| format!("plugin-sample-{s}"))
            .collect();
        let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
        runner_testkit::cargo::build(env!("CARGO_MANIFEST_DIR"), &packages)
    });
    folder.join(format!("libplugin_sample_{}.so", name.replace('-', "_")))
}
