//! Generates weft-fabric-sys's bindings to the system libfabric (≥ 1.17). The library is not
//! linked: the crate loads it when first needed (`src/dynamic.rs`), at the symbol versions
//! this script reads from the library it built against.
//!
//! libfabric's data path (`fi_tsend`, `fi_read`, `fi_cq_read`, `fi_close`, ...) is made of
//! `static inline` functions that dispatch through the provider's ops tables, so there is no
//! symbol to link against. bindgen's `wrap_static_fns` emits one C wrapper per such function
//! (`<name>__extern`) into `$OUT_DIR/fi_static.c`; we compile it with `cc` into a static
//! library and the generated Rust declarations link to the wrappers.

use std::env;
use std::path::PathBuf;

/// Functions libfabric.so.1 exports that weft-fabric uses: resolved at run time
/// (`src/dynamic.rs`), not bound by bindgen; this script records their symbol versions.
const EXPORTED: &[&str] =
    &["fi_getinfo", "fi_freeinfo", "fi_dupinfo", "fi_fabric", "fi_strerror", "fi_version"];

/// `static inline` functions weft-fabric uses (wrapped).
const FUNCTIONS: &[&str] = &[
    // object setup and teardown
    "fi_close",
    "fi_domain",
    "fi_av_open",
    "fi_av_insert",
    "fi_av_straddr",
    "fi_cq_open",
    "fi_endpoint",
    "fi_ep_bind",
    "fi_enable",
    "fi_getname",
    "fi_mr_reg",
    "fi_mr_key",
    "fi_mr_desc",
    "fi_mr_bind",
    "fi_mr_enable",
    // data path
    "fi_tsend",
    "fi_tinject",
    "fi_trecv",
    "fi_read",
    "fi_cq_read",
    "fi_cq_readfrom",
    "fi_cq_readerr",
    "fi_cq_strerror",
    "fi_cancel",
];

const TYPES: &[&str] = &[
    "fi_info",
    "fi_context2",
    "fi_cq_attr",
    "fi_av_attr",
    "fi_cq_tagged_entry",
    "fi_cq_err_entry",
    "fi_threading",
    "fi_progress",
    "fi_resource_mgmt",
    "fi_ep_type",
    "fi_av_type",
    "fi_cq_format",
    "fi_wait_obj",
    "fi_addr_t",
];

/// `#define`d flags and error numbers (bindgen evaluates the simple `(1ULL << n)` forms).
const VARS: &[&str] = &[
    "FI_MSG",
    "FI_RMA",
    "FI_TAGGED",
    "FI_READ",
    "FI_WRITE",
    "FI_RECV",
    "FI_SEND",
    "FI_REMOTE_READ",
    "FI_REMOTE_WRITE",
    "FI_SOURCE",
    "FI_DIRECTED_RECV",
    "FI_LOCAL_COMM",
    "FI_REMOTE_COMM",
    "FI_CONTEXT",
    "FI_CONTEXT2",
    "FI_MSG_PREFIX",
    "FI_ASYNC_IOV",
    "FI_RX_CQ_DATA",
    "FI_LOCAL_MR",
    "FI_BUFFERED_RECV",
    "FI_TRANSMIT",
    "FI_ORDER_.*",
    "FI_MR_.*",
    "FI_COMPLETION",
    "FI_SELECTIVE_COMPLETION",
    "FI_INJECT",
    "FI_E.*",
    "FI_SUCCESS",
    "FI_MAJOR_VERSION",
    "FI_SOCKADDR.*",
    "FI_FORMAT_UNSPEC",
    "FI_MINOR_VERSION",
];

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");

    // Headers only: no `rustc-link-lib`, the library is loaded at run time.
    let lib = pkg_config::Config::new()
        .atleast_version("1.17")
        .cargo_metadata(false)
        .probe("libfabric")
        .unwrap_or_else(|e| {
            panic!("weft-fabric-sys needs libfabric >= 1.17 (Debian: apt-get install libfabric-dev): {e}")
        });
    symbol_versions(&lib.link_paths);
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR set by cargo"));
    let wrappers = out.join("fi_static");
    let header = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("wrapper.h");

    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false);
    for inc in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", inc.display()));
    }
    for f in FUNCTIONS {
        builder = builder.allowlist_function(f);
    }
    for t in TYPES {
        builder = builder.allowlist_type(t);
    }
    for v in VARS {
        builder = builder.allowlist_var(v);
    }
    let bindings = builder.generate().expect("bindgen failed on fabric/sys/wrapper.h");
    bindings.write_to_file(out.join("fi_bindings.rs")).expect("writing libfabric bindings");

    // The wrappers `#include` wrapper.h by absolute path; compile them against the same headers.
    let mut cc = cc::Build::new();
    cc.file(wrappers.with_extension("c")).include(header.parent().expect("manifest dir")).warnings(false);
    for inc in &lib.include_paths {
        cc.include(inc);
    }
    cc.compile("weft_fi_static");
}

/// Record, as `WEFT_FI_SYMVER_<function>` for the crate, the default symbol version (`@@`)
/// of each of [`EXPORTED`] in the libfabric built against: the version a link would bind,
/// whose `fi_info` layout is that of these headers. A function whose version cannot be read
/// (no `nm`, a library without versions) is resolved at its default version at run time.
fn symbol_versions(link_paths: &[PathBuf]) {
    let from_paths = link_paths.iter().map(|d| d.join("libfabric.so")).find(|p| p.exists());
    let path = from_paths.or_else(|| {
        let cc = cc::Build::new().get_compiler();
        let out = cc.to_command().arg("-print-file-name=libfabric.so").output().ok()?;
        let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        p.is_absolute().then_some(p)
    });
    let Some(path) = path else { return };
    println!("cargo:rerun-if-changed={}", path.display());
    let Ok(out) = std::process::Command::new("nm").args(["-D", "--with-symbol-versions"]).arg(&path).output()
    else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(sym) = line.split_whitespace().nth(2) else { continue };
        if let Some((name, ver)) = sym.split_once("@@") {
            if EXPORTED.contains(&name) {
                println!("cargo:rustc-env=WEFT_FI_SYMVER_{name}={ver}");
            }
        }
    }
}
