//! The `agentd` binary: see [`agentd::cli`].

/// mimalloc rather than the system allocator: under load glibc's malloc took about a third of the
/// process's CPU (contended arenas, consolidation) and held more memory (README "Performance").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agentd::cli::main()
}
