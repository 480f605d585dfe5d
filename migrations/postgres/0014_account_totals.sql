-- Running totals of each account's completed trades, updated in the transaction that books each
-- trade, so statistics read one row per account instead of summing its history. Decimals are
-- exact decimal text, as in the trades they sum. Rows for existing trades are computed by the
-- server after migrating (store::totals::backfill).
CREATE TABLE account_totals (
    user_id           TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    trades            BIGINT NOT NULL,
    winners           BIGINT NOT NULL,
    losers            BIGINT NOT NULL,
    net_pnl           TEXT NOT NULL,
    profit            TEXT NOT NULL,
    loss              TEXT NOT NULL,
    fees              TEXT NOT NULL,
    volume            TEXT NOT NULL,
    best_trade        TEXT,
    worst_trade       TEXT,
    streak            BIGINT NOT NULL,
    streak_started_at BIGINT,
    last_closed_at    BIGINT,
    updated_at        BIGINT NOT NULL
);
