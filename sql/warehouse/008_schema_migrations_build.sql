-- The build (package.json version) that applied each migration, named when a build meets a
-- warehouse that a newer build migrated (docs/contracts.md "Warehouse tables").
-- Null for the migrations applied before this one was.
alter table etl.schema_migrations add column if not exists build varchar;
