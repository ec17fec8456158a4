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
-- full-text index reads.
create table knowledge_chunks (
    id text primary key,
    document_id text not null references knowledge_documents(id) on delete cascade,
    base_id text not null,
    ord bigint not null,
    text text not null,
    heading text not null,
    page bigint,
    tokens bigint not null,
    lexical text not null,
    lexical_tsv tsvector generated always as (to_tsvector('simple', lexical)) stored
);
create unique index knowledge_chunks_document_ord on knowledge_chunks(document_id, ord);
create index knowledge_chunks_base on knowledge_chunks(base_id);
create index knowledge_fts on knowledge_chunks using gin(lexical_tsv);
