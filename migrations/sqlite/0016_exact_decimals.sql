-- Money, prices and quantities become INTEGER counts of 10^-8 units (1.5 is 150000000), which
-- SQL sums, compares and orders exactly (they were decimal TEXT, which it cannot); see
-- store::decimal. Existing values keep their digits, rounded to 8 decimal places (half away from
-- zero) as every value written from now on is (half to even).
--
-- Each distinct text is converted once, in a table of its own; each column is then replaced by
-- an INTEGER column of the same name (added, filled, the old one dropped, renamed). Columns that
-- are never NULL get a default of 0 because SQLite adds a NOT NULL column only with one; every
-- insert names them.

CREATE TEMP TABLE decimal_units (text TEXT PRIMARY KEY, units INTEGER);

INSERT OR IGNORE INTO decimal_units (text) SELECT initial_capital FROM trading_accounts WHERE initial_capital IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT cash FROM trading_accounts WHERE cash IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT realized_pnl FROM trading_accounts WHERE realized_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT fees_paid FROM trading_accounts WHERE fees_paid IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM orders WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT filled_quantity FROM orders WHERE filled_quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT stop_loss FROM orders WHERE stop_loss IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT take_profit FROM orders WHERE take_profit IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT limit_price FROM orders WHERE limit_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT trail_pct FROM orders WHERE trail_pct IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM positions WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT entry_price FROM positions WHERE entry_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT entry_fees FROM positions WHERE entry_fees IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT extreme_price FROM positions WHERE extreme_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT current_price FROM positions WHERE current_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT stop_loss FROM positions WHERE stop_loss IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT take_profit FROM positions WHERE take_profit IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT trail_pct FROM positions WHERE trail_pct IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT cost FROM positions WHERE cost IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM trades WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT entry_price FROM trades WHERE entry_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT exit_price FROM trades WHERE exit_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT size_usd FROM trades WHERE size_usd IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT gross_pnl FROM trades WHERE gross_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT fees FROM trades WHERE fees IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT net_pnl FROM trades WHERE net_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT pnl_pct FROM trades WHERE pnl_pct IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT entry_fee FROM trades WHERE entry_fee IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM ledger WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT price FROM ledger WHERE price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT notional FROM ledger WHERE notional IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT fee FROM ledger WHERE fee IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT realized_pnl FROM ledger WHERE realized_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT cash_after FROM ledger WHERE cash_after IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT entry_fee FROM ledger WHERE entry_fee IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM fills WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT price FROM fills WHERE price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT fee FROM fills WHERE fee IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT equity FROM equity_snapshots WHERE equity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT cash FROM equity_snapshots WHERE cash IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT unrealized_pnl FROM equity_snapshots WHERE unrealized_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT quantity FROM venue_baselines WHERE quantity IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT size_usd FROM signals WHERE size_usd IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT limit_price FROM signals WHERE limit_price IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT amount FROM subscriptions WHERE amount IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT amount FROM payments WHERE amount IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT net_pnl FROM account_totals WHERE net_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT profit FROM account_totals WHERE profit IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT loss FROM account_totals WHERE loss IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT fees FROM account_totals WHERE fees IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT volume FROM account_totals WHERE volume IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT best_trade FROM account_totals WHERE best_trade IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT worst_trade FROM account_totals WHERE worst_trade IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT net_pnl FROM account_day_totals WHERE net_pnl IS NOT NULL;
INSERT OR IGNORE INTO decimal_units (text) SELECT size_usd FROM account_day_totals WHERE size_usd IS NOT NULL;

-- A text [-]digits[.digits]: the whole part times 10^8, plus the first eight decimals, plus one
-- when the ninth is 5 or more; negated for a leading minus.
UPDATE decimal_units SET units = (
    SELECT sign * (CAST(whole AS INTEGER) * 100000000
                   + CAST(substr(fraction || '00000000', 1, 8) AS INTEGER)
                   + (substr(fraction || '0', 9, 1) >= '5'))
    FROM (
        SELECT CASE WHEN substr(text, 1, 1) = '-' THEN -1 ELSE 1 END AS sign,
               CASE WHEN instr(magnitude, '.') > 0 THEN substr(magnitude, 1, instr(magnitude, '.') - 1)
                    ELSE magnitude END AS whole,
               CASE WHEN instr(magnitude, '.') > 0 THEN substr(magnitude, instr(magnitude, '.') + 1)
                    ELSE '' END AS fraction
        FROM (SELECT ltrim(text, '+-') AS magnitude)
    )
);

