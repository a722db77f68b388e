//! The crate graph: the facade links neither the simulator nor clap, and the README's
//! architecture diagram and table name every workspace crate (the table with its directory).

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `(directory, package name)` of every workspace member, from the manifests.
fn members() -> Vec<(String, String)> {
    let ws = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let list = ws.split("members = [").nth(1).and_then(|s| s.split(']').next()).expect("members list");
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .map(|dir| {
            let manifest = std::fs::read_to_string(root().join(&dir).join("Cargo.toml")).unwrap();
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .map(|n| n.trim_matches('"').to_string())
                .unwrap_or_else(|| panic!("{dir}/Cargo.toml has no name"));
            (dir, name)
        })
        .collect()
}

#[test]
fn facade_links_no_simulator_and_no_clap() {
    let out = Command::new(env!("CARGO"))
        .current_dir(root())
        .args(["tree", "-p", "weft", "-e", "normal", "--prefix", "none", "--offline"])
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    for l in tree.lines() {
        let krate = l.split_whitespace().next().unwrap_or("");
        assert!(krate != "clap" && krate != "weft-sim", "libweft links {krate}:\n{tree}");
    }
    assert!(tree.lines().any(|l| l.starts_with("weft-ft ")), "weft-ft missing from:\n{tree}");
}

#[test]
fn readme_architecture_table_names_every_crate() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let arch = readme.split("## Architecture").nth(1).expect("README has an Architecture section");
    let arch = arch.split("\n## ").next().unwrap();
    for (dir, name) in members() {
        let dir = if dir == "." { "src/".to_string() } else { format!("{dir}/") };
        assert!(
            arch.lines().any(|l| l.starts_with('|')
                && l.contains(&format!("`{dir}`"))
                && l.contains(&format!("`{name}`"))),
            "README architecture table lacks a row with `{dir}` and `{name}`"
        );
        let diagram = arch.split("```").nth(1).expect("README architecture diagram");
        assert!(diagram.contains(&name), "README diagram lacks {name}");
    }
}
