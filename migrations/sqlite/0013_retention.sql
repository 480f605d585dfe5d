-- Retention and platform metrics read ranges by time: each such read has an index, so neither
-- scans a table whose size grows with history.

-- Retention: expired credentials, ended sessions, finished notifications.
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);
CREATE INDEX password_reset_tokens_expiry ON password_reset_tokens (expires_at);
CREATE INDEX sessions_expiry ON sessions (expires_at);
CREATE INDEX sessions_revoked ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX notification_events_dispatched ON notification_events (dispatched_at) WHERE dispatched_at IS NOT NULL;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
CREATE INDEX performance_snapshots_tracker ON performance_snapshots (taken_at) WHERE source = 'tracker';
CREATE INDEX equity_snapshots_at ON equity_snapshots (at);

-- Platform metrics: trades and volume of the last 24 hours, users active in a window.
CREATE INDEX trades_closed ON trades (closed_at);
CREATE INDEX ledger_created ON ledger (created_at);
CREATE INDEX users_last_active ON users (last_active_at);
