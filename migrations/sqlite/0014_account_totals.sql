-- Running totals of each account's completed trades, updated in the transaction that books each
-- trade, so statistics read one row per account instead of summing its history. Decimals are
-- exact decimal text, as in the trades they sum. Rows for existing trades are computed by the
-- server after migrating (store::totals::backfill).
CREATE TABLE account_totals (
    user_id           TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    trades            INTEGER NOT NULL,
    winners           INTEGER NOT NULL,
    losers            INTEGER NOT NULL,
    net_pnl           TEXT NOT NULL,
    profit            TEXT NOT NULL,
    loss              TEXT NOT NULL,
    fees              TEXT NOT NULL,
    volume            TEXT NOT NULL,
    best_trade        TEXT,
    worst_trade       TEXT,
    streak            INTEGER NOT NULL,
    streak_started_at INTEGER,
    last_closed_at    INTEGER,
    updated_at        INTEGER NOT NULL
);