ALTER TABLE trading_accounts ADD COLUMN initial_capital__units INTEGER NOT NULL DEFAULT 0;
UPDATE trading_accounts SET initial_capital__units = (SELECT units FROM decimal_units WHERE text = trading_accounts.initial_capital) WHERE initial_capital IS NOT NULL;
ALTER TABLE trading_accounts DROP COLUMN initial_capital;
ALTER TABLE trading_accounts RENAME COLUMN initial_capital__units TO initial_capital;
ALTER TABLE trading_accounts ADD COLUMN cash__units INTEGER NOT NULL DEFAULT 0;
UPDATE trading_accounts SET cash__units = (SELECT units FROM decimal_units WHERE text = trading_accounts.cash) WHERE cash IS NOT NULL;
ALTER TABLE trading_accounts DROP COLUMN cash;
ALTER TABLE trading_accounts RENAME COLUMN cash__units TO cash;
ALTER TABLE trading_accounts ADD COLUMN realized_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE trading_accounts SET realized_pnl__units = (SELECT units FROM decimal_units WHERE text = trading_accounts.realized_pnl) WHERE realized_pnl IS NOT NULL;
ALTER TABLE trading_accounts DROP COLUMN realized_pnl;
ALTER TABLE trading_accounts RENAME COLUMN realized_pnl__units TO realized_pnl;
ALTER TABLE trading_accounts ADD COLUMN fees_paid__units INTEGER NOT NULL DEFAULT 0;
UPDATE trading_accounts SET fees_paid__units = (SELECT units FROM decimal_units WHERE text = trading_accounts.fees_paid) WHERE fees_paid IS NOT NULL;
ALTER TABLE trading_accounts DROP COLUMN fees_paid;
ALTER TABLE trading_accounts RENAME COLUMN fees_paid__units TO fees_paid;

