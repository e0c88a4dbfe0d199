//! `wload k8s`: a distributed run on a plain Kubernetes cluster.
//!
//! - `render` writes the manifests ([`wload_k8s`]) for a test and run
//!   flags: the flags are checked here, as `wload run` would check them,
//!   before anything reaches a cluster, and the paths in them become the
//!   pods' paths.
//! - `shard` is what each pod of the Job runs: shard `JOB_COMPLETION_INDEX`
//!   of N, its summary written to the results directory and printed to
//!   the pod's log, where `collect` finds it without shared storage.
//! - `collect` merges the shards (`wload merge` semantics and exit code),
//!   from a results directory, from saved pod logs, or from a Job's pods
//!   through `kubectl logs`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use clap::{Args, Subcommand};

use super::{Cli, Command as Top, ExitError, LoadArgs, TestSource, exit, run_and_report};
use wload_engine::executor::Segment;
use wload_k8s::{Delivery, Plan};
use wload_output::{merge, shard};
use wload_units::parse_duration;

/// The lines around a shard summary in a pod's log.
const BEGIN: &str = "-----BEGIN WLOAD SHARD SUMMARY-----";
const END: &str = "-----END WLOAD SHARD SUMMARY-----";

#[derive(Debug, Subcommand)]
pub(super) enum K8s {
    /// Write Kubernetes manifests that run TEST as N shards: an Indexed
    /// Job (pod i runs the part i/N:(i+1)/N), the test in a ConfigMap,
    /// and with --results-claim a Job that merges the results. The run
    /// flags come after the k8s flags, as for `wload run`:
    /// `wload k8s render test.wasm --parallelism 4 --vus 100 --duration 5m`.
    Render(Box<RenderArgs>),
    /// Run one shard, in a pod of the rendered Job: shard
    /// $JOB_COMPLETION_INDEX of --parallelism, its summary written to
    /// --results and printed to the log for `wload k8s collect`. Exits 0
    /// when the summary is written, whatever the shard's own verdict:
    /// thresholds are judged on the merged result.
    Shard {
        /// The test file.
        test: PathBuf,
        /// How many shards the run has.
        #[arg(long)]
        parallelism: u32,
        /// Where the shard summary goes (shard-INDEX.json).
        #[arg(long, value_name = "DIR")]
        results: PathBuf,
        #[command(flatten)]
        load: Box<LoadArgs>,
    },
    /// Merge the shards of a rendered run into one summary, thresholds
    /// evaluated on the merged data (exit 99 when one fails), as `wload
    /// merge` does. INPUTS are results directories (their shard-*.json),
    /// shard summaries, or saved pod logs; --job reads the Job's pod logs
    /// with kubectl.
    Collect(CollectArgs),
}

#[derive(Debug, Args)]
pub(super) struct RenderArgs {
    /// How many shards (pods) run the test.
    #[arg(long)]
    parallelism: u32,
    /// The Job's name (default: wload- and the test's file name).
    #[arg(long)]
    name: Option<String>,
    /// The namespace of every object (default: kubectl's current one).
    #[arg(long)]
    namespace: Option<String>,
    /// The wload image (built from the repository's Dockerfile).
    #[arg(long, default_value = concat!("wload:", env!("CARGO_PKG_VERSION")))]
    image: String,
    /// CPU each shard requests (no limit is set: throttling would show
    /// as latency).
    #[arg(long, default_value = "1")]
    cpu: String,
    /// Memory each shard requests, also its limit.
    #[arg(long, default_value = "1Gi")]
    memory: String,
    /// Download the test from this URL at start instead of putting it in
    /// the ConfigMap (needed past 1 MiB); its SHA-256 is checked.
    #[arg(long, value_name = "URL")]
    test_url: Option<String>,
    /// The image of the container that downloads --test-url (it needs
    /// sh, curl and sha256sum).
    #[arg(long, default_value = "curlimages/curl:8.11.1")]
    fetch_image: String,
    /// A ReadWriteMany PersistentVolumeClaim for the results: the shards
    /// write their summaries there, and a collector Job merges them into
    /// merged.json. Without it, collect from the pods' logs.
    #[arg(long, value_name = "CLAIM")]
    results_claim: Option<String>,
    /// How long the collector Job waits for every shard's summary.
    #[arg(long, default_value = "1h")]
    collect_wait: String,
    /// When no --start-at is among the run flags: start this long after
    /// rendering (time to apply, pull the image and start the pods).
    #[arg(long, default_value = "2m")]
    start_delay: String,
    /// Write the manifests here (default: stdout). (No -o: that is
    /// `wload run`'s --out, among the run flags.)
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The test file.
    test: PathBuf,
    /// Flags of `wload run` for every shard.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN FLAGS"
    )]
    run: Vec<String>,
}

