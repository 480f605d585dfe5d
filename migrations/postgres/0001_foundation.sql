-- Foundation schema: users, sessions and refresh tokens, password resets, mail outbox, audit log.
-- Timestamps are Unix epoch milliseconds (BIGINT) on both backends; ids are UUID strings.

CREATE TABLE users (
    id               TEXT PRIMARY KEY,
    email            TEXT NOT NULL,
    email_lower      TEXT NOT NULL UNIQUE,
    full_name        TEXT NOT NULL,
    password_hash    TEXT NOT NULL,
    role             TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'disabled')),
    subscription_tier TEXT NOT NULL DEFAULT 'free' CHECK (subscription_tier IN ('free', 'basic', 'pro', 'enterprise')),
    trial_ends_at    BIGINT,
    notes            TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    last_active_at   BIGINT
);

-- A session is one login; its refresh tokens rotate within it. Revoking it ends every token of it.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    last_used_at  BIGINT NOT NULL,
    revoked_at    BIGINT,
    revoke_reason TEXT,
    ip_address    TEXT,
    user_agent    TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);

-- Only SHA-256 hashes of refresh tokens are stored. A used token is kept so reuse can be detected.
CREATE TABLE refresh_tokens (
    token_hash  TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id);

CREATE TABLE password_reset_tokens (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE INDEX password_reset_tokens_user ON password_reset_tokens(user_id);

-- Every mail is written here first, in the transaction that causes it, then delivered.
CREATE TABLE mail_outbox (
    id          TEXT PRIMARY KEY,
    to_address  TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'logged', 'failed')),
    attempts    BIGINT NOT NULL DEFAULT 0,
    last_error  TEXT,
    created_at  BIGINT NOT NULL,
    sent_at     BIGINT
);
CREATE INDEX mail_outbox_pending ON mail_outbox(status, created_at);

CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    event_type  TEXT NOT NULL,
    user_id     TEXT,
    ip_address  TEXT,
    user_agent  TEXT,
    metadata    TEXT NOT NULL DEFAULT '{}',
    created_at  BIGINT NOT NULL
);
CREATE INDEX audit_log_created ON audit_log(created_at);
CREATE INDEX audit_log_user ON audit_log(user_id, created_at);
CREATE INDEX audit_log_event ON audit_log(event_type, created_at);
