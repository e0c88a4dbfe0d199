//! The `wload` binary: a thin shell over the engine. It parses the command
//! line (`cli`) and hands a run to `wload_engine`; it holds no logic a
//! library should.

mod cli;
mod demo;

use std::process::ExitCode;

fn main() -> ExitCode {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(cli::main());
    // Whatever still waits in the background (a read of stdin, by the
    // service's worker) must not keep the process from exiting.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            match e.downcast_ref::<wload_engine::run::ExitError>() {
                Some(exit) => ExitCode::from(exit.code),
                None => ExitCode::FAILURE,
            }
        }
    }
}