#[derive(Debug, Args)]
pub(super) struct CollectArgs {
    /// Results directories, shard summaries or pod logs.
    #[arg(value_name = "INPUT", required_unless_present = "job")]
    inputs: Vec<PathBuf>,
    /// Read the shards from the logs of this Job's pods (`kubectl logs`).
    #[arg(long, value_name = "NAME", conflicts_with = "inputs")]
    job: Option<String>,
    /// The Job's namespace, for --job.
    #[arg(long)]
    namespace: Option<String>,
    /// The kubectl to run for --job.
    #[arg(long, default_value = "kubectl")]
    kubectl: PathBuf,
    /// Wait until the results directories hold this many readable shard
    /// summaries (the collector Job's case: it starts with the shards).
    #[arg(long, value_name = "N")]
    expect: Option<usize>,
    /// How long to wait for --expect.
    #[arg(long, default_value = "1h", requires = "expect")]
    wait: String,
    /// Also write the merged summary as JSON (`wload run --summary-export`'s layout).
    #[arg(long, value_name = "FILE")]
    summary_export: Option<PathBuf>,
    /// Statistics per trend (default: the shards' summaryTrendStats).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    summary_trend_stats: Vec<String>,
}

pub(super) async fn main(cmd: K8s) -> Result<u8> {
    match cmd {
        K8s::Render(args) => render(&args),
        K8s::Shard {
            test,
            parallelism,
            results,
            load,
        } => run_shard(test, parallelism, &results, *load).await,
        K8s::Collect(args) => collect(&args),
    }
}

fn invalid(message: String) -> anyhow::Error {
    ExitError {
        code: exit::INVALID_CONFIG,
        message,
    }
    .into()
}

/// The run flags with their `--config FILE` taken out: the file's path,
/// and the flags without it.
fn take_config(flags: &[String]) -> (Option<PathBuf>, Vec<String>) {
    let mut config = None;
    let mut rest = Vec::new();
    let mut it = flags.iter();
    while let Some(flag) = it.next() {
        if flag == "--config" || flag == "-c" {
            config = it.next().map(PathBuf::from);
        } else if let Some(path) = flag.strip_prefix("--config=") {
            config = Some(PathBuf::from(path));
        } else {
            rest.push(flag.clone());
        }
    }
    (config, rest)
}

/// Flags `wload k8s render` refuses among the run flags, and why.
fn refused_flag(load: &LoadArgs) -> Option<&'static str> {
    if load.execution_segment.is_some() || load.shard_summary.is_some() {
        Some(
            "--execution-segment and --shard-summary: each pod sets its own from its index \
             and --parallelism",
        )
    } else if load.server.is_some() {
        Some("--server: the pods run the test themselves")
    } else if !load.http.tls_ca.is_empty() || load.http.tls_client_cert.is_some() {
        Some(
            "--tls-ca, --tls-client-cert and --tls-client-key: their files are not on the \
             pods; add them from a Secret to the rendered Job (a volume and the flags in args)",
        )
    } else {
        None
    }
}

