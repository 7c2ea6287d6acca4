//! The workspace's architecture, held by tests: which crate may depend on which
//! (`cargo metadata`), and typed errors on the device path.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

/// Each workspace package and the workspace packages it depends on (normal
/// dependencies, not dev-dependencies).
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<String> = packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| names.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn crates_depend_only_on_what_their_concern_allows() {
    let deps = workspace_dependencies();
    let forbidden: [(&str, &[&str]); 11] = [
        // The device contract depends on nothing in the workspace.
        ("fairshare-abi", &["*"]),
        // The core library: semantics, offload; no way to reach a device, no RTL.
        (
            "fairshare",
            &[
                "fairshare-driver",
                "fairshare-hdl",
                "fairshare-emulator",
                "fairshare-backends",
                "fairshare-multi",
                "fairshare-report",
                "fairshare-sim",
                "fairshare-service",
                "fairshare-ledger",
            ],
        ),
        // The live service reaches devices through the backends only, and lays out no reports.
        (
            "fairshare-service",
            &[
                "fairshare-driver",
                "fairshare-hdl",
                "fairshare-emulator",
                "fairshare-report",
                "fairshare-sim",
                "fairshare-cluster",
            ],
        ),
        // The simulator depends on the core library only.
        (
            "fairshare-sim",
            &[
                "fairshare-hdl",
                "fairshare-driver",
                "fairshare-emulator",
                "fairshare-backends",
                "fairshare-multi",
                "fairshare-report",
            ],
        ),
        // Reports lay out results; they reach no device and no RTL.
        ("fairshare-report", &["fairshare-hdl", "fairshare-driver", "fairshare-emulator", "fairshare-backends"]),
        ("fairshare-driver", &["fairshare", "fairshare-hdl", "fairshare-emulator", "fairshare-backends"]),
        ("fairshare-hdl", &["fairshare-driver", "fairshare-emulator", "fairshare-backends"]),
        ("fairshare-emulator", &["fairshare", "fairshare-backends", "fairshare-sim"]),
        // The multi-resource policies stand alone, and so does the credit ledger.
        ("fairshare-multi", &["*"]),
        ("fairshare-ledger", &["*"]),
        // The controller on etcd uses the service and the core library; no device path.
        (
            "fairshare-cluster",
            &["fairshare-driver", "fairshare-hdl", "fairshare-emulator", "fairshare-report", "fairshare-sim"],
        ),
    ];
    for (krate, banned) in forbidden {
        let have = deps.get(krate).unwrap_or_else(|| panic!("no workspace crate {krate}"));
        for d in have {
            assert!(!banned.contains(&"*") && !banned.contains(&d.as_str()), "{krate} must not depend on {d}");
        }
    }
    assert!(deps["fairshare-abi"].is_empty());
    // etcd is the cluster crate's alone: only the command depends on it.
    let on_cluster: Vec<&String> =
        deps.iter().filter(|(_, d)| d.iter().any(|d| d == "fairshare-cluster")).map(|(k, _)| k).collect();
    assert_eq!(on_cluster, ["fairshare-cli"], "only the CLI depends on fairshare-cluster");
    assert_eq!(deps["fairshare-sim"], ["fairshare"], "the simulator depends on the core library only");
}

/// No public function of the device path returns `Result<_, String>`: errors there are
/// typed (`DeviceError`, `OpenError`, `HdlError`, `EmulatorError`, `BackendError`).
#[test]
fn the_device_path_has_typed_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![];
    for dir in ["host-lib/src/offload", "abi/src", "driver/src", "hdl/src", "emulator/src", "backends/src"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    let stringly = |line: &str| {
        let Some(at) = line.find("Result<") else { return false };
        let rest = &line[at..];
        rest.find('>').is_some_and(|end| rest[..end].ends_with(", String"))
    };
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if (line.starts_with("pub fn") || line.starts_with("fn from_str")) && stringly(line) {
                panic!("{}:{}: `{line}` returns a string error", file.display(), i + 1);
            }
        }
    }
}
