//! The committed schemas in `schemas/` match the code (the drift test).

#[test]
fn committed_schemas_match_the_code() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    let mut expected_files = Vec::new();
    for (name, schema) in runner_contract::schema::all() {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            committed == runner_contract::schema::render(&schema),
            "schemas/{name} drifted from runner-contract: run `cargo xtask codegen` and commit the result"
        );
        expected_files.push(name.to_owned());
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    expected_files.sort();
    assert_eq!(
        on_disk, expected_files,
        "schemas/ holds exactly the generated files"
    );
}