fn render(args: &RenderArgs) -> Result<u8> {
    let test = std::fs::read(&args.test)
        .with_context(|| format!("cannot read the test {}", args.test.display()))?;
    for own in [
        "--parallelism",
        "--name",
        "--namespace",
        "--image",
        "--test-url",
        "--results-claim",
        "--output",
    ] {
        if args
            .run
            .iter()
            .any(|f| f == own || f.starts_with(&format!("{own}=")))
        {
            return Err(invalid(format!(
                "{own} is a flag of `wload k8s render`: put it before the test file, \
                 with the other k8s flags (the flags after the test are the run's)"
            )));
        }
    }
    let delivery = match &args.test_url {
        Some(url) => Delivery::Url {
            url: url.clone(),
            image: args.fetch_image.clone(),
        },
        None => Delivery::ConfigMap,
    };
    let (config_file, mut run) = take_config(&args.run);
    let mut pod_config = None;
    let config = match &config_file {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("cannot read the --config file {}", path.display()))?;
            let toml = path.extension().is_some_and(|e| e == "toml");
            let key = if toml { "options.toml" } else { "options.json" };
            let at = wload_k8s::config_path(key);
            run.splice(0..0, ["--config".to_owned(), at.clone()]);
            pod_config = Some(PathBuf::from(at));
            Some((key.to_owned(), bytes))
        }
        None => None,
    };
    // The flags as `wload run` reads them: clap's errors, then the values
    // `wload run` checks before it starts (durations, --start-at, …).
    let pod_test = wload_k8s::test_path(&delivery);
    let argv = ["wload", "run", &pod_test]
        .into_iter()
        .map(str::to_owned)
        .chain(run.iter().cloned());
    let cli = <Cli as clap::Parser>::try_parse_from(argv)
        .map_err(|e| invalid(format!("in the run flags: {}", e.render())))?;
    let Top::Run { load, .. } = cli.command else {
        unreachable!("parsed as `wload run`")
    };
    if let Some(why) = refused_flag(&load) {
        return Err(invalid(format!("not a flag for the shards: {why}")));
    }
    if load.config != pod_config {
        return Err(invalid(
            "give the options file as `--config FILE` (or -c FILE): it goes into the ConfigMap"
                .to_owned(),
        ));
    }
    let opts = load.options(TestSource::File(pod_test.into()), &[])?;
    let start_given = run
        .iter()
        .any(|f| f == "--start-at" || f.starts_with("--start-at="));
    let start_at = match (opts.start_at, start_given) {
        (_, true) => None,
        // From WLOAD_START_AT here: the pods do not have it.
        (Some(at), false) => Some(at),
        (None, false) => {
            let delay = parse_duration(&args.start_delay)
                .map_err(|e| invalid(format!("--start-delay: {e}")))?;
            Some(SystemTime::now() + delay)
        }
    };
    if let Some(at) = start_at {
        let at = wload_units::rfc3339(at);
        eprintln!("the shards start at {at} (--start-at): apply before then, or render again");
        run.extend(["--start-at".to_owned(), at]);
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None => wload_k8s::default_name(
            &args
                .test
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    };
    parse_duration(&args.collect_wait).map_err(|e| invalid(format!("--collect-wait: {e}")))?;
    let rendered = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run_id = format!("{name}-{rendered}");
    let plan = Plan {
        name,
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        parallelism: args.parallelism,
        test,
        delivery,
        config,
        run_args: run,
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        results_claim: args.results_claim.clone(),
        collect_wait: args.collect_wait.clone(),
        run_id,
    };
    let docs = plan.render().map_err(invalid)?;
    let text = wload_k8s::yaml::stream(&docs);
    match &args.output {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
    let objects: Vec<String> = docs
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["kind"].as_str().unwrap_or("?"),
                d["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    eprintln!(
        "rendered {} ({} shards); apply with `kubectl apply --server-side -f` \
         (a ConfigMap past 256 KiB is too large for client-side apply)",
        objects.join(", "),
        plan.parallelism
    );
    Ok(0)
}

/// This pod's shard: `JOB_COMPLETION_INDEX` of `n`.
fn shard_index(n: u32) -> Result<u32> {
    let text = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
        invalid(
            "JOB_COMPLETION_INDEX is not set: `wload k8s shard` runs in a pod of an Indexed Job \
             (set it to the shard's index, 0 to N-1, to run one by hand)"
                .to_owned(),
        )
    })?;
    match text.trim().parse::<u32>() {
        Ok(i) if i < n => Ok(i),
        _ => Err(invalid(format!(
            "JOB_COMPLETION_INDEX {text:?} is not a shard of --parallelism {n} (0 to {})",
            n.saturating_sub(1)
        ))),
    }
}

