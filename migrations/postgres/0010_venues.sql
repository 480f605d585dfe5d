-- Live venues. Reconciliation compares holdings per asset (a spot venue holds BTC, not BTC-USD):
-- baselines recorded per pair are dropped and recorded again, per asset, at the next check.
DELETE FROM venue_baselines;

-- An inbound signal may ask for a limit entry at this price (decimal text); NULL: market.
ALTER TABLE signals ADD COLUMN limit_price TEXT;
