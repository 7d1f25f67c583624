//! Where an hmw process's logs go.

/// Logs go to stderr through `tracing`; `HMW_LOG` sets the filter (default `warn`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HMW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
