-- Notifications: what happened that a user may be told of, the webhooks they are told through,
-- the secret their webhooks are signed with, and each delivery's progress.

-- A mail that carries a secret is held, not logged, when no SMTP server is configured.
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_status_check;
ALTER TABLE mail_outbox ADD CONSTRAINT mail_outbox_status_check
    CHECK (status IN ('pending', 'sent', 'logged', 'held', 'failed'));

-- Written in the transaction that makes the thing happen (a fill booked, an alarm raised), then
-- turned into mail and webhook deliveries by the dispatcher, which marks it dispatched in the
-- transaction that queues them. user_id NULL: meant for every user (the kill switch).
CREATE TABLE notification_events (
    id            TEXT PRIMARY KEY,
    user_id       TEXT REFERENCES users(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    dispatched_at BIGINT
);
CREATE INDEX notification_events_undispatched ON notification_events (created_at) WHERE dispatched_at IS NULL;

-- The URL is sealed with the vault: Discord, Slack and Telegram URLs carry a token.
CREATE TABLE notification_webhooks (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    url_sealed  TEXT NOT NULL,
    url_display TEXT NOT NULL,
    format      TEXT NOT NULL,
    events      TEXT NOT NULL,
    chat_id     TEXT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX notification_webhooks_by_user ON notification_webhooks (user_id);

-- Each user's signing secret (sealed), shown to them when it is made.
CREATE TABLE notification_secrets (
    user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- One row per event per webhook: the event's JSON, formatted and signed at each attempt.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES notification_webhooks(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    kind            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_status     BIGINT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
