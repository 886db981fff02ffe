-- The tables Citus holds as reference tables keep their foreign keys, but
-- none cascades: the code deletes a source's, a destination's and an
-- audience's rows itself, children first, in the deleting transaction (the
-- same code on one Postgres), so a delete on a reference table never
-- reaches into other tables behind the statement's back.
ALTER TABLE destination_sources
  DROP CONSTRAINT destination_sources_source_id_fkey,
  ADD CONSTRAINT destination_sources_source_id_fkey FOREIGN KEY (source_id) REFERENCES sources (id),
  DROP CONSTRAINT destination_sources_destination_id_fkey,
  ADD CONSTRAINT destination_sources_destination_id_fkey FOREIGN KEY (destination_id) REFERENCES destinations (id);
ALTER TABLE audiences
  DROP CONSTRAINT audiences_source_id_fkey,
  ADD CONSTRAINT audiences_source_id_fkey FOREIGN KEY (source_id) REFERENCES sources (id);
ALTER TABLE audience_members
  DROP CONSTRAINT audience_members_audience_id_fkey,
  ADD CONSTRAINT audience_members_audience_id_fkey FOREIGN KEY (audience_id) REFERENCES audiences (id);
ALTER TABLE tracking_plans
  DROP CONSTRAINT tracking_plans_source_id_fkey,
  ADD CONSTRAINT tracking_plans_source_id_fkey FOREIGN KEY (source_id) REFERENCES sources (id);
