-- Knowledge bases (issue 25): a team's documents, chunked and indexed for
-- search. A base belongs to its owner; `visibility` 'private' (the owner only)
-- or 'shared' (every user may search it; only the owner and admins change it).
create table knowledge_bases (
    id text primary key,
    name text not null,
    description text not null default '',
    owner_id text not null references users(id) on delete cascade,
    visibility text not null,
    created_at bigint not null,
    updated_at bigint not null
);
create unique index knowledge_bases_owner_name on knowledge_bases(owner_id, name);

-- A document's bytes are a blob (`blobs`, by sha256, swept when nothing names
-- them); the same bytes twice in one base are one document. `status`: 'queued',
-- 'processing', 'ready', 'failed' (with `error`). Its ingestion is the
-- background job ('knowledge.ingest', document id).
create table knowledge_documents (
    id text primary key,
    base_id text not null references knowledge_bases(id) on delete cascade,
    name text not null,
    mime text not null,
    bytes bigint not null,
    sha256 text not null,
    status text not null,
    error text,
    chunks bigint not null default 0,
    created_at bigint not null,
    updated_at bigint not null
);
create unique index knowledge_documents_base_sha on knowledge_documents(base_id, sha256);
create index knowledge_documents_sha on knowledge_documents(sha256);

-- Chunks: `ord` is the place in the document (neighbours are ord ± n),
-- `heading` the heading path, `page` the PDF page; `lexical` the text's words
-- as `weft-knowledge` segments them (space-separated, any script), which the
-- full-text index reads. `seq` is the FTS5 table's row id: an integer primary
-- key keeps its value through VACUUM (a plain rowid may be renumbered).
create table knowledge_chunks (
    seq integer primary key,
    id text not null unique,
    document_id text not null references knowledge_documents(id) on delete cascade,
    base_id text not null,
    ord bigint not null,
    text text not null,
    heading text not null,
    page bigint,
    tokens bigint not null,
    lexical text not null
);
create unique index knowledge_chunks_document_ord on knowledge_chunks(document_id, ord);
create index knowledge_chunks_base on knowledge_chunks(base_id);
-- The full-text index: FTS5 over `lexical`, its content read from the table
-- and kept in step by the triggers (which also fire on cascaded deletes).
create virtual table knowledge_fts using fts5(lexical, content='knowledge_chunks', content_rowid='seq');
create trigger knowledge_chunks_fts_insert after insert on knowledge_chunks begin
    insert into knowledge_fts(rowid, lexical) values (new.seq, new.lexical);
end;
create trigger knowledge_chunks_fts_delete after delete on knowledge_chunks begin
    insert into knowledge_fts(knowledge_fts, rowid, lexical) values ('delete', old.seq, old.lexical);
end;
