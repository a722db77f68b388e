//! Generates weft-pmix's own FFI bindings to the system OpenPMIx library (libpmix ≥ 4.2; one
//! library holds both the client and the server API) and links it. Only what `src/client/` and
//! `src/server/` use is allowlisted.

use std::env;
use std::path::PathBuf;

/// Functions of libpmix that `client/` calls (all exported by libpmix.so.2 of PMIx 4.2;
/// `PMIx_Value_free` / `PMIx_Proc_load` etc. only appeared in 5.0, so the value/proc macros are
/// re-implemented in Rust in `client/value.rs`).
const FUNCTIONS: &[&str] = &[
    "PMIx_Init",
    "PMIx_Finalize",
    "PMIx_Get",
    "PMIx_Put",
    "PMIx_Commit",
    "PMIx_Fence",
    "PMIx_Abort",
    "PMIx_Register_event_handler",
    "PMIx_Deregister_event_handler",
    "PMIx_Error_string",
    "PMIx_Value_destruct",
    "PMIx_Get_version",
    "PMIx_Spawn",
    // Server side (weft-run hosts the PMIx server: `src/server/`).
    "PMIx_server_init",
    "PMIx_server_finalize",
    "PMIx_server_register_nspace",
    "PMIx_server_deregister_nspace",
    "PMIx_server_register_client",
    "PMIx_server_setup_fork",
    "PMIx_Notify_event",
];

const TYPES: &[&str] = &[
    "pmix_status_t",
    "pmix_rank_t",
    "pmix_proc_t",
    "pmix_value_t",
    "pmix_info_t",
    "pmix_data_array_t",
    "pmix_byte_object_t",
    "pmix_scope_t",
    "pmix_data_type_t",
    "pmix_notification_fn_t",
    "pmix_event_notification_cbfunc_fn_t",
    "pmix_hdlr_reg_cbfunc_t",
    "pmix_op_cbfunc_t",
    "pmix_server_module_t",
    "pmix_modex_cbfunc_t",
    "pmix_release_cbfunc_t",
    "pmix_data_range_t",
    "pmix_app_t",
    "pmix_spawn_cbfunc_t",
];

/// Constants (numeric and string `#define`s). String keys come out as `&[u8; N]` with a NUL.
const VARS: &[&str] = &[
    "PMIX_SUCCESS",
    "PMIX_ERR_NOT_FOUND",
    "PMIX_ERR_.*",
    "PMIX_EVENT_.*",
    "PMIX_MAX_NSLEN",
    "PMIX_MAX_KEYLEN",
    "PMIX_RANK_.*",
    "PMIX_GLOBAL",
    "PMIX_BOOL",
    "PMIX_BYTE",
    "PMIX_STRING",
    "PMIX_SIZE",
    "PMIX_INT",
    "PMIX_INT8",
    "PMIX_INT16",
    "PMIX_INT32",
    "PMIX_INT64",
    "PMIX_UINT",
    "PMIX_UINT8",
    "PMIX_UINT16",
    "PMIX_UINT32",
    "PMIX_UINT64",
    "PMIX_PROC",
    "PMIX_PROC_RANK",
    "PMIX_BYTE_OBJECT",
    "PMIX_DATA_ARRAY",
    "PMIX_JOB_SIZE",
    "PMIX_NODEID",
    "PMIX_HOSTNAME",
    "PMIX_LOCAL_PEERS",
    "PMIX_COLLECT_DATA",
    "PMIX_OPTIONAL",
    "PMIX_TIMEOUT",
    "PMIX_OPERATION_SUCCEEDED",
    "PMIX_RANGE_.*",
    "PMIX_UNIV_SIZE",
    "PMIX_MAX_PROCS",
    "PMIX_LOCAL_SIZE",
    "PMIX_NODE_SIZE",
    "PMIX_NUM_NODES",
    "PMIX_SPAWNED",
    "PMIX_PROC_DATA",
    "PMIX_RANK",
    "PMIX_LOCAL_RANK",
    "PMIX_NODE_RANK",
    "PMIX_APPNUM",
    "PMIX_INFO",
    "PMIX_SERVER_TMPDIR",
    "PMIX_SYSTEM_TMPDIR",
    "PMIX_SERVER_NSPACE",
    "PMIX_SERVER_RANK",
    "PMIX_NODE_MAP",
    "PMIX_PROC_MAP",
    "PMIX_NODE_INFO_ARRAY",
    "PMIX_PARENT_ID",
];

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");

    let lib = pkg_config::Config::new().atleast_version("4.2").probe("pmix").unwrap_or_else(|e| {
        panic!("weft-pmix needs the OpenPMIx client library (Debian: apt-get install libpmix-dev): {e}")
    });
    // pkg-config emits `rustc-link-search` (…/pmix2/lib) and `rustc-link-lib=pmix` for us. No
    // rpath: Debian also links libpmix.so.2 into the default loader path (/usr/lib/<triple>).
    // Crates that depend on weft-pmix inherit the link line (libpmix is a dylib).

    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false);
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
    let bindings = builder.generate().expect("bindgen failed on pmix/wrapper.h");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("pmix_bindings.rs");
    bindings.write_to_file(&out).expect("writing PMIx bindings");
}
