-- One owner per user's trading state across instances. The instance holding a user's lease scans
-- their bot and follows up their orders; it renews the lease while it lives, and another takes it
-- over once it has expired. `token` grows on every claim and is never reset (a released lease
-- keeps its row), so a write carrying an older token is recognised as coming from an instance
-- that lost the lease: the books' writer refuses it in the same transaction.
CREATE TABLE bot_leases (
    user_id    TEXT PRIMARY KEY,
    instance   TEXT NOT NULL,
    token      BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX bot_leases_instance ON bot_leases (instance);

-- The instances alive, each seen at its last heartbeat: how many share the bots.
CREATE TABLE cluster_instances (
    instance TEXT PRIMARY KEY,
    seen_at  BIGINT NOT NULL
);
