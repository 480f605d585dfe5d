-- Uploaded plugin binaries live in the database, so every instance sharing it can load a version
-- uploaded through another. Versions uploaded before this keep their file under the uploading
-- instance's data directory; that instance copies them in when it next starts.
ALTER TABLE plugin_versions ADD COLUMN wasm BLOB;
