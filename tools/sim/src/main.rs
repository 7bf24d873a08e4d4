//! `mm-sim`: see `--help`, docs/simulator.md and scripts/sim.sh.

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = tokio::select! {
        result = sim::run_cli(&args) => match result {
            Ok(code) => code,
            Err(e) => {
                eprintln!("mm-sim: {e}");
                1
            }
        },
        // Returning (instead of exiting) drops the redis-server guard.
        _ = tokio::signal::ctrl_c() => {
            eprintln!("mm-sim: interrupted");
            130
        }
    };
    std::process::exit(code);
}
