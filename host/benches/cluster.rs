//! Several instances on one PostgreSQL database and one Redis, sharing the machine's cores,
//! against one instance alone trading the same bots, measured in one run.
//!
//! `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p tradehost --bench cluster`
//!
//! Each instance is a server state of its own (`App`: its pools, books' writer, engine, plugin
//! runtime, lease loop and bus connection) on a tokio runtime of its own with a worker per core,
//! as a process would have; the instances join one Redis under one prefix and spread the bots
//! between them through their leases before the window opens. Each load is measured on one
//! instance alone (the reference), one instance in cluster mode and several. Two kinds of load,
//! as in the `engine` benchmark:
//! - `idle`: bots whose every order the strict risk rule denies (bot-scans/s);
//! - `fills`: bots trading the `guest-churn` test strategy, an order filled per symbol and scan.
//!
//! `BENCH_BOTS` (default 2000, in all), `BENCH_SECS` (default 10), `BENCH_SETUPS` (the setups
//! in the order measured: `alone` or a number of instances in cluster mode; default
//! `alone,1,3`), `BENCH_CASES` (a comma-separated subset of `idle,fills`, default both),
//! `BENCH_REDIS` (default `redis://127.0.0.1:6379`).

mod support;

use std::time::{Duration, Instant};

use support::{FILLED, bots_that_place_nothing, count, env_or, start_bots, upload};
use tokio::runtime::Runtime;
use tradehost::App;
use tradehost::engine;

/// One instance: its state and the runtime its tasks run on.
struct Instance {
    runtime: Runtime,
    app: App,
    _dir: tempfile::TempDir,
}

impl Instance {
    /// A new instance with scans every 50 ms (each bot due at every tick) and `settings`.
    fn start(settings: &[(&str, &str)]) -> Instance {
        let runtime = Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec![("TRADEHOST_SCAN_INTERVAL", "0.05")];
        all.extend_from_slice(settings);
        let app = runtime.block_on(support::app(dir.path(), &all));
        Instance {
            runtime,
            app,
            _dir: dir,
        }
    }

    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        self.runtime.block_on(future)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Idle,
    Fills,
}

/// Gives `instance` its `bots` bots, stored in the database (the others find them there).
fn create_bots(instance: &Instance, load: Load, bots: u64) {
    let app = &instance.app;
    instance.block_on(async {
        match load {
            Load::Idle => bots_that_place_nothing(app, bots, "ema-cross").await,
            Load::Fills => {
                upload(app, "plugins/testing/guest-churn", "guest_churn.wasm").await;
                start_bots(app, bots, "guest-churn").await;
            }
        }
    });
}

/// Runs every instance's scheduler for the window (after a warm-up) and prints what they did.
fn measure(label: &str, instances: &[Instance], secs: u64) {
    let schedulers: Vec<_> = instances
        .iter()
        .map(|i| i.runtime.spawn(engine::run(i.app.clone())))
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let first = &instances[0];
    let scans_before: Vec<u64> = instances
        .iter()
        .map(|i| i.app.engine.scans_completed())
        .collect();
    let filled_before = first.block_on(count(&first.app, FILLED));
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let elapsed = started.elapsed().as_secs_f64();
    let scans: Vec<u64> = instances
        .iter()
        .zip(&scans_before)
        .map(|(i, before)| i.app.engine.scans_completed() - before)
        .collect();
    let filled = first.block_on(count(&first.app, FILLED)) - filled_before;
    for scheduler in schedulers {
        scheduler.abort();
    }
    let total: u64 = scans.iter().sum();
    let held: Vec<usize> = instances
        .iter()
        .map(|i| i.app.engine.leases_held())
        .collect();
    println!(
        "{label}: {total} scans in {elapsed:.1} s = {:.0} bot-scans/s \
         (per instance {scans:?}, leases held {held:?}), {filled} orders filled = {:.0}/s",
        total as f64 / elapsed,
        filled as f64 / elapsed,
    );
}

/// Starts `count` instances on one database and one Redis, the first holding the bots at first,
/// and waits until their leases are spread (each holds at least its share less one).
fn cluster(count: usize, load: Load, bots: u64, redis: &str) -> Vec<Instance> {
    let prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let settings = |id: &str, database_url: Option<&str>| {
        let mut settings = vec![
            ("REDIS_URL", redis.to_string()),
            ("TRADEHOST_REDIS_PREFIX", prefix.clone()),
            ("TRADEHOST_INSTANCE_ID", id.to_string()),
        ];
        if let Some(url) = database_url {
            settings.push(("DATABASE_URL", url.to_string()));
        }
        settings
    };
    let start = |settings: Vec<(&str, String)>| {
        let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Instance::start(&settings)
    };
    let first = start(settings("bench-1", None));
    create_bots(&first, load, bots);
    let database_url = first.app.config.database_url.clone();
    let mut instances = vec![first];
    for n in 2..=count {
        let id = format!("bench-{n}");
        instances.push(start(settings(&id, Some(&database_url))));
    }
    for instance in &instances {
        let _entered = instance.runtime.enter();
        instance.app.join_cluster();
        instance
            .runtime
            .spawn(engine::leases::run(instance.app.clone()));
    }
    let share = bots.div_ceil(count as u64) as usize;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let held: Vec<usize> = instances
            .iter()
            .map(|i| i.app.engine.leases_held())
            .collect();
        let spread =
            held.iter().sum::<usize>() as u64 == bots && held.iter().all(|&h| h + 1 >= share);
        if spread {
            println!("leases spread: {held:?}");
            return instances;
        }
        assert!(
            Instant::now() < deadline,
            "the instances did not spread their bots: {held:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Ends the instances: their leases released, their state dropped, their runtimes stopped.
fn stop(instances: Vec<Instance>) {
    for Instance { runtime, app, _dir } in instances {
        if app.config.redis_url.is_some() {
            runtime.block_on(engine::leases::leave(&app));
        }
        let entered = runtime.enter();
        drop(app);
        drop(entered);
        runtime.shutdown_background();
    }
}

fn main() {
    let bots = env_or("BENCH_BOTS", 2000);
    let secs = env_or("BENCH_SECS", 10);
    let setups = std::env::var("BENCH_SETUPS").unwrap_or_else(|_| "alone,1,3".into());
    let cases = std::env::var("BENCH_CASES").unwrap_or_else(|_| "idle,fills".into());
    let redis = std::env::var("BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    if !std::env::var("DATABASE_URL").is_ok_and(|url| url.starts_with("postgres")) {
        eprintln!("several instances share a PostgreSQL database: set DATABASE_URL=postgres://…");
        std::process::exit(2);
    }
    for (name, load) in [("idle", Load::Idle), ("fills", Load::Fills)] {
        if !cases.split(',').any(|c| c.trim() == name) {
            continue;
        }
        // `alone` is the reference, one instance without Redis; a number is that many instances
        // in cluster mode (one: what leases, fencing and the bus cost an instance).
        for setup in setups.split(',').map(str::trim) {
            let instances = if setup == "alone" {
                let alone = Instance::start(&[]);
                create_bots(&alone, load, bots);
                vec![alone]
            } else {
                let count = setup.parse().expect("BENCH_SETUPS: `alone` or a number");
                cluster(count, load, bots, &redis)
            };
            let label = match setup {
                "alone" => format!("{name}, one instance alone"),
                count => format!("{name}, {count} instance(s) in cluster mode"),
            };
            measure(&label, &instances, secs);
            stop(instances);
        }
    }
    Runtime::new()
        .unwrap()
        .block_on(support::drop_created_databases());
}
