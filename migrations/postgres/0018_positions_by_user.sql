-- A user's positions by when they closed: the usage report's peak of positions held at once
-- reads only those that were open within its period.
CREATE INDEX positions_by_user_closed ON positions (user_id, closed_at);
