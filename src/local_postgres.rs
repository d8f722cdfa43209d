//! A private PostgreSQL cluster for `agentd serve` without `DATABASE_URL`: when PostgreSQL's
//! server binaries are installed, agentd initialises a cluster in its data directory (once),
//! starts it on a free loopback port, and stops it on exit; the next start reuses it, runs and
//! all. A cluster that is already running there (another agentd, or one left by a crash) is used
//! as it is and left running.
//!
//! PostgreSQL refuses to run as root: as root, `initdb` and `pg_ctl` run as the `postgres` user
//! (through `runuser`), which then owns the cluster's directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use crate::outbound::Secret;

/// How to find and keep the cluster.
#[derive(Debug, Clone, Default)]
pub struct LocalSettings {
    /// Where the cluster lives (`<dir>/postgres`); default: [`default_data_dir`].
    pub data_dir: Option<PathBuf>,
    /// The directory of `initdb` and `pg_ctl`; default: found on `PATH`, else the newest
    /// `/usr/lib/postgresql/*/bin`.
    pub bin_dir: Option<PathBuf>,
}

/// Why no private cluster could be had.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(
        "no database: DATABASE_URL is not set and PostgreSQL's server binaries (initdb, pg_ctl) are not installed{where_}.\n\
         Get a database in one of these ways:\n  \
         - set DATABASE_URL (or --database-url) to a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/postgres\n  \
         - install PostgreSQL (e.g. `apt-get install postgresql`, `brew install postgresql`): agentd then runs a private cluster in its data directory\n  \
         - run `docker compose up`, which starts PostgreSQL and agentd together"
    )]
    NotInstalled { where_: String },
    #[error("the private PostgreSQL cluster in {dir}: {message}")]
    Failed { dir: String, message: String },
}

/// A running private cluster; [`LocalPostgres::stop`] stops it if this process started it.
#[derive(Debug)]
pub struct LocalPostgres {
    bin: PathBuf,
    cluster: PathBuf,
    port: u16,
    started_here: bool,
}

/// Where agentd keeps its data by default: `$AGENTD_DATA_DIR`-less, `$XDG_DATA_HOME/agentd`,
/// else `~/.local/share/agentd`; as root `/var/lib/agentd` (the `postgres` user cannot enter
/// root's home).
pub fn default_data_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from("/var/lib/agentd");
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("agentd");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".local/share/agentd"),
        None => PathBuf::from(".agentd"),
    }
}

