-- Money, prices and quantities become NUMERIC, which the database sums exactly (they were
-- decimal TEXT, which it cannot). Existing values keep their digits, rounded to 8 decimal places
-- (half away from zero) as every value written from now on is (store::decimal).


ALTER TABLE trading_accounts
    ALTER COLUMN initial_capital TYPE NUMERIC USING round(initial_capital::numeric, 8),
    ALTER COLUMN cash TYPE NUMERIC USING round(cash::numeric, 8),
    ALTER COLUMN realized_pnl TYPE NUMERIC USING round(realized_pnl::numeric, 8),
    ALTER COLUMN fees_paid TYPE NUMERIC USING round(fees_paid::numeric, 8);

ALTER TABLE orders
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8),
    ALTER COLUMN filled_quantity DROP DEFAULT,
    ALTER COLUMN filled_quantity TYPE NUMERIC USING round(filled_quantity::numeric, 8),
    ALTER COLUMN stop_loss TYPE NUMERIC USING round(stop_loss::numeric, 8),
    ALTER COLUMN take_profit TYPE NUMERIC USING round(take_profit::numeric, 8),
    ALTER COLUMN limit_price TYPE NUMERIC USING round(limit_price::numeric, 8),
    ALTER COLUMN trail_pct TYPE NUMERIC USING round(trail_pct::numeric, 8);
ALTER TABLE orders ALTER COLUMN filled_quantity SET DEFAULT 0;

ALTER TABLE positions
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8),
    ALTER COLUMN entry_price TYPE NUMERIC USING round(entry_price::numeric, 8),
    ALTER COLUMN entry_fees TYPE NUMERIC USING round(entry_fees::numeric, 8),
    ALTER COLUMN extreme_price TYPE NUMERIC USING round(extreme_price::numeric, 8),
    ALTER COLUMN current_price TYPE NUMERIC USING round(current_price::numeric, 8),
    ALTER COLUMN stop_loss TYPE NUMERIC USING round(stop_loss::numeric, 8),
    ALTER COLUMN take_profit TYPE NUMERIC USING round(take_profit::numeric, 8),
    ALTER COLUMN trail_pct TYPE NUMERIC USING round(trail_pct::numeric, 8),
    ALTER COLUMN cost TYPE NUMERIC USING round(cost::numeric, 8);

ALTER TABLE trades
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8),
    ALTER COLUMN entry_price TYPE NUMERIC USING round(entry_price::numeric, 8),
    ALTER COLUMN exit_price TYPE NUMERIC USING round(exit_price::numeric, 8),
    ALTER COLUMN size_usd TYPE NUMERIC USING round(size_usd::numeric, 8),
    ALTER COLUMN gross_pnl TYPE NUMERIC USING round(gross_pnl::numeric, 8),
    ALTER COLUMN fees TYPE NUMERIC USING round(fees::numeric, 8),
    ALTER COLUMN net_pnl TYPE NUMERIC USING round(net_pnl::numeric, 8),
    ALTER COLUMN pnl_pct TYPE NUMERIC USING round(pnl_pct::numeric, 8),
    ALTER COLUMN entry_fee TYPE NUMERIC USING round(entry_fee::numeric, 8);

ALTER TABLE ledger
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8),
    ALTER COLUMN price TYPE NUMERIC USING round(price::numeric, 8),
    ALTER COLUMN notional TYPE NUMERIC USING round(notional::numeric, 8),
    ALTER COLUMN fee TYPE NUMERIC USING round(fee::numeric, 8),
    ALTER COLUMN realized_pnl TYPE NUMERIC USING round(realized_pnl::numeric, 8),
    ALTER COLUMN cash_after TYPE NUMERIC USING round(cash_after::numeric, 8),
    ALTER COLUMN entry_fee TYPE NUMERIC USING round(entry_fee::numeric, 8);

ALTER TABLE fills
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8),
    ALTER COLUMN price TYPE NUMERIC USING round(price::numeric, 8),
    ALTER COLUMN fee TYPE NUMERIC USING round(fee::numeric, 8);

ALTER TABLE equity_snapshots
    ALTER COLUMN equity TYPE NUMERIC USING round(equity::numeric, 8),
    ALTER COLUMN cash TYPE NUMERIC USING round(cash::numeric, 8),
    ALTER COLUMN unrealized_pnl TYPE NUMERIC USING round(unrealized_pnl::numeric, 8);

ALTER TABLE venue_baselines
    ALTER COLUMN quantity TYPE NUMERIC USING round(quantity::numeric, 8);

ALTER TABLE signals
    ALTER COLUMN size_usd TYPE NUMERIC USING round(size_usd::numeric, 8),
    ALTER COLUMN limit_price TYPE NUMERIC USING round(limit_price::numeric, 8);

ALTER TABLE subscriptions
    ALTER COLUMN amount TYPE NUMERIC USING round(amount::numeric, 8);

ALTER TABLE payments
    ALTER COLUMN amount TYPE NUMERIC USING round(amount::numeric, 8);

ALTER TABLE account_totals
    ALTER COLUMN net_pnl TYPE NUMERIC USING round(net_pnl::numeric, 8),
    ALTER COLUMN profit TYPE NUMERIC USING round(profit::numeric, 8),
    ALTER COLUMN loss TYPE NUMERIC USING round(loss::numeric, 8),
    ALTER COLUMN fees TYPE NUMERIC USING round(fees::numeric, 8),
    ALTER COLUMN volume TYPE NUMERIC USING round(volume::numeric, 8),
    ALTER COLUMN best_trade TYPE NUMERIC USING round(best_trade::numeric, 8),
    ALTER COLUMN worst_trade TYPE NUMERIC USING round(worst_trade::numeric, 8);

ALTER TABLE account_day_totals
    ALTER COLUMN net_pnl TYPE NUMERIC USING round(net_pnl::numeric, 8),
    ALTER COLUMN size_usd TYPE NUMERIC USING round(size_usd::numeric, 8);

-- Positions opened before their entry cost was kept had entry_price x quantity.
UPDATE positions SET cost = round(entry_price * quantity, 8) WHERE cost IS NULL;
