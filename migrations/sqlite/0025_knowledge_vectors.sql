-- Vectors of knowledge chunks (issue 25), when an embedding model is
-- configured: one per chunk and model, the unit vector as little-endian f32,
-- searched exactly in the process (docs/knowledge.md, "Vectors"). A base's
-- `revision` grows with every change to its vectors, so a process's copy of
-- them knows when it is stale.
alter table knowledge_bases add column revision bigint not null default 0;
create table knowledge_embeddings (
    chunk_id text primary key references knowledge_chunks(id) on delete cascade,
    base_id text not null,
    model text not null,
    dims integer not null,
    vector blob
);
create index knowledge_embeddings_base on knowledge_embeddings(base_id, model, dims);
