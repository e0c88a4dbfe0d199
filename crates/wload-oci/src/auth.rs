//! Registry credentials: basic auth from `WLOAD_REGISTRY_USERNAME` and
//! `WLOAD_REGISTRY_PASSWORD`, else from the `auths` of a Docker
//! `config.json` (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), the file `docker login`, `podman login` and
//! `oras login` write, so a machine logged in for images is logged in for
//! plugins. Credential helpers (`credsStore`) are not run: wload does not
//! start other programs to read secrets.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use base64::Engine as _;

/// A user name and password for HTTP basic auth (the registry may trade
/// them for a bearer token; the OCI client does that).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
    /// Where they came from, for messages (never the secret itself).
    pub source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (from {})", self.username, self.source)
    }
}

/// The credentials for `registry` (`HOST[:PORT]`), or `None` for an
/// anonymous pull or push.
pub fn for_registry(registry: &str) -> Result<Option<Credentials>> {
    let user = std::env::var("WLOAD_REGISTRY_USERNAME").ok();
    let password = std::env::var("WLOAD_REGISTRY_PASSWORD").ok();
    match (user, password) {
        (Some(username), Some(password)) => {
            return Ok(Some(Credentials {
                username,
                password,
                source: "WLOAD_REGISTRY_USERNAME and WLOAD_REGISTRY_PASSWORD".into(),
            }));
        }
        (Some(_), None) | (None, Some(_)) => bail!(
            "set both WLOAD_REGISTRY_USERNAME and WLOAD_REGISTRY_PASSWORD, or neither \
             (then a Docker config.json's login is used)"
        ),
        (None, None) => {}
    }
    match docker_config_path() {
        Some(path) if path.exists() => from_docker_config(&path, registry),
        _ => Ok(None),
    }
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(Path::new(&dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".docker/config.json"))
}

/// `auths[registry].auth` (base64 of `user:password`) of a Docker config
/// file; the key may also be written with a scheme (`https://HOST`) or a
/// path (`HOST/v2/`), as older `docker login`s did.
pub fn from_docker_config(path: &Path, registry: &str) -> Result<Option<Credentials>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the Docker config {}", path.display()))?;
    let config: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(auths) = config["auths"].as_object() else {
        return Ok(None);
    };
    let entry = auths.iter().find(|(key, _)| {
        let key = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        key.split('/').next() == Some(registry)
    });
    let Some((key, entry)) = entry else {
        return Ok(None);
    };
    let source = format!("{} (auths.{key})", path.display());
    let Some(encoded) = entry["auth"].as_str() else {
        // A login kept by a credential helper or an identity token: not
        // read here, so the pull or push goes anonymous and the registry
        // says whether that is enough.
        return Ok(None);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    let Some((username, password)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
        bail!("{source}: auth is not base64 of USER:PASSWORD; run `docker login {registry}` again");
    };
    Ok(Some(Credentials {
        username: username.to_owned(),
        password: password.to_owned(),
        source,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_login_of_the_registry_only() {
        let dir = std::env::temp_dir().join(format!("wload-oci-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("config.json");
        std::fs::write(
            &path,
            r#"{"auths": {
                "https://127.0.0.1:5000/v2/": {"auth": "YWxpY2U6czNjcjN0"},
                "other.example:443": {"auth": "Ym9iOng="},
                "helper.example": {}
            }}"#,
        )
        .expect("write");
        let c = from_docker_config(&path, "127.0.0.1:5000")
            .expect("read")
            .expect("found");
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("alice", "s3cr3t")
        );
        assert!(!format!("{c:?}").contains("s3cr3t"));
        assert_eq!(
            from_docker_config(&path, "127.0.0.1:5001").expect("read"),
            None
        );
        assert_eq!(
            from_docker_config(&path, "helper.example").expect("read"),
            None
        );
        std::fs::write(&path, r#"{"auths": {"h": {"auth": "bm9jb2xvbg=="}}}"#).expect("write");
        let e = from_docker_config(&path, "h").expect_err("no colon");
        assert!(e.to_string().contains("docker login h"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
