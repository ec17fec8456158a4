-- Who may use an agent (issue 20): JSON arrays of usernames and of roles
-- (`admin`, `user`); both empty = everyone, as before.
alter table agents add column allowed_users text not null default '[]';
alter table agents add column allowed_roles text not null default '[]';
