//! What this binary is: its release, as `Cargo.toml` says (`RELEASES` lists the released ones).
//! The schema it knows is the store's (`store::schema_version`).

/// This binary's release: `0.2.0`, or `0.2.0-dev` between releases.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");
