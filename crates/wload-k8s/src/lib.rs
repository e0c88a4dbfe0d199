//! Kubernetes manifests for a distributed run (`wload k8s render`), for a
//! plain cluster with nothing to install: an Indexed Job whose pod `i` of
//! N runs the shard `i/N:(i+1)/N` of the test (`wload k8s shard`), the
//! test delivered in a ConfigMap (or, too large for one, downloaded and
//! checked against its SHA-256 by an init container), and, when the
//! shards share a volume, a collector Job that merges their summaries.
//!
//! Only the manifests are here: which flags a shard runs with is the
//! command line's business; this crate places the files, sets the
//! resources and spreads the pods, and its output is checked against
//! Kubernetes' schema by the e2e suite (tests/e2e/k8s.rs).

pub mod yaml;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Most bytes a ConfigMap's values may hold (the API server's limit,
/// counted on the decoded `binaryData`).
pub const CONFIGMAP_LIMIT: usize = 1 << 20;

/// Most pods of an Indexed Job (the API server refuses more).
pub const MAX_PARALLELISM: u32 = 100_000;

/// Where the ConfigMap (the test and its options file) is mounted.
pub const CONFIG_DIR: &str = "/etc/wload";
/// Where a downloaded test is kept (an emptyDir).
pub const DOWNLOAD_DIR: &str = "/var/lib/wload";
/// The shards' results: shard summaries, and the pods' working directory.
pub const RESULTS_DIR: &str = "/results";
/// A writable /tmp (the root filesystem is read-only): the compile cache.
pub const TMP_DIR: &str = "/tmp";
/// The key of the test in the ConfigMap, and its file name.
pub const TEST_FILE: &str = "test.wasm";
/// The user the image runs as (the Dockerfile's), and the pods require.
pub const UID: u64 = 10001;

/// How the pods get the test.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// In the ConfigMap, while it fits ([`CONFIGMAP_LIMIT`]).
    ConfigMap,
    /// Downloaded at start by an init container running `image` (with
    /// curl and sha256sum), checked against the rendered test's SHA-256.
    Url { url: String, image: String },
}

/// What to render.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The Job's name, and the prefix of the other objects'.
    pub name: String,
    pub namespace: Option<String>,
    /// The wload image (the repository's Dockerfile).
    pub image: String,
    pub parallelism: u32,
    pub test: Vec<u8>,
    pub delivery: Delivery,
    /// The options file: its key in the ConfigMap and its bytes.
    pub config: Option<(String, Vec<u8>)>,
    /// The run flags, with paths already the pods' (see [`config_path`]).
    pub run_args: Vec<String>,
    /// CPU and memory each shard requests (memory is also its limit).
    pub cpu: String,
    pub memory: String,
    /// A PersistentVolumeClaim (ReadWriteMany) for the shards' results;
    /// with one, a collector Job is rendered too.
    pub results_claim: Option<String>,
    /// How long the collector waits for every shard's summary.
    pub collect_wait: String,
    /// This rendering's directory under [`RESULTS_DIR`], so that the
    /// results of runs sharing a claim stay apart (the collector must not
    /// merge a previous run's shards).
    pub run_id: String,
}

/// The path a pod reads the options file `key` at.
pub fn config_path(key: &str) -> String {
    format!("{CONFIG_DIR}/{key}")
}

/// The path a pod reads the test at.
pub fn test_path(delivery: &Delivery) -> String {
    match delivery {
        Delivery::ConfigMap => format!("{CONFIG_DIR}/{TEST_FILE}"),
        Delivery::Url { .. } => format!("{DOWNLOAD_DIR}/{TEST_FILE}"),
    }
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why `name` cannot name the objects, if it cannot: a DNS-1123 label
/// short enough for `-collect` and the pods' suffixes.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid name {name:?}: use at most 52 lowercase letters, digits and '-', \
             starting and ending with a letter or digit (a Kubernetes object name)"
        ))
    }
}

/// A default name from the test's file name: `wload-` and its stem,
/// lowercased, other characters as `-`.
pub fn default_name(stem: &str) -> String {
    let mut s: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(40);
    let s = s.trim_matches('-');
    if s.is_empty() {
        "wload".to_owned()
    } else {
        format!("wload-{s}")
    }
}

