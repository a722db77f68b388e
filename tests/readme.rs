//! The README documents every configuration key (the table must not drift from the code).

#[test]
fn readme_lists_every_config_key() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for k in weft::KEYS {
        let row = format!("| `{}` | `{}` |", k.name, k.default);
        assert!(readme.contains(&row), "README configuration table lacks the row starting {row}");
    }
}
