//! `warpkit info`: the device (name, SMs, memory, driver, PTX arch), or why the CPU backend is
//! used; with `--kernels`, every kernel; with `--keys`, every key of the case files.

use super::*;
use warpkit::config_keys;

#[derive(clap::Args)]
pub(crate) struct InfoArgs {
    /// Also list every kernel with its registers and memory (GPU), or its name (CPU).
    #[arg(long)]
    pub(crate) kernels: bool,
    /// Print every key of the TOML case files (docs/keys.md), or only COMMAND's, as Markdown;
    /// nothing else.
    #[arg(
        long,
        value_name = "COMMAND",
        num_args = 0..=1,
        default_missing_value = "all",
        value_parser = keys_commands(),
        conflicts_with = "kernels"
    )]
    pub(crate) keys: Option<String>,
}

/// `all` or a command with a case file.
fn keys_commands() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        std::iter::once("all").chain(config_keys::command_names()),
    )
}

pub(crate) fn run(choice: BackendChoice, a: InfoArgs) -> Result<()> {
    if let Some(command) = a.keys {
        // Needs no device: the page only.
        match config_keys::command_page(&command) {
            Some(keys) => print!("{keys}"),
            None => print!("{}", config_keys::page()),
        }
        return Ok(());
    }
    let kernels = a.kernels;
    println!(
        "warpkit {} (PTX for {}, {} kernels)",
        env!("CARGO_PKG_VERSION"),
        warpkit::PTX_ARCH,
        warpkit::kernel_names().len()
    );
    let backend = select(choice)?;
    match backend.gpu() {
        Some(gpu) => {
            let i = gpu.info();
            println!("backend: gpu");
            println!("device {}: {}", i.ordinal, i.name);
            println!(
                "  compute capability {}.{}, {} SMs at {} MHz",
                i.compute_capability.0, i.compute_capability.1, i.multiprocessors, i.clock_mhz
            );
            println!(
                "  memory {:.1} GiB, L2 {:.1} MiB",
                i.total_memory as f64 / (1u64 << 30) as f64,
                i.l2_bytes as f64 / (1u64 << 20) as f64
            );
            println!(
                "  driver {} (CUDA {})",
                i.driver_version,
                probe::version_string(i.driver_version)
            );
            if kernels {
                println!(
                    "| kernel | registers | local bytes | static shared bytes | max threads/block |"
                );
                println!("| --- | --- | --- | --- | --- |");
                for name in warpkit::kernel_names() {
                    let a = gpu.module().attributes(name)?;
                    println!(
                        "| {name} | {} | {} | {} | {} |",
                        a.registers, a.local_bytes, a.static_shared_bytes, a.max_threads_per_block
                    );
                }
            }
        }
        None => {
            println!("backend: cpu ({} threads)", rayon::current_num_threads());
            if kernels {
                for name in warpkit::kernel_names() {
                    println!("  {name}");
                }
            }
        }
    }
    Ok(())
}
