-- Each entry, position and completed trade names the strategy that opened it, so figures can be
-- given per strategy (the investor summary's strategy_performance).
ALTER TABLE orders ADD COLUMN strategy TEXT;
ALTER TABLE positions ADD COLUMN strategy TEXT;
ALTER TABLE trades ADD COLUMN strategy TEXT;

-- What existed before: an entry from an inbound signal belongs to the signal's strategy (or
-- 'webhook'), any other entry to the bot's strategy; a position to its opening order's; a trade
-- to its position's.
UPDATE orders SET strategy = COALESCE(
    (SELECT COALESCE(NULLIF(signals.strategy, ''), 'webhook') FROM signals WHERE signals.id = orders.signal_id),
    (SELECT bots.strategy FROM bots WHERE bots.user_id = orders.user_id))
WHERE intent <> 'close';
UPDATE positions SET strategy = COALESCE(
    (SELECT orders.strategy FROM orders
      WHERE orders.position_id = positions.id AND orders.intent <> 'close'
      ORDER BY orders.created_at, orders.id LIMIT 1),
    (SELECT bots.strategy FROM bots WHERE bots.user_id = positions.user_id));
UPDATE trades SET strategy = COALESCE(
    (SELECT positions.strategy FROM positions WHERE positions.id = trades.position_id),
    (SELECT bots.strategy FROM bots WHERE bots.user_id = trades.user_id));
CREATE INDEX trades_by_user_strategy ON trades (user_id, strategy);
