//! The `agentd` binary: see [`agentd::cli`].

/// mimalloc rather than the system allocator: under load glibc's malloc took about a third of the
/// process's CPU (contended arenas, consolidation) and held more memory (docs/performance.md).
/// Built without transparent huge pages (`no_thp`): with them, memory freed and reused was faulted
/// back in 2 MiB at a time, and zeroing those pages cost more than the allocations.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agentd::cli::main()
}