impl Plan {
    /// Where this run's shard summaries go.
    pub fn results_dir(&self) -> String {
        format!("{RESULTS_DIR}/{}", self.run_id)
    }

    fn labels(&self, component: &str) -> Value {
        json!({
            "app.kubernetes.io/name": "wload",
            "app.kubernetes.io/instance": self.name,
            "app.kubernetes.io/component": component,
        })
    }

    fn metadata(&self, name: &str, component: &str) -> Value {
        let mut m = json!({"name": name, "labels": self.labels(component)});
        if let Some(ns) = &self.namespace {
            m["namespace"] = json!(ns);
        }
        m
    }

    fn configmap_name(&self) -> String {
        format!("{}-test", self.name)
    }

    /// Whether a ConfigMap is rendered: for the test, or for the
    /// options file of a downloaded test.
    fn has_configmap(&self) -> bool {
        matches!(self.delivery, Delivery::ConfigMap) || self.config.is_some()
    }

    /// The ConfigMap's size as the API server counts it.
    pub fn configmap_bytes(&self) -> usize {
        let test = match self.delivery {
            Delivery::ConfigMap => self.test.len(),
            Delivery::Url { .. } => 0,
        };
        test + self.config.as_ref().map_or(0, |(_, b)| b.len())
    }

    /// Every manifest: the ConfigMap (if any), the shards' Job, the
    /// collector Job (with a results claim).
    pub fn render(&self) -> Result<Vec<Value>, String> {
        check_name(&self.name)?;
        if !(1..=MAX_PARALLELISM).contains(&self.parallelism) {
            return Err(format!(
                "--parallelism {}: an Indexed Job has 1 to {MAX_PARALLELISM} pods",
                self.parallelism
            ));
        }
        let size = self.configmap_bytes();
        if size > CONFIGMAP_LIMIT {
            return Err(format!(
                "the test and its options are {size} bytes, more than a ConfigMap holds \
                 ({CONFIGMAP_LIMIT}): publish the test at a URL the pods can reach and pass \
                 --test-url URL (its SHA-256 is checked at start)"
            ));
        }
        let mut docs = Vec::new();
        if self.has_configmap() {
            docs.push(self.configmap());
        }
        docs.push(self.shard_job());
        if let Some(claim) = &self.results_claim {
            docs.push(self.collect_job(claim));
        }
        Ok(docs)
    }

