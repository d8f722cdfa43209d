//! The `agentd` binary: see [`agentd::cli`].

fn main() -> std::process::ExitCode {
    agentd::cli::main()
}
