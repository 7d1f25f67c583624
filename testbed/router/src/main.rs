//! `hmw-wan-router --config FILE --control SOCKET_PATH [--log FILE]`: see the library's
//! documentation.

use clap::Parser;

fn main() {
    let args = hmw_wan_router::Args::parse();
    if let Err(e) = hmw_wan_router::run(&args) {
        let message = format!("error: {e:#}");
        hmw_wan_router::log(&message);
        if args.log.is_some() {
            eprintln!("hmw-wan-router: {message}");
        }
        std::process::exit(1);
    }
}