impl LocalPostgres {
    /// Initialise (the first time) and start the cluster, or find it running.
    pub async fn start(settings: &LocalSettings) -> Result<Self, LocalError> {
        let bin = find_bin_dir(settings.bin_dir.as_deref())?;
        let data_dir = settings.data_dir.clone().unwrap_or_else(default_data_dir);
        let cluster = data_dir.join("postgres");
        let failed = |message: String| LocalError::Failed { dir: cluster.display().to_string(), message };
        std::fs::create_dir_all(&cluster).map_err(|e| failed(format!("cannot create it: {e}")))?;
        if is_root() {
            // The postgres user must reach and own the cluster's directory.
            set_mode(&data_dir, 0o755)
                .map_err(|e| failed(format!("cannot open {}: {e}", data_dir.display())))?;
            run(Command::new("chown").arg("postgres").arg(&cluster), "chown postgres")
                .await
                .map_err(failed)?;
        }
        set_mode(&cluster, 0o700).map_err(|e| failed(format!("cannot restrict it: {e}")))?;
        if !cluster.join("PG_VERSION").exists() {
            tracing::info!(dir = %cluster.display(), "initialising a private PostgreSQL cluster");
            let mut initdb = as_postgres(&bin.join("initdb"));
            initdb.arg("-D").arg(&cluster).args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ]);
            run(&mut initdb, "initdb").await.map_err(failed)?;
        }
        if let Some(port) = running_port(&bin, &cluster).await {
            tracing::info!(port, dir = %cluster.display(), "using the private PostgreSQL cluster already running");
            return Ok(Self { bin, cluster, port, started_here: false });
        }
        let port = free_port().map_err(|e| failed(format!("no free port: {e}")))?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=100",
            cluster.display()
        );
        let mut start = as_postgres(&bin.join("pg_ctl"));
        start.arg("-D").arg(&cluster).arg("-l").arg(cluster.join("server.log"));
        start.args(["-w", "-t", "60", "-o", &options, "start"]);
        run(&mut start, "pg_ctl start").await.map_err(|message| {
            failed(format!("{message} (its log: {})", cluster.join("server.log").display()))
        })?;
        tracing::warn!(
            port, dir = %cluster.display(),
            "DATABASE_URL is not set: started a private PostgreSQL cluster (for trying agentd; set DATABASE_URL in production)"
        );
        Ok(Self { bin, cluster, port, started_here: true })
    }

    /// The cluster's URL.
    pub fn url(&self) -> Secret {
        Secret::new(format!("postgres://postgres@127.0.0.1:{}/postgres", self.port))
    }

    /// Stop the cluster if this process started it (a fast shutdown: sessions end, data is kept).
    pub async fn stop(self) {
        if !self.started_here {
            return;
        }
        let mut stop = as_postgres(&self.bin.join("pg_ctl"));
        stop.arg("-D").arg(&self.cluster).args(["-m", "fast", "-w", "-t", "30", "stop"]);
        match run(&mut stop, "pg_ctl stop").await {
            Ok(()) => tracing::info!(dir = %self.cluster.display(), "private PostgreSQL cluster stopped"),
            Err(error) => tracing::warn!(%error, "cannot stop the private PostgreSQL cluster"),
        }
    }
}

/// `initdb`'s directory: as configured, on `PATH`, or the newest Debian-style install.
fn find_bin_dir(configured: Option<&Path>) -> Result<PathBuf, LocalError> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = configured {
        return match has_tools(dir) {
            true => Ok(dir.to_owned()),
            false => Err(LocalError::NotInstalled { where_: format!(" in {}", dir.display()) }),
        };
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(dir) = on_path.into_iter().find(|dir| has_tools(dir)) {
        return Ok(dir);
    }
    let mut installed: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.split('.').next()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has_tools(dir))
        .collect();
    installed.sort();
    installed.pop().map(|(_, dir)| dir).ok_or(LocalError::NotInstalled {
        where_: " (looked on PATH and in /usr/lib/postgresql/*/bin)".into(),
    })
}

/// The port of the cluster running in `cluster`, if one is (its `postmaster.pid`, line 4).
async fn running_port(bin: &Path, cluster: &Path) -> Option<u16> {
    let mut status = as_postgres(&bin.join("pg_ctl"));
    status.arg("-D").arg(cluster).arg("status");
    let running = status.output().await.ok()?.status.success();
    if !running {
        return None;
    }
    let pid_file = std::fs::read_to_string(cluster.join("postmaster.pid")).ok()?;
    pid_file.lines().nth(3)?.trim().parse().ok()
}

/// `program`, run as the `postgres` user when this process is root.
fn as_postgres(program: &Path) -> Command {
    let mut command = if is_root() {
        let mut runuser = Command::new("runuser");
        runuser.args(["-u", "postgres", "--"]).arg(program);
        runuser
    } else {
        Command::new(program)
    };
    command.kill_on_drop(true);
    command
}

/// Run `command` to its end (at most two minutes); its stderr on failure.
async fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .map_err(|_| format!("{what} took over 2 minutes"))?
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!("{what} failed ({}): {}", output.status, stderr.trim()))
}

/// A port nothing listens on now (the kernel's pick).
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Whether this process runs as root (the effective uid in `/proc/self/status`).
fn is_root() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return false };
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|uids| uids.split_whitespace().nth(1))
        .is_some_and(|euid| euid == "0")
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}
