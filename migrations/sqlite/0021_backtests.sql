-- Backtests a user ran: what was asked, how far the run got, and its report (JSON: the
-- figures, trades and equity curve), kept until the user deletes it.
CREATE TABLE backtests (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    progress_pct BIGINT NOT NULL DEFAULT 0,
    candles BIGINT NOT NULL,
    error TEXT,
    report TEXT,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    finished_at BIGINT
);
CREATE INDEX backtests_by_user ON backtests (user_id, created_at);
