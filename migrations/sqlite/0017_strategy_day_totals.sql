-- The day totals are kept per strategy as well (the strategy that opened each trade), so a
-- strategy's figures read its day rows instead of every trade. The rows, and the account totals
-- with them, are computed again from the trades by the server after migrating
-- (store::totals::backfill).
DROP TABLE account_day_totals;
CREATE TABLE account_day_totals (
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- Days since 1970-01-01 (UTC).
    day      INTEGER NOT NULL,
    symbol   TEXT NOT NULL,
    strategy TEXT NOT NULL,
    trades   INTEGER NOT NULL,
    winners  INTEGER NOT NULL,
    losers   INTEGER NOT NULL,
    net_pnl  INTEGER NOT NULL,
    size_usd INTEGER NOT NULL,
    PRIMARY KEY (user_id, day, symbol, strategy)
);

DELETE FROM account_totals;
DELETE FROM platform_flags WHERE name = 'account_totals_backfilled';
