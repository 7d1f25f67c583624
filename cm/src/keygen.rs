//! Certificates for a deployment: one CA and one key + certificate per CM, all signed by the
//! CA, each valid both as TLS server and TLS client (a CM may play either role).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use thiserror::Error;

/// Key or certificate generation failed.
#[derive(Debug, Error)]
pub enum KeygenError {
    /// rcgen refused the parameters.
    #[error("cannot generate certificate for `{name}`: {cause}")]
    Generate {
        /// CM name (or "CA").
        name: String,
        /// Cause.
        cause: rcgen::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {cause}")]
    Write {
        /// File.
        path: PathBuf,
        /// Cause.
        cause: std::io::Error,
    },
    /// A CM name that cannot be a file name and DNS name.
    #[error("invalid CM name `{0}`: use letters, digits, '-' and '.' only")]
    BadName(String),
}

/// Files written for one CM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmFiles {
    /// CM name (also its certificate's DNS name).
    pub name: String,
    /// Certificate (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
}

/// Everything [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeygenOutput {
    /// CA certificate (PEM): the `ca` of every CM's configuration.
    pub ca_cert: PathBuf,
    /// CA private key (PEM): keep it off the clusters.
    pub ca_key: PathBuf,
    /// One entry per CM.
    pub cms: Vec<CmFiles>,
}

fn generate_error(name: &str) -> impl FnOnce(rcgen::Error) -> KeygenError + '_ {
    move |cause| KeygenError::Generate {
        name: name.to_owned(),
        cause,
    }
}

/// Writes `contents` to `path`; a private file (a key) is readable by its owner only from
/// the moment it exists: created with mode 0600, and an existing file is restricted before
/// anything is written into it.
fn write(path: PathBuf, contents: &str, private: bool) -> Result<PathBuf, KeygenError> {
    use std::io::Write;
    let err = |cause| KeygenError::Write {
        path: path.clone(),
        cause,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path).map_err(err)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    file.write_all(contents.as_bytes()).map_err(err)?;
    file.sync_all().map_err(err)?;
    Ok(path)
}

/// Writes `ca.pem`, `ca.key.pem` and, for each name, `NAME.pem` and `NAME.key.pem` into
/// `out_dir` (created if missing). Each CM certificate carries its name and `extra_sans`
/// (host names or IP addresses its peers may use to reach it) as subject alternative names.
pub fn generate(
    out_dir: &Path,
    names: &[String],
    extra_sans: &[String],
) -> Result<KeygenOutput, KeygenError> {
    let each: Vec<(String, Vec<String>)> = names
        .iter()
        .map(|name| (name.clone(), extra_sans.to_vec()))
        .collect();
    generate_each(out_dir, &each)
}

/// [`generate`] with names of its own for each CM: `(name, extra_sans)`, so that a deployed
/// CM's certificate names its own host only (a key taken from one host cannot pose as
/// another host's CM).
pub fn generate_each(
    out_dir: &Path,
    cms_sans: &[(String, Vec<String>)],
) -> Result<KeygenOutput, KeygenError> {
    for (name, _) in cms_sans {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            && !name.starts_with('.');
        if !valid || name == "ca" {
            return Err(KeygenError::BadName(name.clone()));
        }
    }
    std::fs::create_dir_all(out_dir).map_err(|cause| KeygenError::Write {
        path: out_dir.to_owned(),
        cause,
    })?;

    let ca_key = KeyPair::generate().map_err(generate_error("CA"))?;
    let mut ca_params =
        CertificateParams::new(Vec::<String>::new()).map_err(generate_error("CA"))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "hmw-cm CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(generate_error("CA"))?;
    let issuer = Issuer::new(ca_params, &ca_key);

    let mut cms = Vec::with_capacity(cms_sans.len());
    for (name, extra_sans) in cms_sans {
        let key = KeyPair::generate().map_err(generate_error(name))?;
        let mut sans = vec![name.clone()];
        sans.extend(extra_sans.iter().filter(|s| *s != name).cloned());
        let mut params = CertificateParams::new(sans).map_err(generate_error(name))?;
        params
            .distinguished_name
            .push(DnType::CommonName, name.as_str());
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(generate_error(name))?;
        cms.push(CmFiles {
            name: name.clone(),
            cert: write(out_dir.join(format!("{name}.pem")), &cert.pem(), false)?,
            key: write(
                out_dir.join(format!("{name}.key.pem")),
                &key.serialize_pem(),
                true,
            )?,
        });
    }
    Ok(KeygenOutput {
        ca_cert: write(out_dir.join("ca.pem"), &ca_cert.pem(), false)?,
        ca_key: write(out_dir.join("ca.key.pem"), &ca_key.serialize_pem(), true)?,
        cms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn keys_are_private_from_the_start_even_over_an_old_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // A world-readable leftover where a key is about to be written.
        let old = dir.path().join("cm-a.key.pem");
        std::fs::write(&old, "old").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = generate(dir.path(), &["cm-a".into(), "cm-b".into()], &[]).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out.ca_key), 0o600);
        for cm in &out.cms {
            assert_eq!(mode(&cm.key), 0o600, "{}", cm.key.display());
            assert!(std::fs::read_to_string(&cm.key)
                .unwrap()
                .contains("PRIVATE KEY"));
        }
    }
}
