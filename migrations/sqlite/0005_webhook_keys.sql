-- Per-user keys for inbound trading signals. Only a SHA-256 of the key is kept; the key itself
-- is shown once, when it is created or rotated.
CREATE TABLE webhook_keys (
    user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    key_hash   TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);
