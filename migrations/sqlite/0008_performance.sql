-- Companion sets E and F: performance snapshots per user (written by the KPI tracker every
-- update interval, or posted by a client), the tracker's periodic reports, and the entry-fee
-- share of each completed trade so the ledger can show entry and exit fees apart.

CREATE TABLE performance_snapshots (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    taken_at           BIGINT NOT NULL,
    source             TEXT NOT NULL,
    cash               REAL NOT NULL,
    positions_value    REAL NOT NULL,
    unrealized_pnl     REAL NOT NULL,
    realized_pnl_today REAL NOT NULL,
    total_trades       BIGINT NOT NULL,
    winning_trades     BIGINT NOT NULL,
    losing_trades      BIGINT NOT NULL,
    kpi                TEXT
);
CREATE INDEX performance_snapshots_by_user ON performance_snapshots (user_id, taken_at);

CREATE TABLE performance_reports (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    report     TEXT NOT NULL
);
CREATE INDEX performance_reports_by_user ON performance_reports (user_id, created_at);

ALTER TABLE trades ADD COLUMN entry_fee TEXT;
