-- Per-user storage quotas (issue 20, `limits.storage_bytes_per_user`): a send
-- with files sums the distinct files its user has attached, and `GET /v1/me`
-- reports it; this index keeps that to the user's own rows.
create index attachments_user on attachments(user_id, sha256);
