-- An export's bytes are kept with its row, so its download link works on any instance sharing
-- the database. Exports an earlier release wrote to the data directory have no body here and are
-- read from there.
ALTER TABLE exports ADD COLUMN body BLOB;
