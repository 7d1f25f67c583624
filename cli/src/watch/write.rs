//! Writing the live state file atomically: a reader sees the old file or the new one, whole,
//! never a part: the bytes go to a temporary file in the same folder (created with mode 0600:
//! the file names the run's hosts and figures), are flushed to the disk, and the temporary
//! file is renamed over the old one; the folder is flushed too, so that the rename survives a
//! crash.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, Write as _},
    os::unix::fs::OpenOptionsExt as _,
    path::Path,
};

/// Replace `path` by a file holding `bytes`, atomically, with mode 0600.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let temporary = folder.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)?;
        File::open(folder)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn replaces_the_file_whole_with_mode_0600_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("hmw-write-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("live-state.json");
        fs::write(&path, "old").unwrap();
        write_atomically(&path, b"{\"new\": 1}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"new\": 1}");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A folder that does not exist: an error, nothing left behind.
        assert!(write_atomically(&dir.join("gone/x.json"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
