//! Documents are read in a child process: `agentd extract` reads a document's bytes on stdin and
//! writes its text (or why there is none) as JSON on stdout, under a memory limit it sets on
//! itself and a time limit the parent enforces.
//!
//! Why a process and not a thread: the extractors are large parsers of untrusted input (PDF
//! above all). A panic is caught in-process, but a stack overflow (a PDF nesting 50,000 arrays),
//! an allocation failure or an abort ends the whole process, and with it every run and stream
//! the replica serves; a thread with a bounded stack does not help, and a depth limit cannot be
//! checked inside a third-party parser, nor in a compressed content stream before it is
//! inflated. A child costs a process start per document (about 2 ms; documents are rare next
//! to runs), and whatever it does to itself ends there: the document fails with the reason.
//! The child inherits no environment (no database URL, no keys).

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use super::extract::{extract, Extracted};

/// How documents are extracted: which program, within which limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extraction {
    /// The `agentd` binary to run as `agentd extract`; `None`: this process's own executable.
    pub program: Option<PathBuf>,
    /// The child's address-space limit, in bytes.
    pub max_memory_bytes: u64,
    /// Time the child may take; it is killed after.
    pub timeout: Duration,
}

impl Default for Extraction {
    fn default() -> Self {
        Self { program: None, max_memory_bytes: 1024 * 1024 * 1024, timeout: Duration::from_secs(60) }
    }
}

/// The stack of the child's reading thread.
const READER_STACK_BYTES: usize = 8 * 1024 * 1024;

/// What the child writes on stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Text { text: String, title: Option<String> },
    Error { reason: String },
}

impl Extraction {
    /// The text of `bytes` of `media_type`, read by a child process, or why there is none.
    pub async fn extract(&self, media_type: &str, bytes: Vec<u8>) -> Result<Extracted, String> {
        let program = match &self.program {
            Some(program) => program.clone(),
            None => own_executable()?,
        };
        let mut child = tokio::process::Command::new(program)
            .arg("extract")
            .arg("--media-type")
            .arg(media_type)
            .arg("--max-memory-bytes")
            .arg(self.max_memory_bytes.to_string())
            .arg("--cpu-seconds")
            .arg(self.timeout.as_secs().max(1).to_string())
            .env_clear()
            // mimalloc reserves a 1 GiB arena at start, which would count against the
            // address-space limit before the document is even read: none for the child.
            .env("MIMALLOC_ARENA_RESERVE", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("the document could not be read: the extractor could not start ({e})"))?;
        let stdin = child.stdin.take();
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A child that died early closes the pipe: its exit says why.
                let _ = stdin.write_all(&bytes).await;
            }
        };
        let run = async { tokio::join!(feed, child.wait_with_output()).1 };
        let output = match tokio::time::timeout(self.timeout, run).await {
            Ok(output) => {
                output.map_err(|e| format!("the document could not be read: the extractor failed ({e})"))?
            }
            Err(_) => {
                return Err(format!(
                    "the document could not be read within {} s (extract_timeout_s)",
                    self.timeout.as_secs()
                ))
            }
        };
        if output.status.success() {
            if let Ok(answer) = serde_json::from_slice::<Answer>(&output.stdout) {
                return match answer {
                    Answer::Text { text, title } => Ok(Extracted { text, title }),
                    Answer::Error { reason } => Err(reason),
                };
            }
        }
        Err(self.crash_reason(output.status, &String::from_utf8_lossy(&output.stderr)))
    }

    /// Why the child ended without an answer, from its exit and what the runtime said (never
    /// the rest of its stderr, which a parser may fill with the document's own bytes).
    fn crash_reason(&self, status: ExitStatus, stderr: &str) -> String {
        let why = if stderr.contains("has overflowed its stack") {
            "its structure nests too deeply (reading it overflowed the extractor's stack)".to_owned()
        } else if stderr.contains("memory allocation of") {
            format!(
                "reading it needs more than {} MiB (extract_max_memory_mib)",
                self.max_memory_bytes / (1024 * 1024)
            )
        } else {
            match signal_of(status) {
                Some(11) => "reading it crashed the extractor (SIGSEGV)".to_owned(),
                Some(signal) => format!("the extractor was ended by signal {signal}"),
                None => format!("the extractor failed ({status})"),
            }
        };
        format!("the document could not be read: {why}")
    }
}

#[cfg(unix)]
fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn signal_of(_: ExitStatus) -> Option<i32> {
    None
}

/// This process's executable: `/proc/self/exe` where there is one (it still names the binary
/// after an upgrade replaced the file), else the path it was started from.
fn own_executable() -> Result<PathBuf, String> {
    let proc = PathBuf::from("/proc/self/exe");
    if proc.exists() {
        return Ok(proc);
    }
    std::env::current_exe().map_err(|e| format!("the document could not be read: no extractor ({e})"))
}

/// `agentd extract`: limit this process, read a document from stdin, write its [`Answer`]. Run
/// with `MIMALLOC_ARENA_RESERVE=0` (as [`Extraction::extract`] does), or the allocator's 1 GiB
/// arena counts against the address-space limit.
pub fn child_main(media_type: &str, max_memory_bytes: u64, cpu_seconds: u64) -> std::process::ExitCode {
    use std::io::{Read, Write};
    if let Err(error) = limit_self(max_memory_bytes, cpu_seconds) {
        eprintln!("agentd extract: cannot set resource limits: {error}");
        return std::process::ExitCode::from(3);
    }
    let mut bytes = Vec::new();
    if let Err(error) = std::io::stdin().lock().read_to_end(&mut bytes) {
        eprintln!("agentd extract: cannot read stdin: {error}");
        return std::process::ExitCode::from(3);
    }
    // On a thread of a known stack size: an overflow then hits its guard page and the runtime
    // says so on stderr (the parent reads that as the reason), where the main thread's growing
    // stack may end in a bare SIGSEGV.
    let media_type = media_type.to_owned();
    let reader = std::thread::Builder::new()
        .name("extract".into())
        .stack_size(READER_STACK_BYTES)
        .spawn(move || extract(&media_type, &bytes));
    let extracted = match reader.map(std::thread::JoinHandle::join) {
        Ok(Ok(extracted)) => extracted,
        Ok(Err(_)) => Err("the document could not be read (the reader failed)".to_owned()),
        Err(error) => {
            eprintln!("agentd extract: cannot start the reader: {error}");
            return std::process::ExitCode::from(3);
        }
    };
    let answer = match extracted {
        Ok(Extracted { text, title }) => Answer::Text { text, title },
        Err(reason) => Answer::Error { reason },
    };
    let mut stdout = std::io::stdout().lock();
    match serde_json::to_writer(&mut stdout, &answer)
        .map_err(std::io::Error::from)
        .and_then(|()| stdout.flush())
    {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agentd extract: cannot write the answer: {error}");
            std::process::ExitCode::from(3)
        }
    }
}

/// Cap this process's address space and CPU time (a soft CPU limit ends it with SIGXCPU).
#[cfg(unix)]
fn limit_self(max_memory_bytes: u64, cpu_seconds: u64) -> std::io::Result<()> {
    use rlimit::Resource;
    Resource::AS.set(max_memory_bytes, max_memory_bytes)?;
    Resource::CPU.set(cpu_seconds, cpu_seconds.saturating_add(1))?;
    Ok(())
}

#[cfg(not(unix))]
fn limit_self(_: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}
