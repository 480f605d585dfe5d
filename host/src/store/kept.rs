//! Connections kept out of sqlx's pool for statements run outside a transaction (SQLite's). sqlx's
//! pool tests every connection it gets back (on SQLite a round trip to the connection's thread, in
//! a task of its own) before another caller may take it; a connection to a local file needs no
//! test. A
//! statement that ends puts its connection back here at once. One whose future is dropped
//! half-way gives its connection back to sqlx's pool instead, which tests it as always, and the
//! next lease takes a connection from the pool again.

use std::sync::Mutex;

use sqlx::Database;
use sqlx::pool::PoolConnection;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Up to `size` connections of a pool, lent one statement at a time.
#[derive(Debug)]
pub struct Kept<DB: Database> {
    pool: sqlx::Pool<DB>,
    /// `None` once closed: connections coming back then go to the pool.
    idle: Mutex<Option<Vec<PoolConnection<DB>>>>,
    permits: Semaphore,
}

impl<DB: Database> Kept<DB> {
    /// Keeps up to `size` of `pool`'s connections (taken as they are first needed); the pool
    /// must have more, for transactions.
    pub fn new(pool: sqlx::Pool<DB>, size: usize) -> Self {
        Kept {
            pool,
            idle: Mutex::new(Some(Vec::with_capacity(size))),
            permits: Semaphore::new(size),
        }
    }

    /// A connection for one statement, waiting while every kept connection is lent.
    pub async fn lease(&self) -> sqlx::Result<Lease<'_, DB>> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self
            .idle
            .lock()
            .expect("not poisoned")
            .as_mut()
            .and_then(Vec::pop);
        let conn = match idle {
            Some(conn) => conn,
            None => Box::pin(self.pool.acquire()).await?,
        };
        Ok(Lease {
            kept: self,
            conn: Some(conn),
            finished: false,
            _permit: permit,
        })
    }

    /// Gives every kept connection back to the pool (before the pool closes, which waits for
    /// them); later leases fail.
    pub fn close(&self) {
        self.permits.close();
        self.idle.lock().expect("not poisoned").take();
    }
}

/// A lent connection: back to the kept ones when [`Lease::finish`]ed, else to the pool.
#[derive(Debug)]
pub struct Lease<'a, DB: Database> {
    kept: &'a Kept<DB>,
    conn: Option<PoolConnection<DB>>,
    finished: bool,
    _permit: SemaphorePermit<'a>,
}

impl<DB: Database> Lease<'_, DB> {
    pub fn conn(&mut self) -> &mut DB::Connection {
        self.conn.as_mut().expect("held until dropped")
    }

    /// The statement ran to its end (whatever its result): the connection is ready for the next.
    pub fn finish(&mut self) {
        self.finished = true;
    }
}

impl<DB: Database> Drop for Lease<'_, DB> {
    fn drop(&mut self) {
        if !self.finished {
            return;
        }
        let conn = self.conn.take().expect("held until dropped");
        if let Some(idle) = self.kept.idle.lock().expect("not poisoned").as_mut() {
            idle.push(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::SqlitePool;
    use sqlx::sqlite::SqlitePoolOptions;

    async fn pool(size: u32) -> SqlitePool {
        SqlitePoolOptions::new()
            .max_connections(size)
            .connect("sqlite::memory:")
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_finished_lease_keeps_its_connection_and_an_abandoned_one_returns_it_to_the_pool() {
        let pool = pool(3).await;
        let kept = Kept::new(pool.clone(), 2);
        let mut lease = kept.lease().await.unwrap();
        sqlx::query("SELECT 1").execute(lease.conn()).await.unwrap();
        lease.finish();
        drop(lease);
        // Kept: out of the pool, ready for the next lease without the pool's test.
        assert_eq!(pool.size() as usize - pool.num_idle(), 1);
        assert_eq!(kept.idle.lock().unwrap().as_ref().unwrap().len(), 1);

        let lease = kept.lease().await.unwrap();
        assert!(kept.idle.lock().unwrap().as_ref().unwrap().is_empty());
        drop(lease); // never finished, as when a request is dropped half-way
        assert!(kept.idle.lock().unwrap().as_ref().unwrap().is_empty());
        // The pool has it back once its test has run.
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while pool.num_idle() < pool.size() as usize {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the connection returns to the pool");
    }

    #[tokio::test]
    async fn leases_wait_for_a_kept_connection_and_fail_once_closed() {
        let pool = pool(3).await;
        let kept = Kept::new(pool.clone(), 1);
        let mut first = kept.lease().await.unwrap();
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), kept.lease());
        assert!(waiting.await.is_err(), "the one kept connection is lent");
        first.finish();
        drop(first);
        let mut second = kept.lease().await.unwrap();
        second.finish();
        drop(second);

        kept.close();
        assert!(matches!(kept.lease().await, Err(sqlx::Error::PoolClosed)));
        // Closing gave the kept connection back: the pool closes without waiting for it.
        tokio::time::timeout(std::time::Duration::from_secs(5), pool.close())
            .await
            .expect("the pool closes");
    }
}
