-- Execution for live venues: orders as a state machine with their fills as rows, positions that
-- follow the fills and keep closing until they are closed, what the venue held before tradehost
-- traded there, the discrepancies reconciliation finds, durable inbound signals, the broker
-- plugins' own stores, and payments written before the provider is called.

-- Order states: new (written; sent or not: a crash leaves this), submitted (working at the venue),
-- partially_filled, filled, cancelled, rejected, expired, unknown (sent, outcome not known).
UPDATE orders SET status = 'new' WHERE status = 'pending';
UPDATE orders SET status = 'expired' WHERE status = 'failed';
ALTER TABLE orders ADD COLUMN kind TEXT NOT NULL DEFAULT 'market';
ALTER TABLE orders ADD COLUMN limit_price TEXT;
ALTER TABLE orders ADD COLUMN trail_pct TEXT;
ALTER TABLE orders ADD COLUMN filled_quantity TEXT NOT NULL DEFAULT '0';
-- The completed trade a closing order books (named before it fills).
ALTER TABLE orders ADD COLUMN trade_id TEXT;
-- Which attempt at closing its position a closing order is (1 for opening orders).
ALTER TABLE orders ADD COLUMN attempt BIGINT NOT NULL DEFAULT 1;
ALTER TABLE orders ADD COLUMN signal_id TEXT;
-- When reconciliation next asks the venue about a live order, and how often it has.
ALTER TABLE orders ADD COLUMN next_check_at BIGINT;
ALTER TABLE orders ADD COLUMN checks BIGINT NOT NULL DEFAULT 0;
UPDATE orders SET filled_quantity = quantity WHERE status = 'filled';
CREATE INDEX orders_live ON orders (status, next_check_at);

-- One row per execution; a fill the venue reports twice is booked once.
CREATE TABLE fills (
    id             TEXT PRIMARY KEY,
    order_id       TEXT NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    venue_trade_id TEXT NOT NULL,
    quantity       TEXT NOT NULL,
    price          TEXT NOT NULL,
    fee            TEXT NOT NULL,
    filled_at      BIGINT NOT NULL,
    booked_at      BIGINT NOT NULL,
    UNIQUE (order_id, venue_trade_id)
);
CREATE INDEX fills_by_user ON fills (user_id, filled_at);
-- Fills booked before fills were rows: one per ledger row, which was one per order.
INSERT INTO fills (id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at)
    SELECT ledger.id, ledger.order_id, ledger.user_id, 'booked-' || ledger.id, ledger.quantity,
           ledger.price, ledger.fee, ledger.created_at, ledger.created_at
    FROM ledger JOIN orders ON orders.id = ledger.order_id;
ALTER TABLE ledger ADD COLUMN fill_id TEXT;
-- The share of the position's entry fee a closing row takes (0 on opening rows).
ALTER TABLE ledger ADD COLUMN entry_fee TEXT;
UPDATE ledger SET fill_id = id;

-- The exact entry cost still held (sum of price x quantity of the opening fills, less what
-- closes took); NULL on positions opened before: entry_price x quantity.
ALTER TABLE positions ADD COLUMN cost TEXT;
-- A requested close (and why): retried with backoff until the position is closed.
ALTER TABLE positions ADD COLUMN close_reason TEXT;
ALTER TABLE positions ADD COLUMN close_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE positions ADD COLUMN next_close_at BIGINT;
ALTER TABLE positions ADD COLUMN close_error TEXT;

-- What the venue held of an instrument apart from tradehost's positions: the venue's quantity
-- (signed) is expected to be this plus the open positions' quantities there.
CREATE TABLE venue_baselines (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    broker     TEXT NOT NULL,
    symbol     TEXT NOT NULL,
    quantity   TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, broker, symbol)
);

-- What reconciliation could not explain; the bot places nothing until each is resolved.
CREATE TABLE discrepancies (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    broker      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    symbol      TEXT,
    order_id    TEXT,
    expected    TEXT,
    actual      TEXT,
    detail      TEXT NOT NULL,
    status      TEXT NOT NULL,
    found_at    BIGINT NOT NULL,
    resolved_at BIGINT,
    resolved_by TEXT,
    resolution  TEXT
);
CREATE INDEX discrepancies_by_user ON discrepancies (user_id, status);

-- Inbound webhook signals: written before they are acknowledged, processed once.
CREATE TABLE signals (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    symbol       TEXT NOT NULL,
    action       TEXT NOT NULL,
    size_usd     TEXT,
    strategy     TEXT,
    status       TEXT NOT NULL,
    outcome      TEXT,
    order_id     TEXT,
    received_at  BIGINT NOT NULL,
    processed_at BIGINT
);
CREATE INDEX signals_by_user ON signals (user_id, status, received_at);

-- Broker plugins' stores (a simulated venue's book; a nonce), one per plugin and user.
CREATE TABLE plugin_store (
    plugin     TEXT NOT NULL,
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (plugin, scope, key)
);

-- A payment is written pending under its idempotency key before the provider is called, and
-- settled after; the key makes a period's renewal (or a repeated upgrade) charge once.
ALTER TABLE payments ADD COLUMN status TEXT NOT NULL DEFAULT 'settled';
ALTER TABLE payments ADD COLUMN idempotency_key TEXT;
ALTER TABLE payments ADD COLUMN period_start BIGINT;
ALTER TABLE payments ADD COLUMN settled_at BIGINT;
CREATE UNIQUE INDEX payments_by_idempotency_key ON payments (idempotency_key);
