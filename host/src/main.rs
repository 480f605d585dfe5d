use clap::Parser;

/// mimalloc returns freed memory to the system: with glibc's malloc, every thread that ever
/// hashed a password (argon2id: 19 MiB) or parsed a large body kept an arena of up to 64 MiB
/// resident, and the server's memory grew with the traffic it had seen.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[rocket::main]
async fn main() {
    let cli = tradehost::cli::Cli::parse();
    if let Err(err) = tradehost::cli::run(cli).await {
        eprintln!("tradehost: {err:#}");
        std::process::exit(1);
    }
}
