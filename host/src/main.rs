use clap::Parser;

#[rocket::main]
async fn main() {
    let cli = tradehost::cli::Cli::parse();
    if let Err(err) = tradehost::cli::run(cli).await {
        eprintln!("tradehost: {err:#}");
        std::process::exit(1);
    }
}
