-- Files written by POST /analytics/export. The download token is kept as a SHA-256 hash.
CREATE TABLE exports (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    file_name  TEXT NOT NULL,
    format     TEXT NOT NULL,
    data_type  TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
