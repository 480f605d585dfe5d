-- Per-user settings: only what the user changed, as a JSON object; defaults (some depend on the
-- subscription tier) are filled in when read.
CREATE TABLE user_settings (
    user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    settings   TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
