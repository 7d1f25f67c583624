//! How `hmw launch` reaches a cluster: ssh to its head (through a jump host when the plan
//! says so), always in batch mode with a connect timeout, and from the head to the cluster's
//! other hosts. Every error names the host and what was being done there.

use std::{
    io::Write as _,
    process::{Command, Stdio},
};

use anyhow::{bail, Context as _, Result};
use hmw_model::plan::launch::ClusterLaunch;
use serde::{Deserialize, Serialize};

/// Seconds ssh waits for a connection before it gives up.
pub(crate) const CONNECT_TIMEOUT_S: u32 = 10;

/// The options every ssh of a run gets: never a prompt, a bounded connect, a dead connection
/// noticed within about 15 s.
fn batch_options() -> Vec<String> {
    [
        "BatchMode=yes".to_owned(),
        format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
        "ServerAliveInterval=5".to_owned(),
        "ServerAliveCountMax=3".to_owned(),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_owned(), o])
    .collect()
}

/// An ssh destination: the cluster's head host and how to log in there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SshTarget {
    pub(crate) host: String,
    pub(crate) user: Option<String>,
    pub(crate) port: Option<u16>,
    pub(crate) identity: Option<String>,
    /// `ProxyJump`.
    pub(crate) jump: Option<String>,
}

impl SshTarget {
    /// The head of a cluster from its `[cluster.launch]` table; `default_head` is the host of
    /// its master or sub-master.
    pub(crate) fn head_of(settings: &ClusterLaunch, default_head: &str) -> SshTarget {
        SshTarget {
            host: settings
                .head
                .clone()
                .unwrap_or_else(|| default_head.to_owned()),
            user: settings.ssh_user.clone(),
            port: settings.ssh_port,
            identity: settings.ssh_identity.clone(),
            jump: settings.jump.clone(),
        }
    }

    /// `host` of a cluster reached directly (through its jump host, when it has one), as its
    /// `[cluster.launch]` logs in.
    pub(crate) fn host_of(settings: &ClusterLaunch, host: &str) -> SshTarget {
        SshTarget {
            host: host.to_owned(),
            ..SshTarget::head_of(settings, host)
        }
    }

    /// `ssh OPTIONS HOST REMOTE` (REMOTE a shell command line run on the host).
    pub(crate) fn command(&self, remote: &str) -> Command {
        let mut command = Command::new("ssh");
        command.args(batch_options());
        if let Some(user) = &self.user {
            command.args(["-l", user]);
        }
        if let Some(port) = self.port {
            command.args(["-p", &port.to_string()]);
        }
        if let Some(identity) = &self.identity {
            command.args(["-i", identity]);
        }
        if let Some(jump) = &self.jump {
            command.args(["-J", jump]);
        }
        command.arg(&self.host).arg("--").arg(remote);
        command
    }

    /// Its description in messages: `host` or `host (through jump)`.
    pub(crate) fn describe(&self) -> String {
        match &self.jump {
            Some(jump) => format!("{} (through {jump})", self.host),
            None => self.host.clone(),
        }
    }

    /// Run `remote` there with `input` on its standard input; its standard output, or an error
    /// naming the host, `what` was done and what ssh or the command said.
    pub(crate) fn run(&self, remote: &str, input: &[u8], what: &str) -> Result<String> {
        let mut child = self
            .command(remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("{}: cannot start ssh to {what}", self.describe()))?;
        let mut stdin = child.stdin.take().expect("piped");
        // A command that does not read its input closes the pipe: that is no error.
        let _ = stdin.write_all(input);
        drop(stdin);
        let out = child
            .wait_with_output()
            .with_context(|| format!("{}: ssh to {what}", self.describe()))?;
        if !out.status.success() {
            bail!(
                "{}: cannot {what} ({}): {}",
                self.describe(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A command line run on the head that runs `inner` on `host` of the cluster (on the head
/// itself when `host` is the head): the cluster's own ssh, as `mpirun` uses it.
pub(crate) fn on_host(head_host: &str, host: &str, inner: &str) -> String {
    if host == head_host {
        inner.to_owned()
    } else {
        let options: Vec<String> = batch_options().iter().map(|o| sh_quote(o)).collect();
        format!(
            "ssh {} {} {}",
            options.join(" "),
            sh_quote(host),
            sh_quote(inner)
        )
    }
}

/// Quotes for a POSIX shell.
pub(crate) fn sh_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+%".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_is_batch_with_a_timeout_and_the_plans_options() {
        let target = SshTarget {
            host: "head".into(),
            user: Some("me".into()),
            port: Some(2222),
            identity: None,
            jump: Some("gw".into()),
        };
        let command = target.command("hostname");
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(line.contains("-o BatchMode=yes"), "{line}");
        assert!(line.contains(&format!("-o ConnectTimeout={CONNECT_TIMEOUT_S}")));
        assert!(
            line.ends_with("-l me -p 2222 -J gw head -- hostname"),
            "{line}"
        );
        assert_eq!(target.describe(), "head (through gw)");
    }

    #[test]
    fn quoting_survives_a_shell() {
        assert_eq!(sh_quote("a/b-c"), "a/b-c");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
        let inner = on_host("head", "node-1", "echo 'x y'");
        assert!(inner.starts_with("ssh -o BatchMode=yes"), "{inner}");
        assert!(inner.ends_with("node-1 'echo '\\''x y'\\'''"), "{inner}");
        let _children = crate::processes::tests::spawning_children();
        let out = Command::new("sh")
            .args(["-c", &format!("echo {}", sh_quote("it's $HOME"))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME\n");
        assert_eq!(on_host("head", "head", "true"), "true");
    }
}
