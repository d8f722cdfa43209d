# syntax=docker/dockerfile:1
# Multi-stage build of agentd. The build needs no database: sqlx checks queries against the
# committed .sqlx/ data (SQLX_OFFLINE=true), and fails if that data is stale.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
ENV SQLX_OFFLINE=true CARGO_TERM_COLOR=never
# Dependencies first, so code changes don't rebuild them.
COPY Cargo.toml Cargo.lock ./
COPY crates/fake-llm/Cargo.toml crates/fake-llm/Cargo.toml
RUN mkdir -p src crates/fake-llm/src && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs crates/fake-llm/src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src crates/fake-llm/src
COPY build.rs ./
COPY .sqlx ./.sqlx
COPY migrations ./migrations
COPY crates ./crates
COPY src ./src
RUN touch src/main.rs src/lib.rs crates/fake-llm/src/lib.rs && cargo build --release --locked --bin agentd

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin agentd
COPY --from=build /src/target/release/agentd /usr/local/bin/agentd
# The fake model's scripts and a configuration that uses it, for trying agentd without an LLM key:
# AGENTD_CONFIG=/usr/share/agentd/agentd-fake.toml (runs say "fake_llm": true).
COPY examples/agentd-fake.toml /usr/share/agentd/agentd-fake.toml
# Providers of each kind (OpenAI-compatible, Anthropic, Azure OpenAI), keys from the environment:
# AGENTD_CONFIG=/usr/share/agentd/agentd-providers.toml with OPENAI_API_KEY, ANTHROPIC_API_KEY,
# AZURE_OPENAI_API_KEY (edit base_url of the azure provider: mount your own copy).
COPY examples/agentd-providers.toml /usr/share/agentd/agentd-providers.toml
COPY examples/fake-llm /usr/share/agentd/fake-llm
USER agentd
# Inside a container the service must listen on all interfaces; set AGENTD_API_KEYS to protect it.
ENV AGENTD_BIND=0.0.0.0:8080 RUST_LOG=info
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/agentd"]
CMD ["serve"]
