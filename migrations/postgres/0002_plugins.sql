-- Uploaded plugin versions (built-in ones ship inside the binary) and each plugin's operator
-- settings: the active version, the one before it (for rollback) and its configuration.

CREATE TABLE plugin_versions (
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    manifest    TEXT NOT NULL,
    file_name   TEXT NOT NULL,
    uploaded_by TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE plugin_settings (
    name             TEXT PRIMARY KEY,
    active_version   TEXT NOT NULL,
    previous_version TEXT,
    config           TEXT NOT NULL DEFAULT '{}',
    updated_at       BIGINT NOT NULL
);
