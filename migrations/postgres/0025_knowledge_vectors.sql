-- Vectors of knowledge chunks (issue 25), when an embedding model is
-- configured: one per chunk and model. `vector` holds the unit vector as
-- little-endian f32 for exact search in the process; where the `vector`
-- extension (pgvector) is installed, the store adds a column `embedding` of its
-- type with an HNSW index per size instead (`Store::migrate`), since the
-- extension cannot be assumed here. A base's `revision` grows with every change
-- to its vectors, so a process's copy of them knows when it is stale.
alter table knowledge_bases add column revision bigint not null default 0;
create table knowledge_embeddings (
    chunk_id text primary key references knowledge_chunks(id) on delete cascade,
    base_id text not null,
    model text not null,
    dims integer not null,
    vector bytea
);
create index knowledge_embeddings_base on knowledge_embeddings(base_id, model, dims);
