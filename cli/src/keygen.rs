//! `hmw keygen PLAN.toml --out DIR`: the certificates of a plan's deployment — one CA and a
//! key and certificate per communication manager, named as `hmw launch` names them — and
//! which files go to which host. `hmw launch` writes its certificates with the same function.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use hmw_cm::keygen::{generate_each, KeygenOutput};
use hmw_model::plan::load_plan;

use crate::{
    layout::{layout, Layout, Target},
    ports::free_port,
};

#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// The plan (TOML), as for `hmw launch`.
    plan: PathBuf,
    /// Folder for the CA and the certificates (created if missing; existing files replaced).
    #[arg(long)]
    out: PathBuf,
}

/// Write a CA and a certificate per communication manager of `layout` into `dir`, each with
/// the extra names [`Layout::certificate_sans`] gives it for `target`.
pub(crate) fn write_certificates(
    layout: &Layout,
    dir: &Path,
    target: Target,
) -> Result<KeygenOutput> {
    generate_each(dir, &layout.certificate_sans(target))
        .with_context(|| format!("cannot write the certificates into {}", dir.display()))
}

/// Which certificate files go to which host: one line per CM host, in the layout's order (the
/// main cluster first), `HOST (cluster C, CM A, B): ca.pem A.pem A.key.pem B.pem B.key.pem`.
pub(crate) fn host_files(layout: &Layout) -> Vec<String> {
    // Each host with its cluster and its CMs.
    let mut by_host: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for cm in &layout.cms {
        match by_host.iter_mut().find(|(host, _, _)| *host == cm.host) {
            Some((_, _, names)) => names.push(&cm.name),
            None => by_host.push((&cm.host, &cm.cluster, vec![&cm.name])),
        }
    }
    by_host
        .iter()
        .map(|(host, cluster, names)| {
            let mut files = vec!["ca.pem".to_owned()];
            for name in names {
                files.push(format!("{name}.pem"));
                files.push(format!("{name}.key.pem"));
            }
            format!(
                "{host} (cluster {cluster}, CM {}): {}",
                names.join(", "),
                files.join(" ")
            )
        })
        .collect()
}

pub fn run(args: KeygenArgs) -> Result<()> {
    let plan = load_plan(&args.plan)?;
    // Without a prediction every cluster with workers takes part: a certificate for every CM
    // a launch of this plan can use, whichever workers the model selects.
    let layout = layout(&plan, None, Target::Deployment, None, free_port)
        .with_context(|| format!("{}", args.plan.display()))?;
    let written = write_certificates(&layout, &args.out, Target::Deployment)?;
    println!(
        "wrote {} certificates for {} (CA {}, its key {}): each names its CM and its own host \
         only as subject alternative names",
        written.cms.len(),
        args.plan.display(),
        written.ca_cert.display(),
        written.ca_key.display(),
    );
    for line in host_files(&layout) {
        println!("{line}");
    }
    println!(
        "copy each host's files to it, into the folder its run configuration's [cm] certs \
         names; keep {} off the clusters",
        written.ca_key.display()
    );
    Ok(())
}
