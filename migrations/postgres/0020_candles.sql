-- Historical candles for backtests, in blocks: one row holds up to 1,024 consecutive interval
-- slots of one series (source, symbol, interval), encoded by `candles::block` (42 bytes a
-- candle), so a million candles take about a thousand rows and 42 MB.
CREATE TABLE candle_blocks (
    source TEXT NOT NULL,
    symbol TEXT NOT NULL,
    bar_interval TEXT NOT NULL,
    block_start BIGINT NOT NULL,
    first_ms BIGINT NOT NULL,
    last_ms BIGINT NOT NULL,
    candle_count BIGINT NOT NULL,
    data BYTEA NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (source, symbol, bar_interval, block_start)
);