async fn run_shard(test: PathBuf, n: u32, results: &Path, mut load: LoadArgs) -> Result<u8> {
    if n == 0 {
        return Err(invalid("--parallelism must be at least 1".to_owned()));
    }
    if load.execution_segment.is_some() || load.shard_summary.is_some() {
        return Err(invalid(
            "--execution-segment and --shard-summary: a shard sets its own from \
             JOB_COMPLETION_INDEX and --parallelism"
                .to_owned(),
        ));
    }
    let i = shard_index(n)?;
    let segment = Segment::parse(&format!("{i}/{n}:{}/{n}", i + 1)).map_err(invalid)?;
    std::fs::create_dir_all(results)
        .with_context(|| format!("cannot create the results directory {}", results.display()))?;
    // Written under another name and renamed when complete, so that a
    // collector polling the directory never reads half a file.
    let done = results.join(format!("shard-{i}.json"));
    let partial = results.join(format!(".shard-{i}.json.partial"));
    load.execution_segment = Some(segment);
    load.shard_summary = Some(partial.clone());
    let opts = load.options(TestSource::File(test), &[])?;
    let code = run_and_report(opts, &load).await?;
    let bytes = match std::fs::read(&partial) {
        Ok(b) if !b.is_empty() => b,
        _ => {
            eprintln!("shard {i} of {n}: no shard summary was written");
            return Ok(code.max(1));
        }
    };
    std::fs::rename(&partial, &done)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), done.display()))?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{BEGIN}");
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    for line in b64.as_bytes().chunks(76) {
        let _ = out.write_all(line);
        let _ = out.write_all(b"\n");
    }
    let _ = writeln!(out, "{END}");
    let _ = out.flush();
    if code != 0 {
        eprintln!(
            "shard {i} of {n} exited {code} on its share; recorded in its summary, \
             the merge of every shard decides"
        );
    }
    Ok(0)
}

/// Every shard summary in a pod log's text.
fn log_summaries(label: &str, text: &str) -> Result<Vec<(PathBuf, shard::Shard)>> {
    let mut found = Vec::new();
    let mut block: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        match &mut block {
            None if line == BEGIN => block = Some(String::new()),
            None => {}
            Some(_) if line == END => {
                let b64 = block.take().unwrap_or_default();
                // A log holds one summary, unless it is several logs.
                let path = match found.len() {
                    0 => PathBuf::from(label),
                    n => PathBuf::from(format!("{label} (summary {})", n + 1)),
                };
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64.as_bytes())
                    .with_context(|| format!("{}: the summary is not base64", path.display()))?;
                found.push((path.clone(), shard::read(&path, &bytes)?));
            }
            Some(b) => b.push_str(line),
        }
    }
    if block.is_some() {
        bail!("{label}: a shard summary is cut short (no {END} line)");
    }
    Ok(found)
}

/// The shard summaries of one input: a file of either kind, or a
/// directory's `shard-*.json`. `strict`: an unreadable summary in a
/// directory is an error (else it is being written, and skipped).
fn read_input(path: &Path, strict: bool) -> Result<Vec<(PathBuf, shard::Shard)>> {
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read the directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".json"))
            })
            .collect();
        files.sort();
        let mut out = Vec::new();
        for file in files {
            let read = std::fs::read(&file)
                .map_err(anyhow::Error::from)
                .and_then(|b| shard::read(&file, &b));
            match read {
                Ok(s) => out.push((file, s)),
                Err(e) if strict => return Err(e),
                Err(_) => {}
            }
        }
        return Ok(out);
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if shard::looks_like(&bytes) {
        return Ok(vec![(path.to_owned(), shard::read(path, &bytes)?)]);
    }
    let found = log_summaries(
        &path.display().to_string(),
        &String::from_utf8_lossy(&bytes),
    )?;
    if found.is_empty() {
        bail!(
            "{} holds no shard summary: give shard summaries, results directories or the logs \
             of `wload k8s shard` pods",
            path.display()
        );
    }
    Ok(found)
}

/// `kubectl` with `--namespace`, if given.
fn kubectl(args: &CollectArgs) -> std::process::Command {
    let mut cmd = std::process::Command::new(&args.kubectl);
    if let Some(ns) = &args.namespace {
        cmd.args(["--namespace", ns]);
    }
    cmd
}

