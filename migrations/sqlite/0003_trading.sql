-- Trading: broker connections (secrets sealed by the vault), bots, the paper or sandbox account,
-- orders, positions, completed trades, the ledger, equity snapshots, alarms and platform flags.
-- Money and quantities are exact decimals written as TEXT (rust_decimal); statistics are doubles.

CREATE TABLE broker_connections (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    display_name      TEXT NOT NULL,
    status            TEXT NOT NULL,
    api_key_sealed    TEXT NOT NULL,
    api_secret_sealed TEXT NOT NULL,
    api_key_masked    TEXT NOT NULL,
    params_sealed     TEXT NOT NULL,
    permissions       TEXT NOT NULL,
    last_connected_at BIGINT,
    created_at        BIGINT NOT NULL,
    UNIQUE (user_id, name)
);

CREATE TABLE trading_accounts (
    user_id         TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    currency        TEXT NOT NULL,
    initial_capital TEXT NOT NULL,
    cash            TEXT NOT NULL,
    realized_pnl    TEXT NOT NULL,
    fees_paid       TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE TABLE bots (
    user_id        TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    id             TEXT NOT NULL UNIQUE,
    status         TEXT NOT NULL,
    broker         TEXT NOT NULL,
    paper_trading  BIGINT NOT NULL,
    risk_profile   TEXT NOT NULL,
    strategy       TEXT NOT NULL,
    symbols        TEXT NOT NULL,
    started_at     BIGINT,
    last_scan_at   BIGINT,
    scan_seq       BIGINT NOT NULL DEFAULT 0,
    strategy_state TEXT NOT NULL DEFAULT '',
    last_error     TEXT,
    updated_at     BIGINT NOT NULL
);

CREATE TABLE orders (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_order_id TEXT NOT NULL UNIQUE,
    broker          TEXT NOT NULL,
    symbol          TEXT NOT NULL,
    side            TEXT NOT NULL,
    intent          TEXT NOT NULL,
    quantity        TEXT NOT NULL,
    position_id     TEXT,
    stop_loss       TEXT,
    take_profit     TEXT,
    exit_reason     TEXT,
    status          TEXT NOT NULL,
    broker_order_id TEXT,
    error           TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX orders_pending ON orders (user_id, status);

CREATE TABLE positions (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    broker        TEXT NOT NULL,
    symbol        TEXT NOT NULL,
    side          TEXT NOT NULL,
    quantity      TEXT NOT NULL,
    entry_price   TEXT NOT NULL,
    entry_fees    TEXT NOT NULL,
    stop_loss     TEXT,
    take_profit   TEXT,
    trail_pct     TEXT,
    extreme_price TEXT NOT NULL,
    current_price TEXT NOT NULL,
    status        TEXT NOT NULL,
    opened_at     BIGINT NOT NULL,
    closed_at     BIGINT,
    updated_at    BIGINT NOT NULL
);
CREATE UNIQUE INDEX positions_one_open_per_symbol ON positions (user_id, symbol) WHERE status = 'open';

CREATE TABLE trades (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    position_id      TEXT NOT NULL,
    broker           TEXT NOT NULL,
    symbol           TEXT NOT NULL,
    side             TEXT NOT NULL,
    quantity         TEXT NOT NULL,
    entry_price      TEXT NOT NULL,
    exit_price       TEXT NOT NULL,
    size_usd         TEXT NOT NULL,
    gross_pnl        TEXT NOT NULL,
    fees             TEXT NOT NULL,
    net_pnl          TEXT NOT NULL,
    pnl_pct          TEXT NOT NULL,
    exit_reason      TEXT NOT NULL,
    opened_at        BIGINT NOT NULL,
    closed_at        BIGINT NOT NULL,
    duration_minutes BIGINT NOT NULL
);
CREATE INDEX trades_by_user ON trades (user_id, closed_at);

CREATE TABLE ledger (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    order_id     TEXT NOT NULL,
    position_id  TEXT NOT NULL,
    broker       TEXT NOT NULL,
    symbol       TEXT NOT NULL,
    side         TEXT NOT NULL,
    action       TEXT NOT NULL,
    quantity     TEXT NOT NULL,
    price        TEXT NOT NULL,
    notional     TEXT NOT NULL,
    fee          TEXT NOT NULL,
    realized_pnl TEXT NOT NULL,
    cash_after   TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX ledger_by_user ON ledger (user_id, created_at);

CREATE TABLE equity_snapshots (
    user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    at             BIGINT NOT NULL,
    equity         TEXT NOT NULL,
    cash           TEXT NOT NULL,
    unrealized_pnl TEXT NOT NULL,
    PRIMARY KEY (user_id, at)
);

CREATE TABLE alarms (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    alarm_type         TEXT NOT NULL,
    level              TEXT NOT NULL,
    message            TEXT NOT NULL,
    current_value      REAL NOT NULL,
    threshold_value    REAL NOT NULL,
    recommended_action TEXT NOT NULL,
    status             TEXT NOT NULL,
    raised_at          BIGINT NOT NULL,
    cleared_at         BIGINT
);
CREATE INDEX alarms_by_user ON alarms (user_id, raised_at);

-- Platform-wide switches (the kill switch), shared by every instance through the database.
CREATE TABLE platform_flags (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_by TEXT,
    updated_at BIGINT NOT NULL
);
