//! Group commit for the books on SQLite. The books' writer (`writer`) commits on a connection that
//! does not wait for the disk (`synchronous = NORMAL`: the commit is in the write-ahead log, safe
//! from a crash of the process but not yet from a power loss); before anything that depends on it
//! goes out (an event, an answer, an order to a venue) it waits in [`GroupSync::wait`] for one
//! flush of the log shared by every commit that finished before the flush started.
//!
//! PostgreSQL's WAL writer flushes concurrent commits of its sessions together already, so there
//! bookings commit synchronously and the wait returns at once.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

type Flush = Arc<dyn Fn() -> io::Result<()> + Send + Sync>;

/// Taken after a commit: a flush that starts after it makes that commit durable.
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

pub struct GroupSync {
    /// Makes every commit finished so far durable; none where commits are durable already.
    flush: Option<Flush>,
    /// Tickets taken by commits that finished: a flush that starts after a ticket covers it.
    issued: AtomicU64,
    /// The highest ticket known durable. Held while a flush runs, so waiters queue behind it and
    /// find themselves covered when it ends.
    durable: tokio::sync::Mutex<u64>,
    flushes: AtomicU64,
}

impl fmt::Debug for GroupSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupSync")
            .field("flushes", &self.flushes())
            .finish_non_exhaustive()
    }
}

impl GroupSync {
    /// Commits are durable when they return (PostgreSQL, or SQLite with `synchronous = FULL`).
    pub fn none() -> Self {
        Self::with(None)
    }

    /// Commits are durable once the SQLite write-ahead log at `wal` is flushed.
    pub fn wal(wal: PathBuf) -> Self {
        Self::with(Some(Arc::new(move || flush_file(&wal))))
    }

    /// Commits are durable once `flush` returns (tests stand in for the disk).
    #[cfg(test)]
    pub fn with_flush(flush: impl Fn() -> io::Result<()> + Send + Sync + 'static) -> Self {
        Self::with(Some(Arc::new(flush)))
    }

    fn with(flush: Option<Flush>) -> Self {
        Self {
            flush,
            issued: AtomicU64::new(0),
            durable: tokio::sync::Mutex::new(0),
            flushes: AtomicU64::new(0),
        }
    }

    /// Waits until every commit that finished before the call is on disk. An error means the
    /// disk refused a flush: what was committed may not survive a power loss.
    pub async fn wait(&self) -> io::Result<()> {
        self.wait_for(self.ticket()).await
    }

    /// A ticket for every commit finished so far, to wait for with [`GroupSync::wait_for`].
    pub fn ticket(&self) -> Ticket {
        Ticket(self.issued.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// Waits until the commits `ticket` was taken after are on disk.
    pub async fn wait_for(&self, Ticket(ticket): Ticket) -> io::Result<()> {
        let Some(flush) = &self.flush else {
            return Ok(());
        };
        let mut durable = self.durable.lock().await;
        if *durable >= ticket {
            return Ok(());
        }
        // Every ticket up to here belongs to a commit that finished before this flush starts.
        let covered = self.issued.load(Ordering::SeqCst);
        let flush = flush.clone();
        tokio::task::spawn_blocking(move || flush())
            .await
            .map_err(io::Error::other)??;
        self.flushes.fetch_add(1, Ordering::Relaxed);
        *durable = covered;
        Ok(())
    }

    /// Flushes done so far (for tests and metrics).
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }
}

fn flush_file(path: &Path) -> io::Result<()> {
    match File::open(path) {
        Ok(file) => file.sync_data(),
        // No log: everything was checkpointed into the database file, which SQLite flushed.
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_waiters_share_flushes_and_none_returns_before_one_that_covers_it() {
        // Each flush takes 20 ms and records when it started and ended.
        let flushes: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
        let record = flushes.clone();
        let sync = Arc::new(GroupSync::with(Some(Arc::new(move || {
            let start = Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            record.lock().unwrap().push((start, Instant::now()));
            Ok(())
        }))));
        let mut waiters = tokio::task::JoinSet::new();
        for n in 0..64u64 {
            let sync = sync.clone();
            waiters.spawn(async move {
                tokio::time::sleep(Duration::from_millis(n % 8 * 5)).await;
                let called = Instant::now();
                sync.wait().await.unwrap();
                (called, Instant::now())
            });
        }
        let waits = waiters.join_all().await;
        let flushes = flushes.lock().unwrap().clone();
        assert!(
            !flushes.is_empty() && flushes.len() < 64,
            "{} flushes for 64 waiters",
            flushes.len()
        );
        assert_eq!(sync.flushes(), flushes.len() as u64);
        for (called, returned) in waits {
            assert!(
                flushes
                    .iter()
                    .any(|(start, end)| *start >= called && *end <= returned),
                "a waiter returned without a flush that started after its call"
            );
        }
    }

    #[tokio::test]
    async fn a_failed_flush_is_reported_and_the_next_wait_tries_again() {
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = fail.clone();
        let sync = GroupSync::with(Some(Arc::new(move || {
            if flag.swap(false, Ordering::SeqCst) {
                Err(io::Error::other("disk refused"))
            } else {
                Ok(())
            }
        })));
        assert!(sync.wait().await.is_err());
        sync.wait().await.unwrap();
        assert_eq!(sync.flushes(), 1);
    }

    #[tokio::test]
    async fn without_a_log_waits_return_at_once_and_a_missing_file_is_flushed() {
        GroupSync::none().wait().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let sync = GroupSync::wal(dir.path().join("absent-wal"));
        sync.wait().await.unwrap();
        std::fs::write(dir.path().join("db-wal"), b"frames").unwrap();
        let sync = GroupSync::wal(dir.path().join("db-wal"));
        sync.wait().await.unwrap();
        assert_eq!(sync.flushes(), 1);
    }
}
