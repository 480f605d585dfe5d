//! Leases on background jobs that must run on one instance at a time.

use super::Db;

/// Takes or renews the lease on `job` for `instance` until `until`: granted when nobody holds
/// it, when `instance` already does, or when the holder's lease ran out before `now`.
pub async fn claim(db: &Db, job: &str, instance: &str, now: i64, until: i64) -> sqlx::Result<bool> {
    let granted = on!(&db.pool, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO job_leases (job, instance, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (job) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at \
             WHERE job_leases.instance = excluded.instance OR job_leases.expires_at < $4"),
        )
        .bind(job)
        .bind(instance)
        .bind(until)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(granted == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn one_instance_holds_a_job_until_its_lease_runs_out() {
        let (db, _dir) = testing::sqlite().await;
        assert!(claim(&db, "mail", "one", 1_000, 2_000).await.unwrap());
        assert!(!claim(&db, "mail", "two", 1_500, 2_500).await.unwrap());
        // The holder renews; others still wait.
        assert!(claim(&db, "mail", "one", 1_900, 3_000).await.unwrap());
        assert!(!claim(&db, "mail", "two", 2_500, 3_500).await.unwrap());
        // Other jobs are leased apart.
        assert!(claim(&db, "retention", "two", 2_500, 3_500).await.unwrap());
        // Once the holder's lease ran out, another instance takes the job over.
        assert!(claim(&db, "mail", "two", 3_001, 4_000).await.unwrap());
        assert!(!claim(&db, "mail", "one", 3_002, 4_000).await.unwrap());
    }
}
