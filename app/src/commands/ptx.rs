//! `warpkit ptx`: the embedded PTX module (for ptxas, cuobjdump or reading).

use super::*;

#[derive(clap::Args)]
pub(crate) struct PtxArgs {
    /// Output file; standard output when absent.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(a: PtxArgs) -> Result<()> {
    let PtxArgs { out } = a;
    let ptx = warpkit::module_ptx().map_err(anyhow::Error::msg)?;
    match out {
        Some(path) => {
            std::fs::write(&path, ptx).with_context(|| format!("writing {}", path.display()))
        }
        None => {
            print!("{ptx}");
            Ok(())
        }
    }
}