    fn configmap(&self) -> Value {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut binary = Map::new();
        if let Delivery::ConfigMap = self.delivery {
            binary.insert(TEST_FILE.into(), json!(b64.encode(&self.test)));
        }
        let mut doc = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.metadata(&self.configmap_name(), "test"),
            // What a run reads must not change under a running Job.
            "immutable": true,
        });
        if let Some((key, bytes)) = &self.config {
            match std::str::from_utf8(bytes) {
                Ok(text) => doc["data"] = json!({ key: text }),
                Err(_) => {
                    binary.insert(key.clone(), json!(b64.encode(bytes)));
                }
            }
        }
        if !binary.is_empty() {
            doc["binaryData"] = Value::Object(binary);
        }
        doc
    }

    /// The pod-level security every pod gets: non-root, the runtime's
    /// seccomp profile, no API token (wload needs no Kubernetes API).
    fn pod_spec(&self, containers: Value, volumes: Value) -> Value {
        json!({
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": UID,
                "runAsGroup": UID,
                "fsGroup": UID,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": containers,
            "volumes": volumes,
        })
    }

    fn container_security() -> Value {
        json!({
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"]},
        })
    }

    fn results_volume(&self) -> Value {
        match &self.results_claim {
            Some(claim) => {
                json!({"name": "results", "persistentVolumeClaim": {"claimName": claim}})
            }
            None => json!({"name": "results", "emptyDir": {}}),
        }
    }

    fn shard_job(&self) -> Value {
        let n = self.parallelism;
        let mut args = vec![
            "k8s".to_owned(),
            "shard".to_owned(),
            test_path(&self.delivery),
            "--parallelism".to_owned(),
            n.to_string(),
            "--results".to_owned(),
            self.results_dir(),
        ];
        args.extend(self.run_args.iter().cloned());
        let mut mounts = vec![
            json!({"name": "results", "mountPath": RESULTS_DIR}),
            json!({"name": "tmp", "mountPath": TMP_DIR}),
        ];
        let mut volumes = vec![
            self.results_volume(),
            json!({"name": "tmp", "emptyDir": {}}),
        ];
        if self.has_configmap() {
            mounts.push(json!({"name": "test", "mountPath": CONFIG_DIR, "readOnly": true}));
            volumes.push(json!({"name": "test", "configMap": {"name": self.configmap_name()}}));
        }
        let shard = json!({
            "name": "wload",
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["wload"],
            "args": args,
            "workingDir": RESULTS_DIR,
            "env": [
                // Set by the Job controller too; declared so that it is
                // there on every version and can be used in $(…) in args.
                {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }}},
                {"name": "WLOAD_CACHE_DIR", "value": format!("{TMP_DIR}/wload-cache")},
            ],
            // No CPU limit: CFS throttling would pause the VUs mid-request
            // and show up as latency of the system under test.
            "resources": {
                "requests": {"cpu": self.cpu, "memory": self.memory},
                "limits": {"memory": self.memory},
            },
            "securityContext": Self::container_security(),
            "volumeMounts": mounts,
        });
        let mut pod = self.pod_spec(json!([shard]), Value::Array(volumes));
        // Shards on different nodes where there are nodes enough: one
        // node's NIC and CPU are what splitting the test is for. Soft, so
        // that a small cluster still runs every shard.
        pod["topologySpreadConstraints"] = json!([{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": self.labels("shard")},
        }]);
        if let Delivery::Url { url, image } = &self.delivery {
            let file = test_path(&self.delivery);
            pod["initContainers"] = json!([{
                "name": "fetch-test",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c",
                    "curl -fsSL --retry 5 -o \"$TEST_FILE\" \"$TEST_URL\" \
                     && echo \"$TEST_SHA256  $TEST_FILE\" | sha256sum -c -"],
                "env": [
                    {"name": "TEST_URL", "value": url},
                    {"name": "TEST_SHA256", "value": sha256_hex(&self.test)},
                    {"name": "TEST_FILE", "value": file},
                ],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"memory": "256Mi"},
                },
                "securityContext": Self::container_security(),
                "volumeMounts": [{"name": "download", "mountPath": DOWNLOAD_DIR}],
            }]);
            pod["volumes"]
                .as_array_mut()
                .expect("volumes are a list")
                .push(json!({"name": "download", "emptyDir": {}}));
            pod["containers"][0]["volumeMounts"]
                .as_array_mut()
                .expect("mounts are a list")
                .push(json!({"name": "download", "mountPath": DOWNLOAD_DIR, "readOnly": true}));
        }
        let mut template_meta = json!({"labels": self.labels("shard")});
        template_meta["annotations"] = json!({"wload.dev/test-sha256": sha256_hex(&self.test)});
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": self.metadata(&self.name, "shards"),
            "spec": {
                "completionMode": "Indexed",
                "completions": n,
                "parallelism": n,
                // A failed shard is not retried and does not stop the
                // others: a second attempt would start late, out of step
                // with --start-at, and its load would come on top of the
                // first's. The merge names the part that is missing.
                "backoffLimitPerIndex": 0,
                "template": {"metadata": template_meta, "spec": pod},
            },
        })
    }

    fn collect_job(&self, claim: &str) -> Value {
        let collector = json!({
            "name": "collect",
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["wload"],
            "args": [
                "k8s", "collect", self.results_dir(),
                "--expect", self.parallelism.to_string(),
                "--wait", self.collect_wait,
                "--summary-export", format!("{}/merged.json", self.results_dir()),
            ],
            "workingDir": RESULTS_DIR,
            "resources": {
                "requests": {"cpu": "250m", "memory": "256Mi"},
                "limits": {"memory": "1Gi"},
            },
            "securityContext": Self::container_security(),
            "volumeMounts": [{"name": "results", "mountPath": RESULTS_DIR}],
        });
        let volumes = json!([{"name": "results", "persistentVolumeClaim": {"claimName": claim}}]);
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": self.metadata(&format!("{}-collect", self.name), "collect"),
            "spec": {
                // Its exit code is the test's verdict (99: a threshold
                // failed on the merged data), so it is not retried.
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": self.labels("collect")},
                    "spec": self.pod_spec(json!([collector]), volumes),
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            name: "wload-hello".into(),
            namespace: Some("load".into()),
            image: "wload:0.1.0".into(),
            parallelism: 4,
            test: b"\0asm test".to_vec(),
            delivery: Delivery::ConfigMap,
            config: Some(("options.json".into(), br#"{"vus":4}"#.to_vec())),
            run_args: vec!["--config".into(), config_path("options.json")],
            cpu: "1".into(),
            memory: "1Gi".into(),
            results_claim: None,
            collect_wait: "1h".into(),
            run_id: "wload-hello-1796135400".into(),
        }
    }

    #[test]
    fn an_indexed_job_of_n_shards_reads_the_test_from_its_configmap() {
        let docs = plan().render().unwrap();
        assert_eq!(docs.len(), 2);
        let cm = &docs[0];
        assert_eq!(cm["metadata"]["name"], "wload-hello-test");
        assert_eq!(cm["metadata"]["namespace"], "load");
        assert_eq!(cm["data"]["options.json"], r#"{"vus":4}"#);
        assert_eq!(cm["binaryData"]["test.wasm"], "AGFzbSB0ZXN0");
        let spec = &docs[1]["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(
            (spec["completions"].clone(), spec["parallelism"].clone()),
            (json!(4), json!(4))
        );
        let c = &spec["template"]["spec"]["containers"][0];
        assert_eq!(
            c["args"],
            json!([
                "k8s",
                "shard",
                "/etc/wload/test.wasm",
                "--parallelism",
                "4",
                "--results",
                "/results/wload-hello-1796135400",
                "--config",
                "/etc/wload/options.json"
            ])
        );
        assert_eq!(spec["template"]["spec"].get("initContainers"), None);
    }

    #[test]
    fn a_test_too_large_for_a_configmap_needs_a_url_and_is_checked_at_start() {
        let mut p = plan();
        p.test = vec![7; CONFIGMAP_LIMIT];
        let err = p.render().unwrap_err();
        assert!(err.contains("--test-url URL"), "{err}");
        p.delivery = Delivery::Url {
            url: "https://example.test/t.wasm".into(),
            image: "curl".into(),
        };
        let docs = p.render().unwrap();
        // The ConfigMap still carries the options file, not the test.
        assert_eq!(docs[0]["binaryData"], Value::Null);
        let pod = &docs[1]["spec"]["template"]["spec"];
        let init = &pod["initContainers"][0];
        assert_eq!(init["env"][1]["value"], json!(sha256_hex(&p.test)));
        assert_eq!(pod["containers"][0]["args"][2], "/var/lib/wload/test.wasm");
    }

    #[test]
    fn a_results_claim_adds_a_collector_reading_it() {
        let mut p = plan();
        p.results_claim = Some("shared".into());
        let docs = p.render().unwrap();
        assert_eq!(docs.len(), 3);
        let collect = &docs[2];
        assert_eq!(collect["metadata"]["name"], "wload-hello-collect");
        let pod = &collect["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "shared"
        );
        assert_eq!(
            pod["containers"][0]["args"],
            json!([
                "k8s",
                "collect",
                "/results/wload-hello-1796135400",
                "--expect",
                "4",
                "--wait",
                "1h",
                "--summary-export",
                "/results/wload-hello-1796135400/merged.json"
            ])
        );
        let shards = &docs[1]["spec"]["template"]["spec"];
        assert_eq!(
            shards["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "shared"
        );
    }

    #[test]
    fn names_are_kubernetes_object_names() {
        assert_eq!(default_name("My Test_v2"), "wload-my-test-v2");
        assert_eq!(default_name("--"), "wload");
        assert!(check_name("wload-hello").is_ok());
        assert!(check_name("Hello").is_err());
        assert!(check_name(&"a".repeat(53)).is_err());
        let mut p = plan();
        p.parallelism = 0;
        assert!(p.render().is_err());
        p.parallelism = MAX_PARALLELISM + 1;
        assert!(p.render().unwrap_err().contains("1 to 100000 pods"));
    }
}
