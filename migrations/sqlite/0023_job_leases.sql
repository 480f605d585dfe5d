-- Background jobs that must run on one instance at a time (mail delivery, the KPI tracker and
-- its reports, daily summaries, retention, subscription renewal): the instance that holds a job's
-- lease runs it and renews the lease on every run; another takes it over once it has expired.
CREATE TABLE job_leases (
    job        TEXT PRIMARY KEY,
    instance   TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
