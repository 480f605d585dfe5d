//! Kills the server at random moments while bots trade, then compares every account's books with
//! the paper venue's own record (see `tradehost_blackbox::chaos`).
//!
//! `cargo run -p tradehost-blackbox --bin chaos -- [--kills N] [--users N] [--seed N] [--max-uptime-ms N]`
//! (`bench/chaos.sh` runs it against a release build).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use tradehost_blackbox::chaos::{self, ChaosOptions};

fn main() -> Result<()> {
    let mut options = ChaosOptions {
        kills: 100,
        users: 4,
        seed: 20_261_123,
        max_uptime: Duration::from_millis(2_000),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value: u64 = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag} needs a number"))?;
        match flag.as_str() {
            "--kills" => options.kills = value as usize,
            "--users" => options.users = value as usize,
            "--seed" => options.seed = value,
            "--max-uptime-ms" => options.max_uptime = Duration::from_millis(value),
            other => bail!("unknown option {other}"),
        }
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(chaos::run(options))?;
    println!(
        "kills {}  users {}  orders compared {}  fills {}  completed trades {}  discrepancies {}  elapsed {:.0} s",
        report.kills,
        report.users,
        report.orders,
        report.fills,
        report.trades,
        report.discrepancies.len(),
        report.elapsed.as_secs_f64()
    );
    for discrepancy in &report.discrepancies {
        println!("  {discrepancy}");
    }
    if !report.discrepancies.is_empty() {
        bail!("the books differ from the venue");
    }
    Ok(())
}
