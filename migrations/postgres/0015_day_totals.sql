-- The account totals also keep the longest winning and losing runs, the summed holding time and
-- the first close, and each account gets totals per UTC day and symbol of its trades' close (P&L,
-- counts, entry sizes), so period figures read a row per day instead of every trade. Both are computed again
-- from the trades by the server after migrating (store::totals::backfill): the rows of 0014 and
-- the flag that marked them computed are cleared here.
ALTER TABLE account_totals ADD COLUMN longest_win_streak BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_totals ADD COLUMN longest_loss_streak BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_totals ADD COLUMN hold_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_totals ADD COLUMN first_closed_at BIGINT;

CREATE TABLE account_day_totals (
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- Days since 1970-01-01 (UTC).
    day      BIGINT NOT NULL,
    symbol   TEXT NOT NULL,
    trades   BIGINT NOT NULL,
    winners  BIGINT NOT NULL,
    losers   BIGINT NOT NULL,
    net_pnl  TEXT NOT NULL,
    size_usd TEXT NOT NULL,
    PRIMARY KEY (user_id, day, symbol)
);

DELETE FROM account_totals;
DELETE FROM platform_flags WHERE name = 'account_totals_backfilled';