ALTER TABLE orders ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE orders SET quantity__units = (SELECT units FROM decimal_units WHERE text = orders.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE orders DROP COLUMN quantity;
ALTER TABLE orders RENAME COLUMN quantity__units TO quantity;
ALTER TABLE orders ADD COLUMN filled_quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE orders SET filled_quantity__units = (SELECT units FROM decimal_units WHERE text = orders.filled_quantity) WHERE filled_quantity IS NOT NULL;
ALTER TABLE orders DROP COLUMN filled_quantity;
ALTER TABLE orders RENAME COLUMN filled_quantity__units TO filled_quantity;
ALTER TABLE orders ADD COLUMN stop_loss__units INTEGER;
UPDATE orders SET stop_loss__units = (SELECT units FROM decimal_units WHERE text = orders.stop_loss) WHERE stop_loss IS NOT NULL;
ALTER TABLE orders DROP COLUMN stop_loss;
ALTER TABLE orders RENAME COLUMN stop_loss__units TO stop_loss;
ALTER TABLE orders ADD COLUMN take_profit__units INTEGER;
UPDATE orders SET take_profit__units = (SELECT units FROM decimal_units WHERE text = orders.take_profit) WHERE take_profit IS NOT NULL;
ALTER TABLE orders DROP COLUMN take_profit;
ALTER TABLE orders RENAME COLUMN take_profit__units TO take_profit;
ALTER TABLE orders ADD COLUMN limit_price__units INTEGER;
UPDATE orders SET limit_price__units = (SELECT units FROM decimal_units WHERE text = orders.limit_price) WHERE limit_price IS NOT NULL;
ALTER TABLE orders DROP COLUMN limit_price;
ALTER TABLE orders RENAME COLUMN limit_price__units TO limit_price;
ALTER TABLE orders ADD COLUMN trail_pct__units INTEGER;
UPDATE orders SET trail_pct__units = (SELECT units FROM decimal_units WHERE text = orders.trail_pct) WHERE trail_pct IS NOT NULL;
ALTER TABLE orders DROP COLUMN trail_pct;
ALTER TABLE orders RENAME COLUMN trail_pct__units TO trail_pct;

ALTER TABLE positions ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE positions SET quantity__units = (SELECT units FROM decimal_units WHERE text = positions.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE positions DROP COLUMN quantity;
ALTER TABLE positions RENAME COLUMN quantity__units TO quantity;
ALTER TABLE positions ADD COLUMN entry_price__units INTEGER NOT NULL DEFAULT 0;
UPDATE positions SET entry_price__units = (SELECT units FROM decimal_units WHERE text = positions.entry_price) WHERE entry_price IS NOT NULL;
ALTER TABLE positions DROP COLUMN entry_price;
ALTER TABLE positions RENAME COLUMN entry_price__units TO entry_price;
ALTER TABLE positions ADD COLUMN entry_fees__units INTEGER NOT NULL DEFAULT 0;
UPDATE positions SET entry_fees__units = (SELECT units FROM decimal_units WHERE text = positions.entry_fees) WHERE entry_fees IS NOT NULL;
ALTER TABLE positions DROP COLUMN entry_fees;
ALTER TABLE positions RENAME COLUMN entry_fees__units TO entry_fees;
ALTER TABLE positions ADD COLUMN extreme_price__units INTEGER NOT NULL DEFAULT 0;
UPDATE positions SET extreme_price__units = (SELECT units FROM decimal_units WHERE text = positions.extreme_price) WHERE extreme_price IS NOT NULL;
ALTER TABLE positions DROP COLUMN extreme_price;
ALTER TABLE positions RENAME COLUMN extreme_price__units TO extreme_price;
ALTER TABLE positions ADD COLUMN current_price__units INTEGER NOT NULL DEFAULT 0;
UPDATE positions SET current_price__units = (SELECT units FROM decimal_units WHERE text = positions.current_price) WHERE current_price IS NOT NULL;
ALTER TABLE positions DROP COLUMN current_price;
ALTER TABLE positions RENAME COLUMN current_price__units TO current_price;
ALTER TABLE positions ADD COLUMN stop_loss__units INTEGER;
UPDATE positions SET stop_loss__units = (SELECT units FROM decimal_units WHERE text = positions.stop_loss) WHERE stop_loss IS NOT NULL;
ALTER TABLE positions DROP COLUMN stop_loss;
ALTER TABLE positions RENAME COLUMN stop_loss__units TO stop_loss;
ALTER TABLE positions ADD COLUMN take_profit__units INTEGER;
UPDATE positions SET take_profit__units = (SELECT units FROM decimal_units WHERE text = positions.take_profit) WHERE take_profit IS NOT NULL;
ALTER TABLE positions DROP COLUMN take_profit;
ALTER TABLE positions RENAME COLUMN take_profit__units TO take_profit;
ALTER TABLE positions ADD COLUMN trail_pct__units INTEGER;
UPDATE positions SET trail_pct__units = (SELECT units FROM decimal_units WHERE text = positions.trail_pct) WHERE trail_pct IS NOT NULL;
ALTER TABLE positions DROP COLUMN trail_pct;
ALTER TABLE positions RENAME COLUMN trail_pct__units TO trail_pct;
ALTER TABLE positions ADD COLUMN cost__units INTEGER;
UPDATE positions SET cost__units = (SELECT units FROM decimal_units WHERE text = positions.cost) WHERE cost IS NOT NULL;
ALTER TABLE positions DROP COLUMN cost;
ALTER TABLE positions RENAME COLUMN cost__units TO cost;

ALTER TABLE trades ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET quantity__units = (SELECT units FROM decimal_units WHERE text = trades.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE trades DROP COLUMN quantity;
ALTER TABLE trades RENAME COLUMN quantity__units TO quantity;
ALTER TABLE trades ADD COLUMN entry_price__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET entry_price__units = (SELECT units FROM decimal_units WHERE text = trades.entry_price) WHERE entry_price IS NOT NULL;
ALTER TABLE trades DROP COLUMN entry_price;
ALTER TABLE trades RENAME COLUMN entry_price__units TO entry_price;
ALTER TABLE trades ADD COLUMN exit_price__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET exit_price__units = (SELECT units FROM decimal_units WHERE text = trades.exit_price) WHERE exit_price IS NOT NULL;
ALTER TABLE trades DROP COLUMN exit_price;
ALTER TABLE trades RENAME COLUMN exit_price__units TO exit_price;
ALTER TABLE trades ADD COLUMN size_usd__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET size_usd__units = (SELECT units FROM decimal_units WHERE text = trades.size_usd) WHERE size_usd IS NOT NULL;
ALTER TABLE trades DROP COLUMN size_usd;
ALTER TABLE trades RENAME COLUMN size_usd__units TO size_usd;
ALTER TABLE trades ADD COLUMN gross_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET gross_pnl__units = (SELECT units FROM decimal_units WHERE text = trades.gross_pnl) WHERE gross_pnl IS NOT NULL;
ALTER TABLE trades DROP COLUMN gross_pnl;
ALTER TABLE trades RENAME COLUMN gross_pnl__units TO gross_pnl;
ALTER TABLE trades ADD COLUMN fees__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET fees__units = (SELECT units FROM decimal_units WHERE text = trades.fees) WHERE fees IS NOT NULL;
ALTER TABLE trades DROP COLUMN fees;
ALTER TABLE trades RENAME COLUMN fees__units TO fees;
ALTER TABLE trades ADD COLUMN net_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET net_pnl__units = (SELECT units FROM decimal_units WHERE text = trades.net_pnl) WHERE net_pnl IS NOT NULL;
ALTER TABLE trades DROP COLUMN net_pnl;
ALTER TABLE trades RENAME COLUMN net_pnl__units TO net_pnl;
ALTER TABLE trades ADD COLUMN pnl_pct__units INTEGER NOT NULL DEFAULT 0;
UPDATE trades SET pnl_pct__units = (SELECT units FROM decimal_units WHERE text = trades.pnl_pct) WHERE pnl_pct IS NOT NULL;
ALTER TABLE trades DROP COLUMN pnl_pct;
ALTER TABLE trades RENAME COLUMN pnl_pct__units TO pnl_pct;
ALTER TABLE trades ADD COLUMN entry_fee__units INTEGER;
UPDATE trades SET entry_fee__units = (SELECT units FROM decimal_units WHERE text = trades.entry_fee) WHERE entry_fee IS NOT NULL;
ALTER TABLE trades DROP COLUMN entry_fee;
ALTER TABLE trades RENAME COLUMN entry_fee__units TO entry_fee;

ALTER TABLE ledger ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET quantity__units = (SELECT units FROM decimal_units WHERE text = ledger.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE ledger DROP COLUMN quantity;
ALTER TABLE ledger RENAME COLUMN quantity__units TO quantity;
ALTER TABLE ledger ADD COLUMN price__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET price__units = (SELECT units FROM decimal_units WHERE text = ledger.price) WHERE price IS NOT NULL;
ALTER TABLE ledger DROP COLUMN price;
ALTER TABLE ledger RENAME COLUMN price__units TO price;
ALTER TABLE ledger ADD COLUMN notional__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET notional__units = (SELECT units FROM decimal_units WHERE text = ledger.notional) WHERE notional IS NOT NULL;
ALTER TABLE ledger DROP COLUMN notional;
ALTER TABLE ledger RENAME COLUMN notional__units TO notional;
ALTER TABLE ledger ADD COLUMN fee__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET fee__units = (SELECT units FROM decimal_units WHERE text = ledger.fee) WHERE fee IS NOT NULL;
ALTER TABLE ledger DROP COLUMN fee;
ALTER TABLE ledger RENAME COLUMN fee__units TO fee;
ALTER TABLE ledger ADD COLUMN realized_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET realized_pnl__units = (SELECT units FROM decimal_units WHERE text = ledger.realized_pnl) WHERE realized_pnl IS NOT NULL;
ALTER TABLE ledger DROP COLUMN realized_pnl;
ALTER TABLE ledger RENAME COLUMN realized_pnl__units TO realized_pnl;
ALTER TABLE ledger ADD COLUMN cash_after__units INTEGER NOT NULL DEFAULT 0;
UPDATE ledger SET cash_after__units = (SELECT units FROM decimal_units WHERE text = ledger.cash_after) WHERE cash_after IS NOT NULL;
ALTER TABLE ledger DROP COLUMN cash_after;
ALTER TABLE ledger RENAME COLUMN cash_after__units TO cash_after;
ALTER TABLE ledger ADD COLUMN entry_fee__units INTEGER;
UPDATE ledger SET entry_fee__units = (SELECT units FROM decimal_units WHERE text = ledger.entry_fee) WHERE entry_fee IS NOT NULL;
ALTER TABLE ledger DROP COLUMN entry_fee;
ALTER TABLE ledger RENAME COLUMN entry_fee__units TO entry_fee;

ALTER TABLE fills ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE fills SET quantity__units = (SELECT units FROM decimal_units WHERE text = fills.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE fills DROP COLUMN quantity;
ALTER TABLE fills RENAME COLUMN quantity__units TO quantity;
ALTER TABLE fills ADD COLUMN price__units INTEGER NOT NULL DEFAULT 0;
UPDATE fills SET price__units = (SELECT units FROM decimal_units WHERE text = fills.price) WHERE price IS NOT NULL;
ALTER TABLE fills DROP COLUMN price;
ALTER TABLE fills RENAME COLUMN price__units TO price;
ALTER TABLE fills ADD COLUMN fee__units INTEGER NOT NULL DEFAULT 0;
UPDATE fills SET fee__units = (SELECT units FROM decimal_units WHERE text = fills.fee) WHERE fee IS NOT NULL;
ALTER TABLE fills DROP COLUMN fee;
ALTER TABLE fills RENAME COLUMN fee__units TO fee;

ALTER TABLE equity_snapshots ADD COLUMN equity__units INTEGER NOT NULL DEFAULT 0;
UPDATE equity_snapshots SET equity__units = (SELECT units FROM decimal_units WHERE text = equity_snapshots.equity) WHERE equity IS NOT NULL;
ALTER TABLE equity_snapshots DROP COLUMN equity;
ALTER TABLE equity_snapshots RENAME COLUMN equity__units TO equity;
ALTER TABLE equity_snapshots ADD COLUMN cash__units INTEGER NOT NULL DEFAULT 0;
UPDATE equity_snapshots SET cash__units = (SELECT units FROM decimal_units WHERE text = equity_snapshots.cash) WHERE cash IS NOT NULL;
ALTER TABLE equity_snapshots DROP COLUMN cash;
ALTER TABLE equity_snapshots RENAME COLUMN cash__units TO cash;
ALTER TABLE equity_snapshots ADD COLUMN unrealized_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE equity_snapshots SET unrealized_pnl__units = (SELECT units FROM decimal_units WHERE text = equity_snapshots.unrealized_pnl) WHERE unrealized_pnl IS NOT NULL;
ALTER TABLE equity_snapshots DROP COLUMN unrealized_pnl;
ALTER TABLE equity_snapshots RENAME COLUMN unrealized_pnl__units TO unrealized_pnl;

ALTER TABLE venue_baselines ADD COLUMN quantity__units INTEGER NOT NULL DEFAULT 0;
UPDATE venue_baselines SET quantity__units = (SELECT units FROM decimal_units WHERE text = venue_baselines.quantity) WHERE quantity IS NOT NULL;
ALTER TABLE venue_baselines DROP COLUMN quantity;
ALTER TABLE venue_baselines RENAME COLUMN quantity__units TO quantity;

ALTER TABLE signals ADD COLUMN size_usd__units INTEGER;
UPDATE signals SET size_usd__units = (SELECT units FROM decimal_units WHERE text = signals.size_usd) WHERE size_usd IS NOT NULL;
ALTER TABLE signals DROP COLUMN size_usd;
ALTER TABLE signals RENAME COLUMN size_usd__units TO size_usd;
ALTER TABLE signals ADD COLUMN limit_price__units INTEGER;
UPDATE signals SET limit_price__units = (SELECT units FROM decimal_units WHERE text = signals.limit_price) WHERE limit_price IS NOT NULL;
ALTER TABLE signals DROP COLUMN limit_price;
ALTER TABLE signals RENAME COLUMN limit_price__units TO limit_price;

ALTER TABLE subscriptions ADD COLUMN amount__units INTEGER NOT NULL DEFAULT 0;
UPDATE subscriptions SET amount__units = (SELECT units FROM decimal_units WHERE text = subscriptions.amount) WHERE amount IS NOT NULL;
ALTER TABLE subscriptions DROP COLUMN amount;
ALTER TABLE subscriptions RENAME COLUMN amount__units TO amount;

ALTER TABLE payments ADD COLUMN amount__units INTEGER NOT NULL DEFAULT 0;
UPDATE payments SET amount__units = (SELECT units FROM decimal_units WHERE text = payments.amount) WHERE amount IS NOT NULL;
ALTER TABLE payments DROP COLUMN amount;
ALTER TABLE payments RENAME COLUMN amount__units TO amount;

ALTER TABLE account_totals ADD COLUMN net_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_totals SET net_pnl__units = (SELECT units FROM decimal_units WHERE text = account_totals.net_pnl) WHERE net_pnl IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN net_pnl;
ALTER TABLE account_totals RENAME COLUMN net_pnl__units TO net_pnl;
ALTER TABLE account_totals ADD COLUMN profit__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_totals SET profit__units = (SELECT units FROM decimal_units WHERE text = account_totals.profit) WHERE profit IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN profit;
ALTER TABLE account_totals RENAME COLUMN profit__units TO profit;
ALTER TABLE account_totals ADD COLUMN loss__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_totals SET loss__units = (SELECT units FROM decimal_units WHERE text = account_totals.loss) WHERE loss IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN loss;
ALTER TABLE account_totals RENAME COLUMN loss__units TO loss;
ALTER TABLE account_totals ADD COLUMN fees__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_totals SET fees__units = (SELECT units FROM decimal_units WHERE text = account_totals.fees) WHERE fees IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN fees;
ALTER TABLE account_totals RENAME COLUMN fees__units TO fees;
ALTER TABLE account_totals ADD COLUMN volume__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_totals SET volume__units = (SELECT units FROM decimal_units WHERE text = account_totals.volume) WHERE volume IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN volume;
ALTER TABLE account_totals RENAME COLUMN volume__units TO volume;
ALTER TABLE account_totals ADD COLUMN best_trade__units INTEGER;
UPDATE account_totals SET best_trade__units = (SELECT units FROM decimal_units WHERE text = account_totals.best_trade) WHERE best_trade IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN best_trade;
ALTER TABLE account_totals RENAME COLUMN best_trade__units TO best_trade;
ALTER TABLE account_totals ADD COLUMN worst_trade__units INTEGER;
UPDATE account_totals SET worst_trade__units = (SELECT units FROM decimal_units WHERE text = account_totals.worst_trade) WHERE worst_trade IS NOT NULL;
ALTER TABLE account_totals DROP COLUMN worst_trade;
ALTER TABLE account_totals RENAME COLUMN worst_trade__units TO worst_trade;

ALTER TABLE account_day_totals ADD COLUMN net_pnl__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_day_totals SET net_pnl__units = (SELECT units FROM decimal_units WHERE text = account_day_totals.net_pnl) WHERE net_pnl IS NOT NULL;
ALTER TABLE account_day_totals DROP COLUMN net_pnl;
ALTER TABLE account_day_totals RENAME COLUMN net_pnl__units TO net_pnl;
ALTER TABLE account_day_totals ADD COLUMN size_usd__units INTEGER NOT NULL DEFAULT 0;
UPDATE account_day_totals SET size_usd__units = (SELECT units FROM decimal_units WHERE text = account_day_totals.size_usd) WHERE size_usd IS NOT NULL;
ALTER TABLE account_day_totals DROP COLUMN size_usd;
ALTER TABLE account_day_totals RENAME COLUMN size_usd__units TO size_usd;

DROP TABLE decimal_units;
