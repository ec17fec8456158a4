-- The config file a reload was made with (its SHA-256, hex): a replica whose
-- own copy differs when it follows the new version (a Kubernetes ConfigMap
-- reaches each pod in its own time) keeps watching its copy until it matches.
alter table config_settings add column file_hash text;