fn kubectl_output(mut cmd: std::process::Command, what: &str) -> Result<String> {
    let out = cmd.output().with_context(|| {
        format!("cannot run kubectl to {what} (is it installed? --kubectl PATH)")
    })?;
    if !out.status.success() {
        bail!(
            "kubectl could not {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The shard summaries in the logs of the pods of Job `job`.
fn job_summaries(args: &CollectArgs, job: &str) -> Result<Vec<(PathBuf, shard::Shard)>> {
    let mut cmd = kubectl(args);
    cmd.args(["get", "pods", "--output", "name", "--selector"])
        .arg(format!(
            "app.kubernetes.io/instance={job},app.kubernetes.io/component=shard"
        ));
    let pods = kubectl_output(cmd, &format!("list the pods of Job {job}"))?;
    let mut out = Vec::new();
    let mut without = Vec::new();
    for pod in pods.lines().map(str::trim).filter(|p| !p.is_empty()) {
        let mut cmd = kubectl(args);
        cmd.args(["logs", pod, "--container", "wload"]);
        let log = kubectl_output(cmd, &format!("read the log of {pod}"))?;
        let found = log_summaries(pod, &log)?;
        if found.is_empty() {
            without.push(pod.to_owned());
        }
        out.extend(found);
    }
    // A merge without them would look like a result of the whole test
    // with less load: refused, with what to do.
    if !without.is_empty() || out.is_empty() {
        bail!(
            "no shard summary in the log of {} (running still, or failed): wait for the Job \
             (kubectl wait --for=condition=complete job/{job}); to merge the others, save \
             their logs and give them to `wload k8s collect LOG…`",
            if without.is_empty() {
                format!("any pod of Job {job}")
            } else {
                without.join(", ")
            }
        );
    }
    Ok(out)
}

fn collect(args: &CollectArgs) -> Result<u8> {
    let stats = if args.summary_trend_stats.is_empty() {
        None
    } else {
        Some(
            wload_output::parse_trend_stats(&args.summary_trend_stats)
                .map_err(|e| invalid(format!("invalid --summary-trend-stats: {e}")))?,
        )
    };
    let shards = match &args.job {
        Some(job) => job_summaries(args, job)?,
        None => match args.expect {
            None => read_all(&args.inputs, true)?,
            Some(n) => {
                let wait =
                    parse_duration(&args.wait).map_err(|e| invalid(format!("--wait: {e}")))?;
                let started = Instant::now();
                loop {
                    let found = read_all(&args.inputs, false)?;
                    if found.len() >= n {
                        break found;
                    }
                    if started.elapsed() >= wait {
                        return Err(anyhow!(
                            "{} of {n} shard summaries after {}: a shard failed or is still \
                             running (its pod's log says which); `wload merge` merges the ones \
                             there are",
                            found.len(),
                            args.wait
                        ));
                    }
                    std::thread::sleep(Duration::from_secs(2).min(wait));
                }
            }
        },
    };
    let merged = merge::merge_shards(shards, stats)?;
    super::print_merge(
        &merge::render_shards(&merged),
        &wload_output::export::to_json(&merged.report),
        args.summary_export.as_deref(),
    )?;
    Ok(merged.exit_code)
}

fn read_all(inputs: &[PathBuf], strict: bool) -> Result<Vec<(PathBuf, shard::Shard)>> {
    let mut out = Vec::new();
    for input in inputs {
        // Waiting, the results directory may not be there yet: the first
        // shard to start makes it.
        if !strict && !input.exists() {
            continue;
        }
        out.extend(read_input(input, strict)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_flag_is_taken_out_in_each_of_its_forms() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for flags in [
            v(&["--vus", "2", "--config", "o.json"]),
            v(&["--vus", "2", "-c", "o.json"]),
            v(&["--vus", "2", "--config=o.json"]),
        ] {
            let (config, rest) = take_config(&flags);
            assert_eq!(config, Some(PathBuf::from("o.json")));
            assert_eq!(rest, v(&["--vus", "2"]));
        }
    }

    #[test]
    fn a_log_block_cut_short_is_an_error_and_no_block_is_none() {
        assert!(log_summaries("pod", "hello\nworld\n").unwrap().is_empty());
        let cut = format!("x\n{BEGIN}\nAAAA\n");
        assert!(log_summaries("pod", &cut).is_err());
    }
}
