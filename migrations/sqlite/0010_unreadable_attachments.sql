-- Issue 20: a document whose text could not be read (damaged, or a hostile file
-- that killed its reader) is still stored with its message; this says why, for
-- the model and the person. Null for images and for documents that were read.
alter table attachments add column unreadable text;
