-- The operator's view of active alarms across users reads only those still active.
CREATE INDEX alarms_active ON alarms (raised_at) WHERE status = 'active';
