-- Billing: each user's current paid subscription, the payments recorded for it (charges and
-- refunds), the payment-provider events already processed (each is acted on once), and API calls
-- counted per user and UTC day for the usage figures.
CREATE TABLE subscriptions (
    id                   TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    tier                 TEXT NOT NULL,
    billing_interval     TEXT NOT NULL,
    status               TEXT NOT NULL,
    current_period_start BIGINT NOT NULL,
    current_period_end   BIGINT NOT NULL,
    cancel_at_period_end BIGINT NOT NULL DEFAULT 0,
    amount               TEXT NOT NULL,
    currency             TEXT NOT NULL,
    payment_method       TEXT,
    customer_id          TEXT NOT NULL UNIQUE,
    cancelled_at         BIGINT,
    cancel_reason        TEXT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL
);

CREATE TABLE payments (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    subscription_id    TEXT NOT NULL,
    kind               TEXT NOT NULL,
    amount             TEXT NOT NULL,
    currency           TEXT NOT NULL,
    provider           TEXT NOT NULL,
    provider_reference TEXT NOT NULL,
    description        TEXT NOT NULL,
    created_at         BIGINT NOT NULL
);
CREATE INDEX payments_by_user ON payments (user_id, created_at);

CREATE TABLE payment_events (
    event_id    TEXT PRIMARY KEY,
    event_type  TEXT NOT NULL,
    handled     BIGINT NOT NULL,
    user_id     TEXT,
    received_at BIGINT NOT NULL
);

CREATE TABLE api_usage (
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    day     BIGINT NOT NULL,
    calls   BIGINT NOT NULL,
    PRIMARY KEY (user_id, day)
);
